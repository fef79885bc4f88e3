"""What a backend's device can compute, declared once and read by lowering and conformance.

A `Capabilities` record says which floating-point dtypes the device computes
in and, per memory space, which dtypes its atomics update; ``None`` in a field
means "no restriction". `kernel_needs` reads the same facts off a kernel, and
`missing_capabilities` compares the two, so a kernel that needs what the device
lacks is refused at compile time with a message naming the dtype (not by the
driver's build log), and the conformance suite expects that refusal instead of
a run.

What `tl_passes.gpu.GpuTraits` already says (warp size, shared-memory model,
which atomic operations exist and how they are spelled) is not repeated here:
traits say *how* a GPU backend's codegen spells things, capabilities say *what*
the device can compute, for every backend, GPU or not.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias

import attrs
import tvm
import tvm_ffi
from tvm import IRModule, tirx
from tvm.target import Target

from tl_backend_api.errors import BackendError, BackendValidationError
from tl_ir import scopes

#: The memory spaces atomics are declared for (`Capabilities.atomics` keys): the
#: kernel language's scopes without their refinements (``shared.dyn`` is shared).
MEMORY_SPACES: tuple[str, ...] = (scopes.GLOBAL, scopes.SHARED, scopes.LOCAL)

_FLOAT_CODES = (tvm.DataTypeCode.FLOAT, tvm.DataTypeCode.BFLOAT)
_INTEGER_CODES = (tvm.DataTypeCode.INT, tvm.DataTypeCode.UINT)


class MissingCapabilityError(BackendError, NotImplementedError):
    """A kernel needs something the target's device cannot compute (a dtype, an atomic).

    Raised at compile time, before the backend's pipeline runs; the message names
    the kernel, the backend, the target and every missing capability.
    """


def is_float_dtype(dtype: str) -> bool:
    """True for floating-point dtypes (``float16``, ``bfloat16``, ``float8_e4m3fn``...)."""
    try:
        return tvm.DataType(dtype).type_code in _FLOAT_CODES or dtype.startswith("float")
    except Exception:
        return False


def is_integer_dtype(dtype: str) -> bool:
    """True for signed and unsigned integer dtypes (``int8`` ... ``uint64``), not
    ``bool``."""
    try:
        return tvm.DataType(dtype).type_code in _INTEGER_CODES
    except Exception:
        return False


def _scalar(dtype: str) -> str:
    """The element dtype of a vector dtype (``float16x4`` -> ``float16``)."""
    try:
        parsed = tvm.DataType(dtype)
        return str(parsed.with_lanes(1)) if parsed.lanes > 1 else dtype
    except Exception:
        return dtype


def memory_space(scope: str) -> str:
    """The memory space of a TVM storage scope: ``shared.dyn`` -> ``shared``,
    ``local.fragment`` -> ``local``, an empty scope -> ``global``."""
    return (scope or scopes.GLOBAL).split(".", 1)[0]


def _dtype_set(field: str, value: Iterable[str] | None) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise BackendValidationError(
            f"Capabilities.{field}: expected a set of dtype names or None, got {value!r}"
        )
    names = frozenset(value)
    for name in names:
        if not isinstance(name, str) or not name:
            raise BackendValidationError(
                f"Capabilities.{field}: expected dtype names (str), got {name!r}"
            )
    return names


def _dtypes_of_kind(
    field: str, kind: str, test: Callable[[str], bool], value: Iterable[str] | None
) -> frozenset[str] | None:
    """``value`` as the dtype names of the `Capabilities` field ``field``, each one
    ``test`` accepts (``kind`` names them in the error)."""
    names = _dtype_set(field, value)
    for name in names or ():
        if not test(name):
            raise BackendValidationError(
                f"Capabilities.{field}: expected {kind} dtypes, got {name!r}"
            )
    return names


def _float_dtypes(value: Iterable[str] | None) -> frozenset[str] | None:
    return _dtypes_of_kind("float_dtypes", "floating-point", is_float_dtype, value)


def _integer_dtypes(value: Iterable[str] | None) -> frozenset[str] | None:
    return _dtypes_of_kind("integer_dtypes", "integer", is_integer_dtype, value)


def _atomics(
    value: Mapping[str, Iterable[str]] | None,
) -> Mapping[str, frozenset[str]] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise BackendValidationError(
            "Capabilities.atomics: expected a mapping memory space -> dtypes or None, "
            f"got {type(value).__name__} {value!r}"
        )
    spaces: dict[str, frozenset[str]] = {}
    for space, dtypes in value.items():
        if space not in MEMORY_SPACES:
            raise BackendValidationError(
                f"Capabilities.atomics: expected memory spaces among {MEMORY_SPACES}, got {space!r}"
            )
        spaces[space] = _dtype_set(f"atomics[{space!r}]", dtypes) or frozenset()
    return types.MappingProxyType(spaces)


@attrs.frozen
class Capabilities:
    """What a backend's device computes; ``None`` in a field: no restriction.

    Attributes:
        float_dtypes: the floating-point dtypes the device computes in (loads,
            stores, arithmetic): e.g. ``{"float32"}`` for an OpenCL device without
            ``cl_khr_fp16``, ``{"float16", "float32"}`` for WGSL without f64.
        integer_dtypes: the integer dtypes the device computes in (loads, stores,
            arithmetic): ``{"int32", "uint32"}`` for WGSL. ``bool`` is not
            restricted.
        atomics: memory space (``"global"``, ``"shared"``, ``"local"``) -> the
            dtypes ``T.atomic_*`` may update there; a space absent from the
            mapping has no atomics. Which operations exist (add, max, min) and
            how they are spelled is the backend's codegen's business
            (`tl_passes.gpu.GpuTraits.atomics` for GPU backends).
        checked_mode: whether the backend's kernels honour checked mode (``debug=True``
            or ``TL_DEBUG=1`` in tl_jit: the pass config ``tirx.instrument_bound_checkers``
            makes every out-of-bounds access reported instead of performed). Default
            False: tl_jit refuses ``debug=True`` for such a backend with a
            NotImplementedError rather than running unchecked.

    Raises:
        BackendValidationError: a malformed field (named, with what came).
    """

    float_dtypes: frozenset[str] | None = attrs.field(default=None, converter=_float_dtypes)
    integer_dtypes: frozenset[str] | None = attrs.field(default=None, converter=_integer_dtypes)
    atomics: Mapping[str, frozenset[str]] | None = attrs.field(default=None, converter=_atomics)
    checked_mode: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


#: A backend's `Backend.capabilities`: one record, or a function of the target
#: (a capability that depends on the arch, or on a device the probe opened).
CapabilitiesLike: TypeAlias = Capabilities | Callable[[Target], Capabilities]

#: Every backend that declares nothing: no restriction.
UNRESTRICTED = Capabilities()


@attrs.frozen
class KernelNeeds:
    """What a kernel computes in: read off the kernel by `kernel_needs`.

    Attributes:
        float_dtypes: every floating-point dtype of a value, buffer or parameter.
        integer_dtypes: every integer dtype of a value, buffer or parameter.
        atomics: ``(memory space, dtype)`` of every atomic update's destination.
    """

    float_dtypes: frozenset[str]
    atomics: frozenset[tuple[str, str]]
    integer_dtypes: frozenset[str] = frozenset()


def kernel_needs(kernel: tirx.PrimFunc | IRModule) -> KernelNeeds:
    """The dtypes and atomics ``kernel`` (a PrimFunc, or every PrimFunc of a module) uses."""
    from tl_ir import ops

    funcs = (
        [f for f in kernel.functions.values() if isinstance(f, tirx.PrimFunc)]
        if isinstance(kernel, IRModule)
        else [kernel]
    )
    dtypes: set[str] = set()

    def visit(value: Any) -> None:
        # Buffers and types carry ``dtype``; an expression's lives on its PrimType ``ty``.
        dtype = getattr(value, "dtype", None)
        if dtype is None:
            ty = getattr(value, "ty", None)
            dtype = ty.dtype if isinstance(ty, tvm.ir.PrimType) else None
        if dtype is not None:
            dtypes.add(_scalar(str(dtype)))

    atomics: set[tuple[str, str]] = set()
    for func in funcs:
        tvm_ffi.structural_walk(func, visit, order="pre")
        for op in ops.tile_ops(func):
            if isinstance(op, ops.AtomicOp):
                atomics.add((memory_space(op.dst.scope), op.dst.dtype))
    return KernelNeeds(
        float_dtypes=frozenset(d for d in dtypes if d and is_float_dtype(d)),
        integer_dtypes=frozenset(d for d in dtypes if d and is_integer_dtype(d)),
        atomics=frozenset(atomics),
    )


def missing_capabilities(needs: KernelNeeds, capabilities: Capabilities) -> list[str]:
    """One line per need ``capabilities`` does not cover (empty: the kernel can run)."""
    missing: list[str] = []
    if capabilities.float_dtypes is not None:
        for dtype in sorted(needs.float_dtypes - capabilities.float_dtypes):
            missing.append(
                f"computes in {dtype}; the device computes in "
                f"{sorted(capabilities.float_dtypes)} only"
            )
    if capabilities.integer_dtypes is not None:
        for dtype in sorted(needs.integer_dtypes - capabilities.integer_dtypes):
            missing.append(
                f"computes in {dtype}; the device's integers are "
                f"{sorted(capabilities.integer_dtypes)} only"
            )
    if capabilities.atomics is not None:
        for space, dtype in sorted(needs.atomics):
            allowed = capabilities.atomics.get(space, frozenset())
            if dtype not in allowed:
                have = sorted(allowed) if allowed else "none"
                missing.append(
                    f"updates {dtype} atomically in {space} memory; the device's "
                    f"{space} atomics take {have}"
                )
    return missing
