"""The ``@T.prim_func`` entry: runs TVM's TVMScript parser with kernel-language
diagnostics and per-kernel parse state (symbolic dims, the active `T.Kernel`, loop
annotations, layout hints).

Every failure while parsing becomes a `TileLangError` subclass located at the
innermost statement or expression the parser was evaluating (file, line, source
line); TVM's own error is chained as ``__cause__`` but never the only message.
"""

from __future__ import annotations

import ast
import numbers
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

import tvm
import tvm_ffi
from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.parser.core import utils as _parser_utils
from tvm.script.parser.core.diagnostics import Diagnostics, Source
from tvm.script.parser.core.parser import Parser

from tl_ir import ops as _ops
from tl_ir.bounds import check_constant_bounds
from tl_ir.errors import (
    KernelSyntaxError,
    KernelTypeError,
    TileLangError,
    at_users_line,
)
from tl_ir.global_access_guards import guard_global_accesses
from tl_ir.host_assumes import check_host_assumes
from tl_ir.launch import rebuild_loop
from tl_ir.loop_steps import unit_step_loops
from tl_ir.negative_indices import wrap_negative_indices
from tl_ir.nested_loops import check_parallel_loop_bodies
from tl_ir.parse_errors import classify_parse_error
from tl_ir.thread_binding_launch import launch_thread_binding_nests
from tl_ir.tile_bounds import check_tile_bounds

__all__ = ["ParseState", "current_state", "prim_func", "symbolic"]


#: Function attribute: ``T.annotate_layout`` shared-memory arrangements, buffer name ->
#: `tl_ir.layout.MemoryLayout` kind (``swizzled``, ``linear``, ``full_bank``...).
SHARED_LAYOUTS_ATTR = "tl.shared_layouts"
IMPORTED_SOURCE_ATTR = "tl.import_source"
"""PrimFunc attribute: the device source texts given to ``T.import_source``, in order
(a backend whose descriptor names an imported-source language places them before its
kernels; every other backend refuses the kernel)."""


@dataclass
class ParseState:
    """What one kernel build collects while its body is parsed.

    Attributes:
        symbolic: symbolic dims by name (the same name gives the same Var).
        kernel_depth: how many `T.Kernel` frames are open.
        kernel_count: how many `T.Kernel` frames were opened so far.
        thread_vars: the thread Vars of the open `T.Kernel` (x first).
        block_vars: the block Vars of the open `T.Kernel` (x first).
        thread_extents: the thread-block extents of the open `T.Kernel` (x first).
        block_extents: the grid extents of the open `T.Kernel` (x first).
        loop_annotations: annotations to set on loops whose frame could not take them
            (multi-dim ``T.Parallel``), keyed by loop Var.
        layout_map: ``T.annotate_layout`` hints, buffer name to layout.
        shared_layouts: ``T.annotate_layout`` shared-memory arrangements
            (`tl_ir.layout.MemoryLayout`), buffer name to kind.
        swizzle_panel: the panel size given to ``T.use_swizzle``, if any.
        imported_sources: the source texts given to ``T.import_source``, in order.
        persistent: ``T.Persistent`` loops to rewrite after parsing, keyed by the
            first coordinate Var.
        reducers: ``T.alloc_reducer`` buffers and their combine (``sum``...).
        legacy_reducers: the reducers of TileLang's legacy form (``replication=``).
        reducer_phases: where each reducer's lifecycle stands in source order
            (``"allocated"``, ``"open"`` after ``T.reducer_init``, ``"finalized"``).
        rng_states: each ``T.rng_init``'s per-thread generator state (the last is the
            one ``T.rng_rand`` draws from).
        safe_values: ``T.annotate_safe_value`` pairs (buffer, value read outside it)
            in force at this point of the kernel (tile copies read them).
        safe_value_record: every ``T.annotate_safe_value`` pair of the kernel, the
            last per buffer (guarded element loads read them,
            `tl_ir.global_access_guards`).
        dynamic_parallel: ``T.Parallel`` loop Vars with a run-time extent, and the extent.
        kernel_tuple_target: the ``with`` being parsed unpacks ``T.Kernel``'s block
            indices into a one-element tuple (``as (bx,)``).
        device_asserts: the kernel has a ``T.device_assert`` (located after parsing).
        sblock_depth: how many ``T.sblock`` scopes are open.
    """

    symbolic: dict[str, Any] = field(default_factory=dict)
    kernel_depth: int = 0
    kernel_count: int = 0
    thread_vars: tuple[Any, ...] = ()
    block_vars: tuple[Any, ...] = ()
    thread_extents: tuple[Any, ...] = ()
    block_extents: tuple[Any, ...] = ()
    loop_annotations: dict[Any, dict[str, Any]] = field(default_factory=dict)
    layout_map: dict[str, Any] = field(default_factory=dict)
    shared_layouts: dict[str, str] = field(default_factory=dict)
    swizzle_panel: int | None = None
    imported_sources: list[str] = field(default_factory=list)
    persistent: dict[Any, Any] = field(default_factory=dict)
    reducers: dict[Any, str] = field(default_factory=dict)
    legacy_reducers: list[Any] = field(default_factory=list)
    reducer_phases: dict[Any, str] = field(default_factory=dict)
    rng_states: list[Any] = field(default_factory=list)
    safe_values: list[tuple[Any, Any]] = field(default_factory=list)
    safe_value_record: list[tuple[Any, Any]] = field(default_factory=list)
    dynamic_parallel: dict[Any, Any] = field(default_factory=dict)
    kernel_tuple_target: bool = False
    device_asserts: bool = False
    sblock_depth: int = 0


