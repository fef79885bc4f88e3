"""The GPU tile-op lowering leaves no tile op behind, gives fragments thread-local
arrays of the layout's size, and refuses what a target lacks with a clear error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import tvm_ffi
from tvm import tirx
from tvm.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from integration_tests.kernels import ALL_KERNELS, load
from tl_ir import ops as tile
from tl_passes.gpu import (
    AtomicCall,
    GpuLoweringError,
    GpuTraits,
    WarpShuffle,
    dynamic_shared_bytes,
    insert_barriers,
    lower_gpu_tile_ops,
    make_shared_static,
)

#: A GPU with 32-lane shuffles and an external atomicAdd (what a backend declares).
SHUFFLING = GpuTraits(
    name="test-gpu",
    warp_size=32,
    warp_shuffle=WarpShuffle(),
    atomics={"add": AtomicCall("atomicAdd")},
)
#: A GPU with neither shuffles nor atomics.
PLAIN = GpuTraits(name="plain-gpu", max_vector_lanes=4)


def lowered(name: str, traits: GpuTraits = SHUFFLING, target: Target | None = None) -> Any:
    module = load(name)
    func = module.KERNEL(**module.CASES[0]["args"])
    return lower_gpu_tile_ops(func.with_body(insert_barriers(func.body)), traits, target)


def allocations(func: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    tvm_ffi.structural_walk(
        func.body,
        (tirx.AllocBuffer, lambda a: found.__setitem__(str(a.buffer.name), a.buffer)),
        order="pre",
    )
    return found


@pytest.mark.parametrize("name", ALL_KERNELS)
def test_no_tile_op_or_fragment_survives(name: str) -> None:
    func = lowered(name)
    assert tile.tile_ops(func) == []
    scopes = {str(b.ty.storage_scope) for b in allocations(func).values()}
    assert "local.fragment" not in scopes
    assert "local.var" not in scopes


def test_partitioned_fragment_becomes_its_threads_share() -> None:
    buffers = allocations(lowered("gemm"))
    # 64x64 accumulator over 128 threads: 32 registers each.
    assert [int(d) for d in buffers["C_local_regs"].shape] == [32]
    assert str(buffers["C_local_regs"].ty.storage_scope) == "local"


def shuffles(func: Any) -> int:
    return str(func).count("tvm_warp_shuffle")


def test_reductions_shuffle_only_where_the_traits_have_shuffles() -> None:
    assert shuffles(lowered("softmax")) > 0
    assert shuffles(lowered("softmax", PLAIN)) == 0


def test_warp_size_comes_from_the_target_when_the_traits_leave_it_open() -> None:
    open_width = GpuTraits(name="wave-gpu", warp_shuffle=WarpShuffle())
    wave64 = Target({"kind": "rocm", "mcpu": "gfx942"})
    assert open_width.warp_size_for(wave64) == int(wave64.attrs["thread_warp_size"])
    assert open_width.warp_size_for(None) == 1
    # thread_warp_size 1: no shuffles, partials combine through a shared table.
    narrow = Target({"kind": "cuda", "arch": "sm_80", "thread_warp_size": 1})
    assert shuffles(lowered("softmax", open_width, narrow)) == 0
    assert shuffles(lowered("softmax", open_width, wave64)) > 0


def test_atomics_are_refused_where_the_traits_have_none() -> None:
    with pytest.raises(GpuLoweringError, match="not implemented on target 'plain-gpu'"):
        lowered("atomic_sum", PLAIN)
    assert "atomicAdd" in str(lowered("atomic_sum"))


def test_an_intrinsic_atomic_is_called_as_an_intrinsic() -> None:
    traits = GpuTraits(name="llvm-gpu", atomics={"add": AtomicCall("tirx.atomic_add", True)})
    text = str(lowered("atomic_sum", traits))
    assert "atomic_add" in text and "atomicAdd" not in text


def test_vector_copies_respect_the_traits_lane_limit() -> None:
    def widest_ramp(func: Any) -> int:
        lanes = [0]

        def visit(node: Any) -> None:
            if isinstance(node, tirx.Ramp):
                lanes[0] = max(lanes[0], int(node.lanes))

        tvm_ffi.structural_walk(func.body, visit, order="pre")
        return lanes[0]

    assert widest_ramp(lowered("gemm")) == 8  # fp16 tiles: 8 lanes in 16 bytes
    assert widest_ramp(lowered("gemm", PLAIN)) == 4
    assert widest_ramp(lowered("gemm", GpuTraits(name="narrow", vector_bytes=4))) == 2


def test_traits_refuse_bad_values_by_name() -> None:
    with pytest.raises(ValueError, match=r"GpuTraits\.atomics: expected keys among"):
        GpuTraits(name="x", atomics={"exchange": AtomicCall("f")})
    with pytest.raises(ValueError, match=r"GpuTraits\.max_vector_lanes: expected an int >= 1"):
        GpuTraits(name="x", max_vector_lanes=0)
    with pytest.raises(TypeError, match=r"GpuTraits\.atomics\['add'\]: expected an AtomicCall"):
        GpuTraits(name="x", atomics={"add": "atomicAdd"})  # type: ignore[dict-item]


def test_dynamic_shared_size_and_static_conversion() -> None:
    module = load("gemm")
    func = module.KERNEL(**module.CASES[0]["args"])
    assert dynamic_shared_bytes(func.body) == 2 * (64 * 32 * 2)
    static = make_shared_static(func.body)
    assert dynamic_shared_bytes(static) == 0
    scopes = {str(b.ty.storage_scope) for b in allocations(func.with_body(static)).values()}
    assert "shared" in scopes


def test_a_parallel_loop_over_differently_laid_out_fragments_is_refused() -> None:
    import tl_ir.language as T

    @T.prim_func
    def main(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=32) as _bx:
            x = T.alloc_fragment((8, 16), "float32")
            y = T.alloc_fragment((8, 16), "float32")
            T.annotate_layout({y: lambda i, j: ((i * 16 + j) % 32, (i * 16 + j) // 32)})
            T.copy(A[0, 0], x)
            T.copy(A[0, 0], y)
            for i, j in T.Parallel(8, 16):
                x[i, j] = x[i, j] + y[i, j]
            T.copy(x, B[0, 0])

    with pytest.raises(GpuLoweringError, match="laid out differently"):
        lower_gpu_tile_ops(main.with_body(insert_barriers(main.body)), SHUFFLING)


def test_gpu_passes_follow_the_traits() -> None:
    from tl_passes.gpu import (
        GpuLowerTileOpsPass,
        GpuPlanSharedMemoryPass,
        SharedMemoryModel,
        gpu_passes,
    )

    static = GpuTraits(name="static-gpu", shared_memory=SharedMemoryModel.STATIC)
    passes = gpu_passes(static)
    assert [p.name for p in passes] == [
        "gpu-bind-thread-loops",
        "lower-alloc-var",
        "gpu-pipeline-loops",
        "gpu-infer-layouts",
        "gpu-choose-shared-layouts",
        "gpu-insert-barriers",
        "gpu-lower-tile-ops",
        "gpu-swizzle-shared",
        "gpu-plan-shared-memory",
        "simplify",
        "gpu-finish-async-copies",
        "gpu-matrix-load-addresses",
        "gpu-shared-conditions",
    ]
    (lowering,) = [p for p in passes if isinstance(p, GpuLowerTileOpsPass)]
    assert lowering.traits is static
    (planning,) = [p for p in passes if isinstance(p, GpuPlanSharedMemoryPass)]
    assert planning.static is True
    (dynamic,) = [p for p in gpu_passes(SHUFFLING) if isinstance(p, GpuPlanSharedMemoryPass)]
    assert dynamic.static is False
    with pytest.raises(TypeError, match="gpu_passes: traits must be a GpuTraits, got str"):
        gpu_passes("cuda")  # type: ignore[arg-type]


def test_the_pass_names_itself_and_the_function_in_its_errors() -> None:
    import tvm

    from tl_passes import PassContext
    from tl_passes.gpu import GpuLowerTileOpsPass

    module = load("atomic_sum")
    func = module.KERNEL(**module.CASES[0]["args"]).with_attr("global_symbol", "atomic_sum")
    mod = tvm.IRModule({"atomic_sum": func})
    with pytest.raises(
        GpuLoweringError, match=r"^gpu-lower-tile-ops \(atomic_sum\): T\.atomic_add"
    ):
        GpuLowerTileOpsPass(PLAIN).run(mod, PassContext())
