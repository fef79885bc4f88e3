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
from tl_passes.gpu_insert_barriers import insert_barriers
from tl_passes.gpu_lower_tile_ops import GpuLoweringError, lower_gpu_tile_ops
from tl_passes.gpu_shared_memory import dynamic_shared_bytes, make_shared_static

CUDA = Target({"kind": "cuda", "arch": "sm_80"})


def lowered(name: str, target: Target = CUDA) -> Any:
    module = load(name)
    func = module.KERNEL(**module.CASES[0]["args"])
    return lower_gpu_tile_ops(func.with_body(insert_barriers(func.body)), target)


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


def test_cuda_reduction_uses_warp_shuffles_and_metal_does_not() -> None:
    def shuffles(func: Any) -> int:
        return str(func).count("tvm_warp_shuffle")

    assert shuffles(lowered("softmax")) > 0
    assert shuffles(lowered("softmax", Target({"kind": "metal"}))) == 0


def test_atomics_are_refused_where_the_target_has_none() -> None:
    with pytest.raises(GpuLoweringError, match="not implemented on target 'webgpu'"):
        lowered("atomic_sum", Target({"kind": "webgpu"}))
    assert "atomicAdd" in str(lowered("atomic_sum"))


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
        lower_gpu_tile_ops(main.with_body(insert_barriers(main.body)), CUDA)
