"""`GpuTraits`: what the shared GPU lowering needs to know about one GPU backend.

The ``tl_passes.gpu`` passes never ask which target they compile for; every
difference between GPU backends is a field of the `GpuTraits` value the
backend declares in its own package and hands to `gpu_passes` when it builds
its pipeline. A new GPU backend writes one ``GpuTraits(...)`` and changes no
file here.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from tl_passes.gpu.matrix import MatrixInstruction, MatrixLoad

#: Bytes one vector access moves when a backend does not say otherwise (128-bit
#: loads and stores); artifacts record at least this parameter alignment.
DEFAULT_VECTOR_BYTES = 16

#: The atomic kinds (``T.atomic_add``/``max``/``min``/``or``, ``T.atomic_load``/``store``;
#: `tl_ir.ops.ATOMIC_KINDS`).
ATOMIC_KINDS = ("add", "max", "min", "or", "load", "store")


class SharedMemoryModel(enum.Enum):
    """How a backend's codegen holds ``T.alloc_shared`` tiles.

    ``DYNAMIC``: one dynamic allocation sized at launch (the size is recorded in
    the kernel's launch metadata). ``STATIC``: each tile becomes a static
    shared array (codegens without dynamic shared memory).
    """

    DYNAMIC = "dynamic"
    STATIC = "static"


@attrs.frozen
class WarpShuffle:
    """How a backend spells a warp shuffle (``shfl_xor``) in TIR.

    Attributes:
        intrinsic: the TIR intrinsic the lowering calls (its operands are
            mask, value, source lane, width, warp size).
        mask_width: lanes the mask operand can name; a warp of at most this
            many lanes gets an all-ones mask over its lanes, a wider one a
            zero mask (a codegen that ignores the mask).
    """

    intrinsic: str = "tirx.tvm_warp_shuffle"
    mask_width: int = 32

    def mask(self, warp_size: int) -> int:
        """The mask operand for a shuffle across ``warp_size`` lanes."""
        if warp_size > self.mask_width:
            return 0
        return (1 << self.mask_width) - 1


def _dtype_names(value: Any) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(d, str) and d for d in value):
        raise TypeError(f"AtomicCall.dtypes: expected a set of dtype names or None, got {value!r}")
    return frozenset(value)


@attrs.frozen
class AtomicCall:
    """How one atomic is spelled: ``name(address, value)`` (a read-modify-write or a
    store, returning the element's previous value, which a ``return_prev`` atomic
    keeps), ``name(address)`` for a load (returning the value).

    Attributes:
        name: the function (``extern``) or TIR intrinsic (``intrinsic``) called.
        intrinsic: True for a TIR intrinsic (``call_intrin``), False for an
            external device function (``call_extern``; a helper the backend's
            `GpuTraits.atomics_prelude` may define).
        dtypes: the dtypes of the destination the call takes; None: every dtype. A
            kernel updating another dtype raises `GpuLoweringError` naming them.
    """

    name: str
    intrinsic: bool = False
    dtypes: frozenset[str] | None = attrs.field(default=None, converter=_dtype_names)


#: A predicate over the TVM target: whether a feature is there (e.g. the arch has it).
TargetTest = Callable[[Any], bool]


def _always(target: Any) -> bool:
    return True


def _check_copy_sizes(
    instance: AsyncCopy, attribute: attrs.Attribute[Any], value: Mapping[int, str]
) -> None:
    if not value:
        raise ValueError("AsyncCopy.copies: expected at least one {bytes: function} entry")
    for size, name in value.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 1 or size & (size - 1):
            raise ValueError(f"AsyncCopy.copies: expected power-of-two byte sizes, got {size!r}")
        if not isinstance(name, str) or not name:
            raise TypeError(f"AsyncCopy.copies[{size}]: expected a function name, got {name!r}")


def _frozen_sizes(value: Mapping[int, str]) -> Mapping[int, str]:
    return MappingProxyType(dict(value))


@attrs.frozen
class AsyncCopy:
    """How a target spells asynchronous global -> shared copies with commit/wait groups
    (CUDA's ``cp.async``), which `T.Pipelined` rings are built from.

    Every name is an external device function (``call_extern``) the backend's codegen
    provides. ``copies[b](dst_shared, src_global)`` starts a copy of ``b`` bytes (both
    addresses ``b``-aligned); ``copies[b] + zero_fill_suffix`` takes a third int
    argument ``valid``: 0 writes ``b`` zero bytes and reads nothing. ``commit()`` closes
    the calling thread's group of copies started since the last commit; ``wait(n)``
    (``n`` a constant, at most ``max_pending``) returns once at most ``n`` of its
    committed groups are still in flight. Completion is per thread: a block barrier
    after ``wait`` makes the data visible to the other threads.

    Attributes:
        copies: copy size in bytes -> function name.
        zero_fill_suffix: suffix of the zero-filling form of each copy function.
        commit: the commit function.
        wait: the wait function.
        max_pending: the largest ``n`` ``wait`` accepts (ring depth - 2 at most).
        available: whether the TVM target has the instructions (an arch check);
            a target it refuses gets in-order loops.
    """

    copies: Mapping[int, str] = attrs.field(converter=_frozen_sizes, validator=_check_copy_sizes)
    commit: str
    wait: str
    zero_fill_suffix: str = "_zfill"
    max_pending: int = 7
    available: TargetTest = _always

    def sizes(self) -> list[int]:
        """The copy sizes in bytes, widest first."""
        return sorted(self.copies, reverse=True)


def _int_set(value: Iterable[int]) -> frozenset[int]:
    return frozenset(int(v) for v in value)


@attrs.frozen
class SwizzledOperands:
    """The XOR-swizzled shared layout a target wants for tiles its tensor-core
    instructions read row by row (``ldmatrix`` on CUDA), chosen automatically for
    `T.gemm` operands in shared memory (`tl_passes.gpu.swizzle`).

    Attributes:
        dtype_bits: element widths whose gemm operands are swizzled (16- and
            8-bit on CUDA: the dtypes ldmatrix loads).
        available: whether the TVM target has the instructions.
    """

    dtype_bits: frozenset[int] = attrs.field(converter=_int_set)
    available: TargetTest = _always


def _check_atomics(
    instance: GpuTraits, attribute: attrs.Attribute[Any], value: Mapping[str, AtomicCall]
) -> None:
    unknown = sorted(set(value) - set(ATOMIC_KINDS))
    if unknown:
        raise ValueError(
            f"GpuTraits.atomics: expected keys among {ATOMIC_KINDS}, got {unknown} "
            f"(in {sorted(value)})"
        )
    for kind, call in value.items():
        if not isinstance(call, AtomicCall):
            raise TypeError(
                f"GpuTraits.atomics[{kind!r}]: expected an AtomicCall, got {type(call).__name__}"
            )


def _positive(instance: GpuTraits, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is None and attribute.name == "warp_size":
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"GpuTraits.{attribute.name}: expected an int >= 1, got {value!r}")


def _frozen_mapping(value: Mapping[str, AtomicCall]) -> Mapping[str, AtomicCall]:
    return MappingProxyType(dict(value))


def _instruction_tuple(value: Any) -> tuple[MatrixInstruction, ...]:
    instructions = tuple(value)
    for instruction in instructions:
        if not isinstance(instruction, MatrixInstruction):
            raise TypeError(
                "GpuTraits.matrix_instructions: expected MatrixInstruction values, got "
                f"{type(instruction).__name__}"
            )
    return instructions


@attrs.frozen
class GpuTraits:
    """What one GPU backend's codegen offers the shared lowering.

    Attributes:
        name: the backend's name for its target, used in error messages
            (``"T.atomic_max is not implemented on target '<name>'"``).
        warp_size: threads per warp/wavefront/simdgroup; None: the target's
            ``thread_warp_size`` attribute (1 when it has none), for backends
            whose warp width depends on the device (ROCm wavefronts).
        warp_shuffle: how a warp shuffle is spelled; None: the codegen has
            none and reductions combine partials through shared memory.
        atomics: atomic kind (one of `ATOMIC_KINDS`) -> how it is spelled and
            the dtypes it takes; a kind missing here (or a dtype its `AtomicCall`
            lacks) raises `GpuLoweringError` when a kernel uses it.
        atomics_prelude: device source the ``atomics`` calls need (helper
            functions), which the backend's codegen places before the kernels.
        vector_bytes: bytes of the widest global/shared vector access.
        max_vector_lanes: the most lanes a vector access may have.
        shared_memory: how ``T.alloc_shared`` tiles are held.
        async_copy: asynchronous global -> shared copies (`AsyncCopy`); None: the
            target has none and ``T.Pipelined`` loops run in order.
        swizzled_operands: the automatic XOR swizzle of gemm operand tiles
            (`SwizzledOperands`); None: shared tiles stay row-major unless
            ``T.annotate_layout`` asks for a swizzle.
        matrix_instructions: the warp-wide matrix instructions ``T.gemm`` may use
            (`MatrixInstruction`; none: every ``T.gemm`` is an FMA loop).
        matrix_load: the shared-memory matrix load operands are read with
            (`MatrixLoad`; None: element by element).
        named_barrier: the device function a named barrier
            (``T.sync_threads(id, count)``) calls as ``name(id, count)``; the
            backend's codegen substitutes it for the three-argument
            ``tvm_storage_sync`` after TVM's barrier planning (`named_barriers`).
            None: the target has none, and only a named barrier that every thread
            of the block takes part in is lowered (as the whole block's barrier).
        device_assert: the device function ``T.device_assert`` calls as
            ``name(condition, message)`` (it reports ``message`` and stops the kernel
            when ``condition`` is false); the backend's codegen defines it. None: the
            target has none, and a kernel using ``T.device_assert`` is refused.
    """

    name: str
    warp_size: int | None = attrs.field(default=None, validator=_positive)
    warp_shuffle: WarpShuffle | None = None
    atomics: Mapping[str, AtomicCall] = attrs.field(
        factory=dict, converter=_frozen_mapping, validator=_check_atomics, hash=False
    )
    atomics_prelude: str = attrs.field(default="", repr=False)  # long device source
    vector_bytes: int = attrs.field(default=DEFAULT_VECTOR_BYTES, validator=_positive)
    max_vector_lanes: int = attrs.field(default=16, validator=_positive)
    shared_memory: SharedMemoryModel = SharedMemoryModel.DYNAMIC
    async_copy: AsyncCopy | None = None
    swizzled_operands: SwizzledOperands | None = None
    matrix_instructions: tuple[MatrixInstruction, ...] = attrs.field(
        default=(), converter=_instruction_tuple, repr=False
    )
    matrix_load: MatrixLoad | None = attrs.field(default=None, repr=False)
    named_barrier: str | None = None
    device_assert: str | None = None

    def async_copy_for(self, target: Any | None) -> AsyncCopy | None:
        """The `AsyncCopy` usable on ``target`` (None: none, or not on this arch)."""
        if self.async_copy is None or (
            target is not None and not self.async_copy.available(target)
        ):
            return None
        return self.async_copy

    def swizzled_operands_for(self, target: Any | None) -> SwizzledOperands | None:
        """The `SwizzledOperands` in force on ``target`` (None: none)."""
        chosen = self.swizzled_operands
        if chosen is None or (target is not None and not chosen.available(target)):
            return None
        return chosen

    def matrix_instruction(
        self, a_dtype: str, b_dtype: str, acc_dtype: str, target: Any | None
    ) -> MatrixInstruction | None:
        """The first declared matrix instruction for these operand and accumulator
        dtypes that the TVM ``target`` has, or None."""
        for instruction in self.matrix_instructions:
            if (instruction.a_dtype, instruction.b_dtype, instruction.acc_dtype) == (
                a_dtype,
                b_dtype,
                acc_dtype,
            ) and instruction.available_on(target):
                return instruction
        return None

    def warp_size_for(self, target: Any | None) -> int:
        """Threads per warp when compiling for the TVM ``target`` (see ``warp_size``)."""
        if self.warp_size is not None:
            return self.warp_size
        if target is None:
            return 1
        attributes = target.attrs
        if "thread_warp_size" in attributes:
            return int(attributes["thread_warp_size"])
        return 1


#: Traits of a GPU with nothing beyond barriers and shared memory: no shuffles,
#: no atomics, dynamic shared memory. What a pass built without traits assumes.
PORTABLE_TRAITS = GpuTraits(name="gpu")
