"""Where each TileLang name stands here: supported, accepted as a no-op, supported on
GPU targets only, or not supported (and why).

Names that are not supported still exist in ``T``: calling one raises
`UnsupportedError` (a ``NotImplementedError``) naming the feature, so a TileLang
program fails at the line that needs it, with the reason. docs/language.md's
compatibility table is `compatibility_table()`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tvm.script import tirx as _tvm_T

from tl_ir.dtypes import DTYPE_NAMES
from tl_ir.errors import UnsupportedError
from tl_ir.language._tilelang_names import TILELANG_NAMES

__all__ = [
    "GPU_ONLY",
    "HINTS",
    "SUPPORTED",
    "UNSUPPORTED",
    "UnsupportedDtype",
    "compatibility_table",
    "status",
    "unsupported_dtype_names",
    "unsupported_stub",
]

SUPPORTED = "supported"
HINTS = "accepted as a no-op"
GPU_ONLY = "supported on GPU targets"
UNSUPPORTED = "not supported"

#: Names whose TileLang meaning is a scheduling hint: accepted, no effect.
HINT_NAMES: frozenset[str] = frozenset(
    {
        "annotate_l2_hit_ratio",
        "annotate_min_blocks_per_sm",
        "annotate_restrict_buffers",
        "disable_warp_group_reg_alloc",
        "no_set_max_nreg",
        "pdl_sync",
        "pdl_trigger",
    }
)

#: Prefixes of the GPU language's warp collectives (shuffles, warp reductions): the
#: CPU targets run them as exchanges through block memory (docs/cpu.md).
_WARP_COLLECTIVE_PREFIXES = ("shfl_", "warp_reduce_")


def _gpu_language_names() -> frozenset[str]:
    # Imported on use: tl_ir.language.gpu builds its T.alloc_barrier from this module.
    from tl_ir.language import gpu

    return frozenset(gpu.__all__)


_REASONS: list[tuple[str, str]] = [
    (
        "TMA (tensor memory accelerator) copies and descriptors are NVIDIA Hopper-only; "
        "T.copy leaves the copy instruction to the target",
        "tma_copy tma_gather4 tma_gather4_bytes tma_load tma_load_2sm tma_scatter4 "
        "tma_store_arrive tma_store_wait create_tma_descriptor fence_proxy_async "
        "ptx_cp_async_bulk",
    ),
    (
        "tcgen05 MMA and tensor memory (TMEM) are NVIDIA Blackwell-only",
        "alloc_tmem deallocate_tmem alloc_descriptor increase_descriptor_offset "
        "TCGEN05DescriptorParams TCGEN05TensorCoreIntrinEmitter alloc_tcgen05_instr_desc "
        "alloc_tcgen05_instruction_desc alloc_tcgen05_smem_desc compute_umma_descriptor "
        "initialize_tcgen05_descriptor make_blockscaled_gemm_layout "
        "ptx_tcgen05_mma_blockscaled_ss ptx_tcgen05_mma_ss ptx_tcgen05_mma_ts "
        "tcgen05_after_thread_sync tcgen05_before_thread_sync tcgen05_cp_warpx4 "
        "tcgen05_gemm mma_gemm_blockscaled tcgen05_gemm_blockscaled tcgen05_gemm_sp "
        "tcgen05_mma tcgen05_mma_arrive tcgen05_mma_blockscaled tcgen05_sf_warp_transpose "
        "ptx_mma_block_scale",
    ),
    (
        "WGMMA (warpgroup MMA) is NVIDIA Hopper-only; T.gemm leaves the MMA instruction "
        "to the target",
        "WGMMADescriptorParams WGMMATensorCoreIntrinEmitter WGSparseTensorCoreIntrinEmitter "
        "alloc_wgmma_desc compute_gmma_descriptor initialize_wgmma_descriptor ptx_wgmma_rs "
        "ptx_wgmma_sp_rs ptx_wgmma_sp_ss ptx_wgmma_ss wait_wgmma warpgroup_arrive "
        "warpgroup_commit_batch warpgroup_fence_operand warpgroup_wait wgmma_gemm "
        "wgmma_gemm_sp wgmma_mma",
    ),
    (
        "warp specialization (producer/consumer warpgroups, register reallocation) is "
        "not supported; T.Pipelined overlaps copies and compute",
        "WarpSpecialize WarpSpecializeFrame ws WSID WSInstr WSOpRef WSPipeline WSRole "
        "WSSchedule WSScope WSSync WSSyncKind annotate_ws_schedule ws_op set_max_nreg "
        "inc_max_nreg dec_max_nreg annotate_producer_reg_dealloc "
        "annotate_consumer_reg_alloc get_warp_group_idx named_barrier_arrive shuffle_elect",
    ),
    (
        "thread-block clusters and cluster launch control are NVIDIA Hopper-only",
        "ClusterKernel alloc_cluster_barrier copy_cluster ptx_arrive_cluster_barrier "
        "cluster_arrive_relaxed cluster_arrive cluster_wait cluster_sync "
        "block_rank_in_cluster clc_try_cancel clc_try_cancel_multicast clc_is_canceled "
        "clc_get_first_ctaid_x clc_get_first_ctaid_y clc_get_first_ctaid_z",
    ),
    (
        "memory barriers (mbarrier) belong to hand-written asynchronous pipelines; "
        "T.Pipelined schedules its own",
        "alloc_barrier barrier_arrive barrier_wait mbarrier_arrive mbarrier_arrive_expect_tx "
        "mbarrier_expect_tx mbarrier_wait_parity create_barriers ptx_arrive_barrier "
        "ptx_arrive_barrier_expect_tx ptx_init_barrier_thread_count cp_async_barrier_noinc "
        "ptx_cp_async_barrier ptx_fence_barrier_init ptx_wait_barrier",
    ),
    (
        "raw PTX and tensor-core intrinsics are CUDA-only; T.gemm and T.copy leave "
        "instructions to the target",
        "ptx_mma ptx_mma_sp ptx_ldmatrix ptx_cp_async ptx_commit_group ptx_wait_group "
        "ptx_mma_sm70 mma_fill mma_store __ldg ldg32 ldg64 ldg128 ldg256 lds32 lds64 lds128 "
        "stg32 stg64 stg128 stg256 sts32 sts64 sts128 TensorCoreIntrinEmitter "
        "TensorCoreIntrinEmitterSM120 TensorCoreIntrinEmitterWithLadderTransform "
        "SparseTensorCoreIntrinEmitter get_ldmatrix_offset get_mma_micro_size "
        "get_swizzle_layout mma_store_index_map",
    ),
    ("sparse tensor-core GEMM is NVIDIA-only", "gemm_sp"),
    ("a kernel written as CUDA source is not a tile program", "CUDASourceCodeKernel"),
    (
        "warp vote and match intrinsics are not supported yet (shuffles and warp "
        "reductions are, on GPU targets)",
        "activemask all_sync any_sync ballot ballot_sync match_all_sync match_any_sync "
        "sync_warp syncthreads_and syncthreads_count syncthreads_or get_warp_idx_sync "
        "__ffs __fns",
    ),
    (
        "grid-wide synchronization needs a cooperative launch; write consecutive "
        "T.Kernel blocks instead",
        "sync_global sync_grid",
    ),
    (
        "bitwise reductions are not supported yet (T.reduce_sum/max/min/abssum/absmax, "
        "T.cumsum and T.cummax are)",
        "reduce_bitand reduce_bitor reduce_bitxor warp_reduce_bitand warp_reduce_bitor",
    ),
    (
        "tile schedulers are not supported yet; use T.Persistent or one block per tile",
        "PersistentTileScheduler BaseTileScheduler",
    ),
    (
        "raw pointers are not supported; tensors are kernel parameters "
        "(views: T.view, T.reshape, T.Tensor(shape, dtype, data))",
        "make_tensor_from_addr",
    ),
    (
        "macro parameter annotations are not supported; use T.Tensor",
        "FragmentBuffer SharedBuffer LocalBuffer",
    ),
    ("let-bound value queries are not supported", "has_let_value get_let_value"),
    (
        "TileLang's eager @T.jit front end is not supported (the eager style is tl_jit.jit)",
        "JITFunc Ref annotate_compile_flags annotate_pass_configs",
    ),
    ("packed two-wide math is not supported yet", "add2 sub2 mul2 fma2 max2 min2 abs2"),
    ("not supported", "extract_lane ret"),
    (
        "TileLang's layout.Fragment is not supported; fragments get their layout from the "
        "target's lowering",
        "Fragment",
    ),
]

#: Name -> why it is not supported.
UNSUPPORTED_REASONS: dict[str, str] = {
    name: reason for reason, names in _REASONS for name in names.split()
}


def unsupported_stub(name: str) -> Callable[..., Any]:
    """A callable for ``T.<name>`` that raises `UnsupportedError` with the reason."""
    reason = UNSUPPORTED_REASONS[name]

    def stub(*args: Any, **kwargs: Any) -> Any:
        raise UnsupportedError(f"T.{name}: {reason}")

    stub.__name__ = name
    stub.__doc__ = f"Not supported: {reason}. Raises `UnsupportedError`."
    return stub


class UnsupportedDtype(str):
    """``T.<name>`` for a TileLang dtype this language lacks: the name as a string (so a
    use as a dtype is refused by `tl_ir.normalize_dtype` listing the dtypes there are),
    and calling it raises `UnsupportedError`."""

    __slots__ = ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedError(f"T.{self}: {_dtype_status(str(self))[1]}")


def unsupported_dtype_names() -> list[str]:
    """TileLang's dtype names that are not supported here."""
    return [n for n in TILELANG_NAMES["dtypes"] if status(n, "dtypes")[0] == UNSUPPORTED]