class _Local(threading.local):
    def __init__(self) -> None:
        self.states: list[ParseState] = []
        # Symbolic dims created before the decorator runs (in the builder function)
        # belong to the next kernel parsed on this thread.
        self.pending_symbolic: dict[str, Any] = {}


_LOCAL = _Local()


def current_state() -> ParseState | None:
    """The state of the kernel being parsed on this thread; None outside ``@T.prim_func``."""
    return _LOCAL.states[-1] if _LOCAL.states else None


def symbolic(name: str, dtype: str = "int32", *, spelled: str = "T.symbolic") -> Any:
    """A named symbolic dim (an ``int32`` ``tirx.Var``); the same name within one kernel
    build gives the same Var. Several names separated by commas or spaces
    (``T.dynamic("M, N")``, as TileLang) give a tuple of Vars. ``spelled``: the name the
    kernel called (for messages).

    Raises:
        KernelTypeError: ``name`` is not a string of identifiers, or a name was already
            used with another dtype.
    """
    if isinstance(name, str) and not name.isidentifier():
        parts = re.split(r"\s*,\s*|\s+", name.strip())
        if len(parts) > 1 and all(part.isidentifier() for part in parts):
            return tuple(symbolic(part, dtype, spelled=spelled) for part in parts)
    if not isinstance(name, str) or not name.isidentifier():
        raise KernelTypeError(
            f"{spelled}(name): expected a Python identifier string, or several separated by "
            f"commas or spaces, got {name!r}"
        )
    state = current_state()
    table = state.symbolic if state is not None else _LOCAL.pending_symbolic
    var = table.get(name)
    if var is None:
        var = tirx.Var(name, dtype)
        table[name] = var
    elif str(var.ty.dtype) != dtype:
        raise KernelTypeError(
            f"{spelled}({name!r}): already declared as {var.ty.dtype}, now asked as {dtype}"
        )
    return var


class _KernelDiagnostics(Diagnostics):  # type: ignore[misc]
    """Turns the parser's error reports into located `TileLangError`s."""

    def error(self, node: Any, message: str) -> NoReturn:
        lineno = self.source.location(node)[0]
        filename = str(self.source.source_name)
        source_line = _source_line(self.source, lineno)
        cause = sys.exc_info()[1]
        if isinstance(cause, TileLangError):
            cause.locate(filename, lineno, source_line)
            raise cause
        err = classify_parse_error(cause, message)
        err.locate(filename, lineno, source_line)
        if cause is not None:
            raise err from cause
        raise err


def _source_line(source: Any, lineno: int) -> str | None:
    lines = str(source.full_source).splitlines()
    if 1 <= lineno <= len(lines):
        return lines[lineno - 1]
    return None


def _capture_vars(func: Callable[..., Any], caller_locals: dict[str, Any]) -> dict[str, Any]:
    """The names the parser resolves the kernel's source against, as Python would.

    The parser re-evaluates the parameter annotations from the source, and a name used
    only in an annotation (a builder argument in ``T.Tensor((N,), ...)``) is not in the
    kernel function's closure: Python evaluates annotations in the scope that defines
    the function, so the defining scope's locals (the builder's arguments) shadow the
    module's globals. The closure comes last: it holds what the body itself reads.

    Exact integers of other types (``np.int64(256)``, a builder argument taken from an
    array's shape) are read as Python ints: TVM's operators take only those.
    """
    captured: dict[str, Any] = dict(getattr(func, "__globals__", {}))
    captured.update(caller_locals)
    captured.update(_parser_utils.get_func_nonlocals(func))
    for name, value in captured.items():
        if isinstance(value, numbers.Integral) and not isinstance(value, int):
            captured[name] = _ops.exact_int(value)
    return captured


def _def_location(func: Callable[..., Any]) -> tuple[str, int]:
    code = getattr(func, "__code__", None)
    if code is None:
        return "<unknown>", 0
    return str(code.co_filename), int(code.co_firstlineno)


