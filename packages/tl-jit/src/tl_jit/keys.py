"""Cache keys: the ir key (sha256 over the kernel IR and everything that shapes the build)
and the front-end key (sha256 over a ``@jit`` function's code and arguments; no tvm needed).

Both are stable across processes: they hash only canonical text, never ``id()``
or ``hash()`` values (docs/cache.md).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import platform
import sys
import types
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tl_jit.source_text import dedented_source
from tl_jit.versions import COMPILER_PACKAGES, compiler_versions

if TYPE_CHECKING:
    from tl_backend_api import BackendContext

KEY_FORMAT = 2
"""Bumped whenever what a key covers changes, so old entries are never reused by mistake."""


class Unkeyable(Exception):
    """A value has no stable canonical rendering (e.g. an object whose repr holds an address)."""


def _sha(parts: Mapping[str, Any]) -> str:
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_value(value: object, *, _seen: frozenset[int] = frozenset()) -> Any:
    """A JSON-compatible, process-independent rendering of a compile-time value.

    Accepts None, bool, int, float, str, bytes, tuples/lists/dicts/sets of those,
    functions (by their code) and modules (by name); objects whose type defines
    ``__repr__`` without a memory address are rendered as ``type: repr``.

    Raises:
        Unkeyable: no stable rendering exists.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return {"float": value.hex()}
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    if isinstance(value, tuple | list):
        return [type(value).__name__, [canonical_value(v, _seen=_seen) for v in value]]
    if isinstance(value, set | frozenset):
        items = sorted(json.dumps(canonical_value(v, _seen=_seen), sort_keys=True) for v in value)
        return ["set", items]
    if isinstance(value, dict):
        return [
            "dict",
            sorted(
                (json.dumps(canonical_value(k, _seen=_seen)), canonical_value(v, _seen=_seen))
                for k, v in value.items()
            ),
        ]
    if isinstance(value, types.ModuleType):
        return {"module": value.__name__}
    if isinstance(value, types.FunctionType):
        if id(value) in _seen:
            return {"function": value.__qualname__}
        return {"function": function_digest(value, _seen=_seen | {id(value)})}
    if hasattr(value, "__array_interface__") and hasattr(value, "tobytes"):
        # numpy arrays: their repr elides the middle of large arrays, so hash the bytes.
        array: Any = value
        digest = hashlib.sha256(array.tobytes(order="C")).hexdigest()
        return {"array": [str(array.dtype), list(array.shape), digest]}
    if isinstance(value, types.BuiltinFunctionType | type):
        return {"object": f"{getattr(value, '__module__', '')}.{value.__qualname__}"}
    text = repr(value)
    if " at 0x" in text or text.startswith("<"):
        raise Unkeyable(f"{type(value).__name__} value {text[:60]} has no stable rendering")
    return {"object": f"{type(value).__module__}.{type(value).__qualname__}: {text}"}