def _dtype_status(name: str) -> tuple[str, str]:
    from tl_ir.language._dtypes import DTYPE_ALIASES

    supported = set(DTYPE_NAMES) | set(DTYPE_ALIASES)
    if name in supported:
        return SUPPORTED, ""
    if name in ("dtype", "AnyDType", "get_tvm_dtype"):
        return SUPPORTED, ""
    base, _, lanes = name.rpartition("x")
    # TVM's vector constructors are of its own dtypes: float8_e4m3xN is not e4m3fn lanes.
    vector_bases = supported - {"float8_e4m3"}
    if base in vector_bases and lanes.isdigit() and hasattr(_tvm_T, name):
        return SUPPORTED, "TVM's vector dtype (T.float32x4(...) builds a vector value)"
    return UNSUPPORTED, "dtype not supported (storage types: " + ", ".join(DTYPE_NAMES) + ")"


_IEEE_NOTE = (
    "round-to-nearest ('rn', the default; the mode after the operands or by keyword); "
    "the directed modes 'rz', 'ru', 'rd' raise UnsupportedError"
)

SUPPORTED_NOTES: dict[str, str] = {
    "assume": (
        "a condition on what the caller passes (scalar parameters, symbolic dims) is "
        "checked at each call: RuntimeError('Assume: ...') on c, llvm and the "
        "interpreter (the CUDA launcher does not evaluate it yet); any other condition "
        "is an optimizer hint"
    ),
    **{
        f"ieee_{op}": _IEEE_NOTE
        for op in ("add", "sub", "mul", "fmaf", "frcp", "fsqrt", "frsqrt", "fdiv")
    },
    "access_ptr": (
        "the address of a tile or element ('r', 'w', 'rw'), for the T.call_extern device "
        "helpers T.import_source brings"
    ),
    "import_source": (
        "device source text is placed before the kernels on a backend that compiles it "
        "(CUDA C on cuda); other backends refuse the kernel with UnsupportedError; "
        "T.import_source(None) is TileLang's no-op"
    ),
    "device_assert": (
        "c, llvm and the interpreter: a failing check makes the kernel call raise "
        "AssertionError (kernel, message, line) once the kernel has run; cuda: printf and "
        "a device-side trap; other GPU targets refuse it"
    ),
    "float8_e4m3": "TileLang's alias of float8_e4m3fn (the CUDA e4m3)",
    "Layout": (
        "T.Layout(shape, index_fn) for T.annotate_layout on shared and global buffers, "
        "as a hint: the buffer keeps its row-major order (TileLang stores it in the "
        "layout's order); refused on fragments"
    ),
    "im2col": (
        "a T.Parallel copy with computed indices on every target; rows and columns past "
        "the im2col matrix are 0"
    ),
    "c2d_im2col": "TileLang's older name of im2col",
    "copy": (
        "a run-time extent (one or both sides) with a compile-time bound (T.min, a "
        "fixed-size tile) is a guarded T.Parallel loop; one without a bound is refused"
    ),
    "fill": "a region with a bounded run-time extent is a guarded T.Parallel loop",
    "clear": "a region with a bounded run-time extent is a guarded T.Parallel loop",
    "cumsum": (
        "a run-time region with a compile-time bound scans a fixed-size scratch tile; "
        "one without a bound is refused saying what to write"
    ),
    "cummax": (
        "a run-time region with a compile-time bound scans a fixed-size scratch tile; "
        "one without a bound is refused saying what to write"
    ),
    "rng_init": (
        "Philox4x32-10 written in the kernel's IR (cuRAND's default generator): the same "
        "stream on every target, bit-identical to curand() for the same seed, seq and off; "
        "other cuRAND generators raise UnsupportedError"
    ),
    "rng_rand": "the next word of the thread's Philox stream, bit-identical to curand()",
    "rng_rand_float": (
        "uniform float32 bit-identical to curand_uniform; float64 and normal values "
        "follow cuRAND's formulas, normal ones equal to rounding (target math library)"
    ),
    "alloc_reducer": (
        "also TileLang's legacy form: replication='all'/'none', acc[i] += v, "
        "T.finalize_reducer(acc) in place"
    ),
    "sync_threads": (
        "GPU language (tl_ir.language.gpu); named barriers T.sync_threads(id, count) are "
        "bar.sync on CUDA; the CPU targets take them where exactly count threads reach them"
    ),
    **{
        f"atomic_{kind}": (
            "return_prev=True (a scalar update) gives the element's value before this "
            "thread's update (GPU targets: what their atomic call returns, checked on "
            "CUDA; c and llvm: a fetching atomic, and a thread nest holding one stays "
            "scalar loops); with a tile value it raises UnsupportedError, as in TileLang"
        )
        for kind in ("add", "max", "min")
    },
    **{
        f"atomic_addx{width}": "return_prev=True (a vector of previous values) raises "
        "UnsupportedError"
        for width in (2, 4)
    },
    "atomic_or": (
        "one element of an integer buffer (a tile raises UnsupportedError, as in TileLang); "
        "memory_order is a hint"
    ),
    "atomic_load": (
        "one element; memory_order one of relaxed consume acquire seq_cst (others raise "
        "KernelTypeError), every target loads with seq_cst strength"
    ),
    "atomic_store": (
        "one element; memory_order one of relaxed release seq_cst (others raise "
        "KernelTypeError), every target stores with seq_cst strength"
    ),
}
"""Names that work with a restriction or a meaning worth saying, with that note."""