_TRY_NODES: tuple[type[ast.AST], ...] = (ast.Try, getattr(ast, "TryStar", ast.Try))


def _reject_try_statements(source: Any, filename: str) -> None:
    """``try`` has no meaning in a kernel; TVM's parser would report it at the enclosing
    statement, so it is refused here at its own line."""
    try:
        tree = ast.parse(str(source.source))
    except SyntaxError:
        return  # the parser reports it
    for node in ast.walk(tree):
        if isinstance(node, _TRY_NODES):
            lineno = int(source.start_line) + int(getattr(node, "lineno", 1)) - 1
            raise KernelSyntaxError(
                "try/except is not supported in a kernel (a kernel cannot catch errors at "
                "run time); move the try outside the @T.prim_func",
                filename=filename,
                lineno=lineno,
                source_line=_source_line(source, lineno),
            )


def _parse(func: Callable[..., Any], extra_vars: dict[str, Any], check_well_formed: bool) -> Any:
    filename, first_line = _def_location(func)
    try:
        source = Source(func)
    except (OSError, TypeError) as err:
        raise KernelSyntaxError(
            f"cannot read the source of kernel {func.__name__!r} ({err}); a @T.prim_func "
            "must be defined in a Python file, not through exec() or the REPL",
            filename=filename,
            lineno=first_line,
        ) from err
    _reject_try_statements(source, filename)
    # The parser evaluates each parameter annotation from the source and, when that
    # fails, falls back to the function's own annotation. Under ``from __future__
    # import annotations`` those are strings, which would hide the evaluation's error
    # (an unsupported dtype) behind "Unexpected type for TIR Arg: ffi.String".
    evaluated = {k: v for k, v in func.__annotations__.items() if not isinstance(v, str)}
    parser = Parser(source, {func.__name__: evaluated})
    parser.diag = _KernelDiagnostics(source)
    try:
        with IRBuilder() as builder:
            parser.parse(extra_vars=extra_vars)
        result = builder.get()
    except TileLangError:
        raise
    except Exception as err:
        # Failures outside any statement (e.g. an unfinished IR frame) have no
        # better location than the kernel's definition.
        raise KernelSyntaxError(
            f"kernel {func.__name__!r} could not be built: {str(err).strip()}",
            filename=filename,
            lineno=first_line,
            source_line=_source_line(source, first_line),
        ) from err
    if check_well_formed:
        try:
            tvm.tirx.analysis.verify_tirx_well_formed(result)
        except Exception as err:
            raise KernelSyntaxError(
                f"kernel {func.__name__!r} is not well-formed TIR: {str(err).strip()}",
                filename=filename,
                lineno=first_line,
                source_line=_source_line(source, first_line),
            ) from err
    return result


def _annotate_loops(body: Any, annotations: dict[Any, dict[str, Any]]) -> Any:
    def rewrite(loop: Any) -> Any:
        extra = annotations.get(loop.loop_var)
        if extra is None:
            return loop
        merged = dict(loop.annotations or {})
        merged.update(extra)
        return rebuild_loop(loop, annotations=merged)

    return tvm_ffi.structural_map(body, (tirx.For, rewrite), order="post")


def _check_symbolic_names(func: Any, filename: str, lineno: int) -> None:
    """Two params whose shapes use different Vars of the same name cannot agree at call time."""
    seen: dict[str, Any] = {}
    for param in func.params:
        ty = getattr(param, "ty", None)
        if not isinstance(ty, tirx.BufferType):
            continue
        for dim in ty.shape:
            if not isinstance(dim, tvm.ir.Var):
                continue
            name = str(dim.name)
            other = seen.setdefault(name, dim)
            if not other.same_as(dim):
                raise KernelTypeError(
                    f"symbolic dim {name!r} names two different variables in the kernel's "
                    "parameters; create it once (M = T.symbolic('M')) or through "
                    "T.symbolic in the same kernel build so both shapes share it",
                    filename=filename,
                    lineno=lineno,
                )


