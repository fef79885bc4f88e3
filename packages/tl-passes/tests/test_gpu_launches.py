"""Consecutive ``T.Kernel`` launches in one prim_func: every GPU pass handles each launch
as its own kernel (threads, fragment layouts, barriers, shared memory), in program order."""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx
from tvm.target import Target

import tl_ir.language as T
from tl_ir import ops as tile
from tl_passes.gpu import (
    DYNAMIC_SHARED_ATTR,
    KERNEL_SHARED_ATTR,
    PORTABLE_TRAITS,
    gpu_passes,
    kernel_functions,
)
from tl_passes.gpu.layout import LAYOUTS_ATTR
from tl_passes.pipeline import pipeline_from_passes


def two_kernels() -> Any:
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            S = T.alloc_shared((64,), "float32")
            acc = T.alloc_fragment((64,), "float32")
            T.copy(A[bx * 64], S)
            T.copy(S, acc)
            T.copy(acc, B[bx * 64])
        with T.Kernel(1, threads=32) as _:
            S2 = T.alloc_shared((128,), "float32")
            acc2 = T.alloc_fragment((128,), "float32")
            T.copy(B, S2)
            T.copy(S2, acc2)
            T.copy(acc2, B)

    return main


def lowered() -> Any:
    mod = tvm.IRModule({"main": two_kernels()})
    pipeline = pipeline_from_passes("gpu-test", gpu_passes(PORTABLE_TRAITS))
    return pipeline.run(mod, Target({"kind": "cuda", "arch": "sm_80"}))["main"]


def test_kernel_functions_splits_a_prim_func_at_its_launches() -> None:
    pieces = kernel_functions(two_kernels())
    assert len(pieces) == 2
    for root, piece in pieces:
        assert piece.body.same_as(root)
    single = kernel_functions(pieces[0][1])
    assert len(single) == 1 and single[0][1].same_as(pieces[0][1])


def test_each_launch_is_lowered_with_its_own_threads_layouts_and_shared_memory() -> None:
    func = lowered()
    assert [int(size) for size in func.attrs[KERNEL_SHARED_ATTR]] == [256, 512]
    assert int(func.attrs[DYNAMIC_SHARED_ATTR]) == 512
    layouts = func.attrs[LAYOUTS_ATTR]
    # 64 elements over 64 threads, 128 over 32: each launch's own block size.
    assert str(layouts["acc"]) == "partitioned vector=1 local=1"
    assert str(layouts["acc2"]) == "partitioned vector=4 local=4"
    ops: list[Any] = []
    tvm_ffi.structural_walk(
        func.body, (tirx.Evaluate, lambda e: ops.append(e) if tile.is_tile_op(e.value) else None)
    )
    assert ops == [], "no tile op is left in either launch"
    assert len(kernel_functions(func)) == 2