def status(name: str, group: str = "") -> tuple[str, str]:
    """``(status, note)`` of the TileLang name ``name`` here."""
    if name in SUPPORTED_NOTES:
        return SUPPORTED, SUPPORTED_NOTES[name]
    if name in UNSUPPORTED_REASONS:
        return UNSUPPORTED, UNSUPPORTED_REASONS[name]
    if name in HINT_NAMES:
        return HINTS, "a CUDA scheduling hint"
    if name in _gpu_language_names():
        if name.startswith(_WARP_COLLECTIVE_PREFIXES):
            return SUPPORTED, (
                "a warp collective (tl_ir.language.gpu); on the CPU targets an exchange "
                "through block memory between barriers"
            )
        return SUPPORTED, "GPU language (tl_ir.language.gpu); the CPU targets accept it too"
    if group == "dtypes":
        return _dtype_status(name)
    return SUPPORTED, ""


def compatibility_table() -> str:
    """The Markdown table of every TileLang name, its status and note, by TileLang module."""
    rows = ["| TileLang module | name | status | note |", "| --- | --- | --- | --- |"]
    for group, names in TILELANG_NAMES.items():
        for name in names:
            state, note = status(name, group)
            rows.append(f"| {group} | `{name}` | {state} | {note} |")
    return "\n".join(rows) + "\n"