def _finalize(func: Any, state: ParseState, py_func: Callable[..., Any]) -> Any:
    filename, lineno = _def_location(py_func)
    _check_symbolic_names(func, filename, lineno)
    try:
        check_constant_bounds(func)
    except TileLangError as err:
        err.locate(filename, lineno, None)
        raise
    try:
        check_parallel_loop_bodies(func.body)
        body = unit_step_loops(func.body)
        check_tile_bounds(body)
    except TileLangError as err:
        err.locate(filename, lineno, None)
        raise
    body = guard_global_accesses(wrap_negative_indices(body), state.safe_value_record)
    func = func.with_body(launch_thread_binding_nests(body))
    if state.device_asserts:
        from tl_ir.device_asserts import locate_device_asserts

        func = func.with_body(locate_device_asserts(func.body))
    if state.dynamic_parallel:
        from tl_ir.language._dynamic_parallel import bound_dynamic_parallel_loops

        try:
            func = func.with_body(bound_dynamic_parallel_loops(func.body, state.dynamic_parallel))
        except TileLangError as err:
            err.locate(filename, lineno, None)
            raise
    from tl_ir.bool_compare import normalize_bool_comparisons
    from tl_ir.region_extents import fold_region_extents
    from tl_ir.run_time_tiles import expand_run_time_tiles

    func = func.with_body(
        expand_run_time_tiles(fold_region_extents(normalize_bool_comparisons(func.body)))
    )
    if state.loop_annotations:
        func = func.with_body(_annotate_loops(func.body, state.loop_annotations))
    if state.reducers:
        from tl_ir.language._reducers import rewrite_reducer_stores

        try:
            func = func.with_body(
                rewrite_reducer_stores(func.body, state.reducers, state.legacy_reducers)
            )
        except TileLangError as err:
            err.locate(filename, lineno, None)
            raise
    if state.rng_states:
        from tl_ir.language._random import serialize_rng_loops

        try:
            func = func.with_body(serialize_rng_loops(func.body, state.rng_states))
        except TileLangError as err:
            err.locate(filename, lineno, None)
            raise
    if state.persistent:
        from tl_ir.language._persistent import rewrite_persistent_loops

        func = func.with_body(rewrite_persistent_loops(func.body, state.persistent))
    attrs: dict[str, Any] = {}
    if state.layout_map:
        attrs["tl.layout_map"] = dict(state.layout_map)
    if state.shared_layouts:
        attrs[SHARED_LAYOUTS_ATTR] = dict(state.shared_layouts)
    if state.swizzle_panel is not None:
        attrs["tl.swizzle_panel"] = state.swizzle_panel
    if state.imported_sources:
        attrs[IMPORTED_SOURCE_ATTR] = list(state.imported_sources)
    if attrs:
        func = func.with_attrs(attrs)
    return check_host_assumes(func)


def prim_func(func: Callable[..., Any] | None = None, *, check_well_formed: bool = True) -> Any:
    """Parse a Python function written in the kernel language into a ``tirx.PrimFunc``.

    Use as ``@T.prim_func`` (or ``@T.prim_func(check_well_formed=False)``) on a
    function defined in a source file; names are resolved against the function's
    globals and closure, so compile-time constants of the enclosing builder function
    are visible.

    Args:
        func: the function to parse.
        check_well_formed: run TVM's well-formedness check on the result.

    Returns:
        the ``PrimFunc`` (or a decorator when called with keyword arguments only).

    Raises:
        TileLangError: a subclass locating the first error in the kernel's source.
    """
    if func is None:

        def decorator(inner: Callable[..., Any]) -> Any:
            return _build_at_user_line(inner, check_well_formed, dict(sys._getframe(1).f_locals))

        # The parser re-evaluates the decorator and asks it for its dialect.
        decorator.dispatch_token = "tirx"  # type: ignore[attr-defined]
        return decorator
    return _build_at_user_line(func, check_well_formed, dict(sys._getframe(1).f_locals))


def _build_at_user_line(func: Any, check_well_formed: bool, caller_locals: dict[str, Any]) -> Any:
    """`_build`, with a kernel error's traceback cut at the user's ``@T.prim_func`` line:
    the message already names the kernel's file and line, and the parser's frames below
    it help no one (`tl_ir.errors.at_users_line`)."""
    try:
        return _build(func, check_well_formed, caller_locals)
    except TileLangError as exc:
        raise at_users_line(exc) from exc.__cause__


def _build(func: Any, check_well_formed: bool, caller_locals: dict[str, Any]) -> Any:
    if not callable(func) or not hasattr(func, "__code__"):
        raise KernelTypeError(
            f"@T.prim_func: expected a Python function, got {type(func).__name__}"
        )
    from tl_ir import lazy_prim_func  # imports the eager style, which imports this module

    if lazy_prim_func.is_lazy_style(func):
        return lazy_prim_func.build_lazy(func, check_well_formed)
    lazy_prim_func.refuse_pointer_parameters(func)
    extra_vars = _capture_vars(func, caller_locals)
    state = ParseState(symbolic=_LOCAL.pending_symbolic)
    _LOCAL.pending_symbolic = {}
    _LOCAL.states.append(state)
    try:
        result = _parse(func, extra_vars, check_well_formed)
    finally:
        _LOCAL.states.pop()
    return _finalize(result, state, func)


# The parser asks the decorator which dialect parses the function body.
prim_func.dispatch_token = "tirx"  # type: ignore[attr-defined]
