"""Cache keys: the ir key (sha256 over the kernel IR and everything that shapes the build)
and the front-end key (sha256 over a ``@jit`` function's code and arguments; no tvm needed).

Both are stable across processes: they hash only canonical text, never ``id()``
or ``hash()`` values (docs/cache.md).
"""

from __future__ import annotations

import hashlib
import json
import platform
import types
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tl_jit.versions import compiler_versions

if TYPE_CHECKING:
    from tl_backend_api import BackendContext

KEY_FORMAT = 1
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


def function_digest(func: types.FunctionType, *, _seen: frozenset[int] = frozenset()) -> str:
    """sha256 over a function's code (nested code included), defaults, closure values and
    the values of the module globals it names (constants, and functions by their code).

    Raises:
        Unkeyable: a closure value or named global has no stable rendering.
    """
    seen = _seen | {id(func)}
    parts: dict[str, Any] = {"code": _code_digest(func.__code__)}
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
    for name in sorted(_global_names(func.__code__)):
        if name in func.__globals__:
            globals_used.append([name, _global_value(func.__globals__[name], seen)])
    parts["globals"] = globals_used
    return _sha(parts)


def _global_value(value: object, seen: frozenset[int]) -> Any:
    # A global or closure value that is not a plain constant (a jit wrapper, a
    # class instance...) contributes its type name only: the kernel's code names it,
    # and its own code is keyed where it is compiled.
    try:
        return canonical_value(value, _seen=seen)
    except Unkeyable:
        return {"opaque": f"{type(value).__module__}.{type(value).__qualname__}"}


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