def _code_digest(code: types.CodeType) -> list[Any]:
    consts = [_code_digest(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts]
    return [
        code.co_qualname if hasattr(code, "co_qualname") else code.co_name,
        code.co_code.hex(),
        consts,
        list(code.co_names),
        list(code.co_varnames),
        list(code.co_freevars),
        list(code.co_cellvars),
    ]


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


@functools.lru_cache(maxsize=1024)
def _source_reads(code: types.CodeType) -> tuple[str, frozenset[str], frozenset[tuple[str, str]]]:
    """The source text of ``code``'s function and the names (and ``name.attr`` pairs) it reads.

    The kernel parser reads a ``@T.prim_func``'s source, not its bytecode: a name that
    appears only in a parameter annotation (a local of the builder in the bytecode, or a
    string under PEP 563) is still resolved by the parser, so the key covers every name
    the source mentions. Empty when the source is unavailable (``exec``, the REPL).
    """
    source = dedented_source(code)
    if source is None:
        return "", frozenset(), frozenset()
    try:
        tree = ast.parse(source)
    except (SyntaxError, IndentationError):
        return "", frozenset(), frozenset()
    names: set[str] = set()
    attributes: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            attributes.add((node.value.id, node.attr))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # A quoted annotation ("T.Tensor((N,), dtype)") is parsed as an expression.
            try:
                inner = ast.parse(node.value, mode="eval")
            except SyntaxError:
                continue
            names.update(n.id for n in ast.walk(inner) if isinstance(n, ast.Name))
    return source, frozenset(names), frozenset(attributes)


_VERSIONED_TOP_LEVEL = frozenset(COMPILER_PACKAGES) | {"tvm", "tvm_ffi"}


def _is_compiler_module(module: types.ModuleType) -> bool:
    # The compiler packages and tvm are covered by compiler_versions(): their sources
    # are fingerprinted (or versioned) as a whole, so their attributes need no keying.
    return _is_compiler_module_name(module.__name__)


def _is_compiler_module_name(name: str) -> bool:
    top = name.partition(".")[0]
    return top in _VERSIONED_TOP_LEVEL or top.startswith("tl_codegen_")


def _is_library_module(module: types.ModuleType) -> bool:
    # Installed third-party or standard-library modules (numpy, math): what their
    # attributes are is fixed by their installed version, not by the user's code.
    path = getattr(module, "__file__", None) or ""
    return "site-packages" in path or "dist-packages" in path or path.startswith(sys.base_prefix)


def function_digest(func: types.FunctionType, *, _seen: frozenset[int] = frozenset()) -> str:
    """sha256 over what building a kernel from ``func`` reads.

    Covered: its code (nested code included), its source text, defaults, closure values,
    the values of the module globals named in its code or source (constants, and
    functions by their own digest), and the values of attributes it reads from the
    user's own modules (``config.BLOCK``). Attributes of the compiler packages and of
    installed libraries are covered by the version part of the key.

    Raises:
        Unkeyable: a closure value or a global it reads has no stable rendering (the
            caller then keys on the IR only, which is always correct).
    """
    seen = _seen | {id(func)}
    source, source_names, source_attributes = _source_reads(func.__code__)
    parts: dict[str, Any] = {"code": _code_digest(func.__code__), "source": source}
    parts["defaults"] = canonical_value(func.__defaults__, _seen=seen)
    parts["kwdefaults"] = canonical_value(func.__kwdefaults__, _seen=seen)
    closure = []
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or (), strict=False):
        try:
            contents = cell.cell_contents
        except ValueError:  # an empty cell (name bound later)
            contents = None
        closure.append([name, _global_value(contents, seen)])
    parts["closure"] = closure
    globals_used = []
    module_globals = func.__globals__
    for name in sorted(_global_names(func.__code__) | source_names):
        if name in module_globals:
            globals_used.append([name, _global_value(module_globals[name], seen)])
    parts["globals"] = globals_used
    attributes_used = []
    for owner_name, attribute in sorted(source_attributes):
        owner = module_globals.get(owner_name)
        if not isinstance(owner, types.ModuleType):
            continue
        if _is_compiler_module(owner) or _is_library_module(owner):
            continue
        if hasattr(owner, attribute):
            value = _global_value(getattr(owner, attribute), seen)
            attributes_used.append([owner_name, attribute, value])
    parts["attributes"] = attributes_used
    return _sha(parts)


def _global_value(value: object, seen: frozenset[int]) -> Any:
    """A global's or closure value's rendering for the front-end key.

    A wrapper (``functools.wraps``: a ``@jit`` function, a decorated helper) is keyed by
    the function it wraps; objects from the compiler packages by their type (their code
    is versioned); anything else without a stable rendering makes the whole call
    unkeyable, so the kernel is looked up by its IR key rather than risk a stale one.
    """
    if isinstance(value, types.FunctionType):
        owner = sys.modules.get(value.__module__)
        if _is_compiler_module_name(value.__module__) or (
            owner is not None and _is_library_module(owner)
        ):
            return {"function": f"{value.__module__}.{value.__qualname__}"}
    try:
        return canonical_value(value, _seen=seen)
    except Unkeyable:
        wrapped = getattr(value, "__wrapped__", None)
        if isinstance(wrapped, types.FunctionType):
            if id(wrapped) in seen:
                return {"wraps": wrapped.__qualname__}
            return {"wraps": function_digest(wrapped, _seen=seen | {id(wrapped)})}
        if _is_compiler_module_name(type(value).__module__):
            return {"opaque": f"{type(value).__module__}.{type(value).__qualname__}"}
        raise


def frontend_key(
    func: types.FunctionType,
    arguments: Mapping[str, object],
    options: Mapping[str, object],
) -> str:
    """The front-end key of a ``@jit`` call: code + arguments + options + versions + machine.

    Raises:
        Unkeyable: an argument or option has no stable rendering (the caller then
            keys on the IR only).
    """
    return _sha(
        {
            "format": KEY_FORMAT,
            "kind": "frontend",
            "function": f"{func.__module__}.{func.__qualname__}",
            "digest": function_digest(func),
            "arguments": canonical_value(dict(arguments)),
            "options": canonical_value(dict(options)),
            "versions": compiler_versions(),
            "machine": [platform.system(), platform.machine(), platform.node()],
        }
    )


def ir_key(
    func: Any,
    context: BackendContext,
    *,
    out_idx: Sequence[int] | None,
    pass_configs: Mapping[str, object] | None,
    toolchain_versions: Mapping[str, str],
) -> str:
    """The ir key: the PrimFunc's TVM script text, target, host, execution backend,
    out_idx, pass configs and every version (compiler packages, apache-tvm, toolchain)."""
    return _sha(
        {
            "format": KEY_FORMAT,
            "kind": "ir",
            "ir": func.script(),
            "target": str(context.target),
            "target_host": str(context.target_host),
            "backend": context.backend.name,
            "execution_backend": [context.execution_backend.name, context.adapter],
            "out_idx": None if out_idx is None else list(out_idx),
            "pass_configs": canonical_value(dict(pass_configs or {})),
            "versions": compiler_versions(),
            "toolchain": dict(sorted(toolchain_versions.items())),
        }
    )
