"""Checked mode: kernels whose out-of-bounds accesses raise `IndexError` instead of
corrupting memory (``tl_jit.jit(..., debug=True)``, ``tl_jit.compile(..., debug=True)``
or ``TL_DEBUG=1``).

What a backend does in checked mode is its own (the CPU backend guards every access;
see its ``cpu-check-bounds`` pass). The switch reaches it as TVM's registered pass
config `CHECK_CONFIG`, so it is part of the kernel's key like every pass config; a
backend declares that it honours it with `Capabilities.checked_mode`, and asking for checked
mode on a backend without it raises `NotImplementedError`. The artifact records it
(`MARKER` in the manifest's versions, with the kernel's source file), so a kernel loaded
from the cache or an export is checked after every call too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from tl_runtime.fork_safety import ForkSafeLock

DEBUG_ENV = "TL_DEBUG"
CHECK_CONFIG = "tirx.instrument_bound_checkers"
"""TVM's pass-config key for bounds checks: the channel checked mode reaches a backend by."""
MARKER = "tl_jit.checked"
"""The manifest ``versions`` entry of a checked artifact; its value is the kernel's file."""

_FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})
# One checked call at a time: the runtime keeps one out-of-bounds record per process.
_call_lock = ForkSafeLock()


def resolve_debug(debug: object) -> bool:
    """``debug`` if it is a bool, else (None) whether ``TL_DEBUG`` is set to a true word.

    Raises:
        TypeError: ``debug`` is neither a bool nor None.
    """
    if debug is None:
        return os.environ.get(DEBUG_ENV, "").strip().lower() not in _FALSE_WORDS
    if not isinstance(debug, bool):
        raise TypeError(f"debug: expected True, False or None (TL_DEBUG), got {debug!r}")
    return debug


def with_checks(pass_configs: Mapping[str, object] | None) -> dict[str, object]:
    """``pass_configs`` plus the checked-mode switch."""
    return {**(pass_configs or {}), CHECK_CONFIG: True}


def is_checked(pass_configs: Mapping[str, object] | None) -> bool:
    """Whether ``pass_configs`` ask for checked mode."""
    return bool((pass_configs or {}).get(CHECK_CONFIG))


def require_support(context: Any) -> None:
    """Raise unless the context's backend honours checked mode.

    Raises:
        NotImplementedError: the backend's capabilities for this target do not include
            ``checked_mode``.
    """
    backend = context.backend
    if not context.capabilities.checked_mode:
        raise NotImplementedError(
            f"debug=True (checked mode): backend {backend.name!r} has no bounds-checked "
            f"mode for target {context.target_kind!r} (its Capabilities.checked_mode is "
            "False); use a backend that has one (c, llvm), or tl_ir.interpret "
            "(TL_INTERPRET=1) to check indices"
        )


def kernel_file(func: Any) -> str:
    """The source file of a PrimFunc's statements (from their spans), or ``""``."""
    import tvm
    import tvm_ffi
    from tvm import tirx

    found: list[str] = []

    def visit(node: Any) -> None:
        span = getattr(node, "span", None)
        name = getattr(getattr(span, "source_name", None), "name", None)
        if name and not found:
            found.append(str(name))

    tvm_ffi.structural_walk(
        func.body, [(tirx.BufferStore, visit), (tvm.ir.TensorLoad, visit)], order="pre"
    )
    return found[0] if found else ""


def checked_call(
    call: Callable[..., Any], kernel_name: str, source_file: str
) -> Callable[..., Any]:
    """``call`` followed by a look at the runtime's out-of-bounds record.

    The returned function raises `IndexError` (buffer, index, extent, file:line) when the
    call reported an out-of-bounds access; the kernel skipped that access (a load read
    0, a store wrote nothing), so no memory outside the buffer was touched.
    """
    from tl_runtime.context import take_out_of_bounds

    def checked(*args: Any) -> Any:
        with _call_lock:
            take_out_of_bounds()  # nothing left over from an unchecked caller
            result = call(*args)
            report = take_out_of_bounds()
        if report is not None:
            where = (
                f"{source_file or 'the kernel'}:{report.line}"
                if report.line
                else f"{source_file or 'the kernel'} (an access the compiler generated)"
            )
            more = (
                "" if report.count == 1 else f" ({report.count} out-of-bounds accesses; the first)"
            )
            raise IndexError(
                f"{kernel_name}: index {report.index} is out of bounds for buffer "
                f"{report.buffer!r} (dim {report.dim}, extent {report.extent}) at {where}"
                f"{more}; checked mode skipped the access"
            )
        return result

    return checked
