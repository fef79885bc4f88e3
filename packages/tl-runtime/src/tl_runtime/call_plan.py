"""The argument-check plan of a kernel: what every call path checks, derived once from the manifest.

One ``CallPlan`` per loaded kernel says, per parameter: its dtype (a ``tl_runtime.dtypes``
entry), rank and dims (static ints or symbols), declared strides (None: C-contiguous),
alignment, whether the kernel writes it, whether the caller passes it or the runtime
allocates it (``out_idx``), and, for scalars, the accepted range; for the kernel: the
DLPack device types its arrays may live on, its index width, whether written arguments
must be checked for overlap and the alignment of what the runtime allocates.

Three implementations consume it and nothing else: ``ArgumentChecker`` (the complete
path, every error message), the generated numpy fast path (``adapters/fast_path.py``) and
the Cython launcher (``_native/launcher.pyx``, through ``launcher_specs``). The fast paths
accept only calls the plan's checks pass and hand every other call to the checker, so a
call is accepted or refused the same way, with the same message, on every path
(``tests/test_check_plan.py`` feeds one table of cases to all three).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tl_runtime.argument_memory import max_elements
from tl_runtime.dtypes import DtypeInfo, dtype_info
from tl_runtime.manifest import Manifest
from tl_runtime.manifest.fields import Dim

ALIGNMENT = 64
"""Byte alignment of every array the runtime allocates (outputs, copies of misaligned
inputs); at least any parameter's declared alignment in practice. Each parameter's own
requirement is ``ParamSpec.alignment``."""

DLPACK_CPU = 1
# Scalars the fast paths convert themselves; others (float16, bfloat16, float8) go to
# the checker, which rounds and range-checks them.
_FAST_SCALARS = frozenset({"bool", "float32", "float64"})


@dataclass(frozen=True)
class ParamPlan:
    """What a call checks of one parameter.

    Attributes:
        index: the parameter's position in the manifest.
        name: its name; ``where`` is ``"<kernel>: parameter '<name>'"``, the prefix of
            every message about it.
        kind: ``"tensor"`` or ``"scalar"``.
        dtype: its dtype's table entry (aliases resolved).
        role: ``"input"``, ``"output"`` or ``"inout"``; ``written`` is True for the last two.
        caller_pos: its position among the caller's arguments; None for ``out_idx``.
        shape: dims, each an int or a symbol name (tensors).
        strides: declared element strides (ints or symbols), None for C-contiguous.
        alignment: the byte alignment its data pointer needs (tensors).
        fast: whether the fast paths may accept its argument themselves (scalars of the
            types they convert; tensors when the kernel takes host arrays); else every
            call goes to the checker.
    """

    index: int
    name: str
    where: str
    kind: str
    dtype: DtypeInfo
    role: str
    written: bool
    caller_pos: int | None
    shape: tuple[Dim, ...]
    strides: tuple[Dim, ...] | None
    alignment: int
    fast: bool

    @property
    def is_tensor(self) -> bool:
        """Whether this is a tensor parameter."""
        return self.kind == "tensor"


@dataclass(frozen=True)
class CallPlan:
    """What a call of one kernel checks: its parameters' plans and the kernel-wide facts.

    Attributes:
        kernel: the kernel's name.
        params: every parameter's plan, in manifest order.
        caller: indices of the parameters the caller passes, in order.
        out_idx: indices of the parameters the runtime allocates, ascending.
        symbols: every symbolic dim or stride name, in order of first appearance
            (caller parameters first: the order the launcher binds them in).
        device_types: DLPack device types the kernel's arrays may live on.
        host_arrays: whether host (CPU) arrays are accepted (the fast paths check only those).
        index_bits / max_elements: the kernel's index width and the most elements (and
            the largest dim) a tensor argument may span.
        check_aliasing: a written caller tensor and another caller tensor exist, so each
            call checks that written memory overlaps no other argument.
        allocation_alignment: alignment of the arrays the runtime allocates.
        signature: ``"kernel(a, b)"`` for count errors.
    """

    kernel: str
    params: tuple[ParamPlan, ...]
    caller: tuple[int, ...]
    out_idx: tuple[int, ...]
    symbols: tuple[str, ...]
    device_types: tuple[int, ...]
    host_arrays: bool
    index_bits: int
    max_elements: int
    check_aliasing: bool
    allocation_alignment: int
    signature: str

    def where(self, index: int) -> str:
        """The message prefix naming parameter ``index``."""
        return self.params[index].where


def call_plan(manifest: Manifest, device_types: Sequence[int] | None = None) -> CallPlan:
    """Derive the argument-check plan of ``manifest``'s kernel.

    Args:
        manifest: the validated manifest.
        device_types: DLPack device types accepted; None means the manifest's
            ``argument_device_types``.
    """
    out_idx = tuple(sorted(manifest.out_idx))
    devices = tuple(manifest.argument_device_types if device_types is None else device_types)
    host = DLPACK_CPU in devices
    caller = tuple(i for i in range(len(manifest.params)) if i not in out_idx)
    positions = {index: pos for pos, index in enumerate(caller)}
    plans = []
    for index, spec in enumerate(manifest.params):
        info = dtype_info(spec.dtype)
        tensor = spec.kind == "tensor"
        plans.append(
            ParamPlan(
                index=index,
                name=spec.name,
                where=f"{manifest.name}: parameter {spec.name!r}",
                kind=spec.kind,
                dtype=info,
                role=spec.role,
                written=spec.written,
                caller_pos=positions.get(index),
                shape=tuple(spec.shape),
                strides=None if spec.strides is None else tuple(spec.strides),
                alignment=spec.alignment,
                fast=host if tensor else (info.is_integer or info.name in _FAST_SCALARS),
            )
        )
    symbols: dict[str, None] = {}
    for index in (*caller, *out_idx):
        plan = plans[index]
        for dim in (*plan.shape, *(plan.strides or ())):
            if isinstance(dim, str):
                symbols.setdefault(dim, None)
    caller_tensors = [i for i in caller if plans[i].is_tensor]
    names = ", ".join(plans[i].name for i in caller)
    return CallPlan(
        kernel=manifest.name,
        params=tuple(plans),
        caller=caller,
        out_idx=out_idx,
        symbols=tuple(symbols),
        device_types=devices,
        host_arrays=host,
        index_bits=manifest.index_bits,
        max_elements=max_elements(manifest),
        check_aliasing=len(caller_tensors) > 1 and any(plans[i].written for i in caller_tensors),
        allocation_alignment=max([ALIGNMENT] + [p.alignment for p in plans if p.is_tensor]),
        signature=f"{manifest.name}({names})",
    )


def launcher_specs(plan: CallPlan) -> tuple[list[dict[str, Any]], int]:
    """The plan as the Cython launcher reads it: one dict per parameter, and the symbol count.

    Dims and strides are encoded as ints: a static value as itself, symbol k (the plan's
    ``symbols`` order) as ``-(k + 1)``; the launcher binds each symbol on first sight and
    compares it after. Scalar kinds: 1 int (range ``lo``..``hi``), 2 float, 3 bool.
    """
    symbol_index = {name: k for k, name in enumerate(plan.symbols)}

    def encode(dim: Dim) -> int:
        return dim if isinstance(dim, int) else -(symbol_index[dim] + 1)

    specs = []
    for param in plan.params:
        info = param.dtype
        kind, low, high = 0, 0, 0
        if not param.is_tensor:
            if info.kind == "bool":
                kind = 3
            elif info.is_integer:
                kind = 1
                low, high = int(info.low or 0), min(int(info.high or 0), 2**63 - 1)
            else:
                kind = 2
        specs.append(
            {
                "name": param.name,
                "kind": kind,
                "written": int(param.written),
                "alignment": param.alignment,
                "is_out_idx": int(param.caller_pos is None),
                "code": info.dlpack_code,
                "bits": info.bits,
                "formats": info.buffer_formats,
                "itemsize": info.itemsize,
                "dims": [encode(d) for d in param.shape],
                "strides": None if param.strides is None else [encode(d) for d in param.strides],
                "fast_ok": int(param.fast),
                "lo": low,
                "hi": high,
                "dtype": info.name,
                "max_elements": plan.max_elements,
            }
        )
    return specs, len(plan.symbols)
