"""The kernel-language names of the eager style: ``T.const``, ``T.empty``, ``T.ptr``,
``T.make_tensor`` and the helpers the rewritten body calls (``return``, static
assignments, ``assert``)."""

from __future__ import annotations

import builtins as _builtins
import re
from typing import Any, cast

import tvm
import tvm_ffi
from tvm import tirx
from tvm.script import tirx as _tvm_T
from tvm.script.ir_builder import ir as _I
from tvm.script.ir_builder import tirx as _IB

from tl_ir import ops as _ops
from tl_ir.dtypes import normalize_dtype
from tl_ir.eager._context import current_build, describe
from tl_ir.errors import KernelSyntaxError, KernelTypeError, ScopeError, UnsupportedError
from tl_ir.frontend import current_state
from tl_ir.python_values import is_plain_python

__all__ = [
    "const",
    "eager_assert",
    "eager_return",
    "empty",
    "make_tensor",
    "ptr",
    "split_const_names",
    "static_value",
]

_NAME_SPLIT = re.compile(r"[\s,]+")
#: TVM's array container (``buffer.shape``).
_ARRAY_TYPE: type = tvm_ffi.Array


def split_const_names(names: str) -> list[str]:
    """The symbol names of ``T.const("M N K")`` / ``T.const("M, N")``.

    Raises:
        KernelTypeError: ``names`` is not a string of identifiers.
    """
    if not isinstance(names, str):
        raise KernelTypeError(f"T.const(names): expected a string such as 'M N K', got {names!r}")
    parts = [part for part in _NAME_SPLIT.split(names.strip()) if part]
    if not parts or not all(part.isidentifier() for part in parts):
        raise KernelTypeError(
            f"T.const(names): expected identifiers separated by spaces or commas, got {names!r}"
        )
    return parts


def const(names: str, dtype: str = "int32") -> Any:
    """``M, N = T.const("M N")``: shape symbols of an eager kernel, bound per call from
    the axis of the tensor where each first appears directly in a declared shape (or
    from a keyword argument of the same name); each distinct value compiles a kernel.

    Returns the bound value (a tuple for several names): a Python int for ``int32``,
    an integer constant of ``dtype`` otherwise.

    Raises:
        ScopeError: outside the body of an eager ``@tl_jit.jit`` function.
    """
    parts = split_const_names(names)
    build = current_build()
    if build is None:
        raise ScopeError(
            f"T.const({names!r}) is only allowed in the body of an eager @tl_jit.jit "
            "function (one whose tensors are declared as A: T.Tensor[[M, K], dtype])"
        )
    dtype_name = normalize_dtype(dtype)
    values: list[Any] = []
    for part in parts:
        if part not in build.consts:
            raise KernelSyntaxError(f"T.const {part!r} of {build.function} has no bound value")
        value = build.consts[part]
        plain = dtype_name == "int32" or not isinstance(value, int)
        values.append(value if plain else tirx.const(value, dtype_name))
    return values[0] if len(values) == 1 else tuple(values)


def _split_empty_arguments(args: tuple[Any, ...], dtype: Any) -> tuple[tuple[Any, ...], Any]:
    if args and isinstance(args[0], list | tuple):
        if len(args) > 2:
            raise KernelTypeError(
                f"T.empty(shape, dtype): expected a shape and a dtype, got {len(args)} arguments"
            )
        shape = tuple(args[0])
        if len(args) == 2:
            if dtype is not None:
                raise KernelTypeError("T.empty: dtype given twice")
            dtype = args[1]
        return shape, dtype
    dims = list(args)
    if dims and isinstance(dims[-1], str) and dtype is None:
        dtype = dims.pop()
    return tuple(dims), dtype


def empty(*args: Any, dtype: Any = None, _tl_name: str | None = None) -> Any:
    """``C = T.empty((M, N), dtype)`` (or ``T.empty(M, N, dtype=...)``): an output of an
    eager kernel. The call allocates it (like the inputs: torch in, torch out) and
    returns it; the body must ``return`` every ``T.empty`` tensor.

    Raises:
        ScopeError: outside an eager kernel body, or not at its top level.
        KernelTypeError: a bad shape or dtype.
    """
    build = current_build()
    if build is None or current_state() is None:
        raise ScopeError(
            "T.empty is only allowed in the body of an eager @tl_jit.jit function "
            "(or a T.macro it calls)"
        )
    from tl_ir.language._params import Tensor

    shape, dtype = _split_empty_arguments(args, dtype)
    buffer = Tensor(shape, "float32" if dtype is None else dtype)
    name = _tl_name or f"out{len(build.outputs)}"
    try:
        param = _IB.arg(name, buffer)
    except Exception as err:  # TVM refuses args below the function's top level
        raise ScopeError(
            "T.empty must be called at the top level of the kernel body (before "
            "'with T.Kernel(...)'), not inside a kernel, loop or branch"
        ) from err
    build.outputs.append((name, param))
    return param


