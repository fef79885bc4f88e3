"""Cache keys: the ir key (sha256 over the kernel IR and everything that shapes the build)
and the front-end key (sha256 over a ``@jit`` function's code and arguments; no tvm needed).

Both are stable across processes: they hash only canonical text and TVM's structural
hash (a function of the IR's content), never ``id()`` or ``hash()`` values
(docs/cache.md).
"""

from __future__ import annotations

import platform
import types
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tl_jit.canonical import Unkeyable, canonical_value, function_digest, sha_of
from tl_jit.versions import compiler_versions

if TYPE_CHECKING:
    from tl_backend_api import BackendContext

__all__ = [
    "KEY_FORMAT",
    "Unkeyable",
    "canonical_value",
    "frontend_key",
    "function_digest",
    "ir_key",
]

KEY_FORMAT = 5
"""Bumped whenever what a key covers changes, so old entries are never reused by mistake."""


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
    return sha_of(
        {
            "format": KEY_FORMAT,
            "kind": "frontend",
            "function": f"{func.__module__}.{func.__qualname__}",
            "digest": function_digest(func),
            "arguments": canonical_value(dict(sorted(arguments.items()))),
            "options": canonical_value(dict(sorted(options.items()))),
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
    """The ir key: the PrimFunc's TVM script text and structural hash, target, host,
    execution backend, out_idx, pass configs and every version (compiler packages,
    apache-tvm, toolchain).

    The script alone does not determine the kernel: it prints a one-element buffer as a
    scalar whatever its scope, so a ``(1,)`` local, fragment and shared accumulator
    printed alike and shared one cache entry (the second kernel ran the first's code).
    TVM's structural hash covers every field of the IR (scopes included) and is the
    same in every process for the same apache-tvm."""
    import tvm_ffi  # here, not at import: the front-end key path never loads it

    return sha_of(
        {
            "format": KEY_FORMAT,
            "kind": "ir",
            "ir": func.script(),
            "structure": f"{tvm_ffi.structural_hash(func):016x}",
            "target": str(context.target),
            "target_host": str(context.target_host),
            "backend": context.backend.name,
            "execution_backend": [context.execution_backend.name, context.adapter],
            "out_idx": None if out_idx is None else list(out_idx),
            "pass_configs": canonical_value(dict(sorted((pass_configs or {}).items()))),
            "versions": compiler_versions(),
            "toolchain": dict(sorted(toolchain_versions.items())),
        }
    )