class _Pointer:
    """``T.ptr``: the annotation of a raw-pointer parameter of an eager kernel, made a
    tensor by ``A = T.make_tensor(A, shape, dtype)`` in the body; ``T.ptr()`` is a
    placeholder argument for ahead-of-time compiles."""

    def __call__(self, *args: Any, **kwargs: Any) -> _Pointer:
        return self

    def __repr__(self) -> str:
        return "T.ptr"


ptr = _Pointer()


def make_tensor(pointer: Any, shape: Any, dtype: Any = "float32", **kwargs: Any) -> Any:
    """``A = T.make_tensor(A, shape, dtype)``: the tensor behind the ``T.ptr``
    parameter ``A`` (at the top of an eager body, where it declares ``A``); on a
    buffer inside a kernel, a view of its memory (``T.view``).

    Raises:
        UnsupportedError: on a raw pointer anywhere but the top of an eager body.
    """
    if _ops.is_buffer(pointer):
        from tl_ir.language._views import make_view

        return make_view(shape, dtype, pointer, "T.make_tensor(ptr, shape, dtype)")
    raise UnsupportedError(
        "T.make_tensor(ptr, shape, dtype) is supported as 'A = T.make_tensor(A, shape, "
        "dtype)' on a T.ptr parameter A at the top of an eager @tl_jit.jit body, or on a "
        f"buffer; got {describe(pointer)}"
    )


def _static_element(value: Any) -> tuple[bool, Any]:
    if isinstance(value, _builtins.bool | int | float) or is_plain_python(value):
        return True, value
    if isinstance(value, tirx.IntImm):
        return True, int(value.value) if str(value.ty.dtype) == "int32" else value
    if isinstance(value, tirx.FloatImm):
        return True, value
    if isinstance(value, tvm.ir.Var) and not _ops.is_buffer(value) and tvm.ir.is_prim_expr(value):
        return True, value
    if tvm.ir.is_prim_expr(value) and not _reads_memory(value):
        return True, value
    return False, value


def _reads_memory(expr: Any) -> bool:
    found: list[Any] = []
    tvm_ffi.structural_walk(expr, ((tvm.ir.TensorLoad, tvm.ir.Call), found.append), order="pre")
    return bool(found)


def _names_a_variable(name: str) -> bool:
    """Whether ``name`` is bound, in the kernel being parsed, to a kernel variable
    (``T.alloc_var``, a scalar): assigning to it stores into it."""
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        parser = frame.f_globals.get("__current_script_parser__")
        if parser is not None:
            bound = parser.var_table.get().get(name)
            return isinstance(bound, _tvm_T.scalar_wrapper | tvm.ir.TensorLoad) or bool(
                tirx.is_buffer_var(bound)
            )
        frame = frame.f_back  # type: ignore[assignment]
    return False


def static_value(value: Any, unpack: bool, name: str | None = None) -> Any:
    """An assignment's value as the eager style binds it: Python numbers, integer
    constants, shape expressions (``M, N = A.shape``), dtypes, strings, ``None`` and
    other plain Python objects (a dict, a function) stay compile-time values instead
    of becoming kernel variables (unless ``name`` already is a kernel variable: then
    the parser stores into it); anything else (a tensor element ``A[i]``, a buffer,
    a region) is left to the parser."""
    if name is not None and _names_a_variable(name):
        return value
    if not unpack and is_plain_python(value):
        return _I.meta_var(value)
    if isinstance(value, (list | tuple, _ARRAY_TYPE)):
        items = [_static_element(item) for item in cast(Any, value)]
        if not all(ok for ok, _ in items):
            return value
        if unpack:
            return tuple(_I.meta_var(item) for _, item in items)
        return _I.meta_var(tuple(item for _, item in items))
    ok, item = _static_element(value)
    if ok and not (isinstance(value, tvm.ir.Var) and unpack):
        return _I.meta_var(item)
    return value


def eager_assert(condition: Any, message: Any = None) -> Any:
    """``assert cond, msg`` in an eager body or macro: checked now when ``cond`` is known
    at build time (a failure is a `KernelTypeError` with ``msg``), else a run-time
    assertion of the kernel."""
    if isinstance(condition, tirx.IntImm):
        condition = _builtins.bool(condition.value)
    if isinstance(condition, _builtins.bool | int):
        if not condition:
            raise KernelTypeError(f"assertion failed while building the kernel: {message}")
        return None
    text = "assertion failed" if message is None else str(message)
    return _tvm_T.Assert(condition, [text], error_kind="RuntimeError")


def eager_return(value: Any) -> None:
    """``return C`` / ``return C, D`` at the end of an eager body: records the outputs
    in return order.

    Raises:
        KernelTypeError: a returned value is not a tensor from ``T.empty``.
    """
    build = current_build()
    if build is None:
        raise ScopeError("return of outputs is only meaningful in an eager kernel body")
    values = list(value) if isinstance(value, list | tuple) else [value]
    if value is None:
        values = []
    outputs = [buffer for _, buffer in build.outputs]
    returned = []
    for item in values:
        if not any(item is out or (_ops.is_buffer(item) and item.same_as(out)) for out in outputs):
            raise KernelTypeError(
                f"{build.function}: an eager kernel returns only tensors created with "
                f"T.empty, got {describe(item)}"
            )
        returned.append(item)
    build.returned = returned
