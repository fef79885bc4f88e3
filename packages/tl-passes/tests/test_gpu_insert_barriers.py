"""Barriers sit between shared writes and reads by other threads, and at the end of a
loop whose next iteration overwrites what this one read."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import tvm_ffi
from tvm import tirx

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import tl_ir.language as T
from integration_tests.kernels import load
from tl_passes.gpu.barriers import insert_barriers, is_barrier


def barriers_in(stmt: Any) -> int:
    found: list[Any] = []
    tvm_ffi.structural_walk(
        stmt, (tirx.Evaluate, lambda e: found.append(e) if is_barrier(e) else None), order="pre"
    )
    return len(found)


def pipelined_loop(stmt: Any) -> Any:
    loops: list[Any] = []
    tvm_ffi.structural_walk(stmt, (tirx.For, loops.append), order="pre")
    return loops[0]


def test_gemm_loop_syncs_before_the_gemm_and_before_the_next_copies() -> None:
    module = load("gemm")
    func = module.KERNEL(**module.CASES[0]["args"])
    body = insert_barriers(func.body)
    loop = pipelined_loop(body)
    stmts = list(loop.body.seq)
    kinds = ["sync" if is_barrier(s) else str(s.value.op.name) for s in stmts]
    assert kinds == ["tl.copy", "tl.copy", "sync", "tl.gemm", "sync"]


def test_no_barrier_without_shared_memory() -> None:
    module = load("elementwise_add")
    func = module.KERNEL(**module.CASES[0]["args"])
    assert barriers_in(insert_barriers(func.body)) == 0


def test_write_after_read_gets_a_barrier() -> None:
    @T.prim_func
    def main(A: T.Tensor((32,), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as _bx:
            s = T.alloc_shared((32,), "float32")
            T.copy(A[0], s)
            T.copy(s, B[0])
            T.fill(s, 0.0)
            T.copy(s, B[0])

    assert barriers_in(insert_barriers(main.body)) == 3


# ---- barriers under conditions ----------------------------------------------------


def barrier_pass(func: Any) -> Any:
    from tl_ir.launch import kernel_launch

    launch = kernel_launch(func)
    return insert_barriers(func.body, list(launch.thread_vars) if launch else [])


def ifs_in(stmt: Any) -> list[Any]:
    found: list[Any] = []
    tvm_ffi.structural_walk(stmt, (tirx.IfThenElse, found.append), order="pre")
    return found


def test_a_uniform_if_holds_the_barrier_between_its_copy_and_the_read() -> None:
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32"), flag: T.int32):
        with T.Kernel(1, threads=128) as _bx:
            S = T.alloc_shared((128,), "float32")
            if flag > 0:
                T.copy(A[0], S)
                for i in T.Parallel(128):
                    B[i] = S[127 - i]

    body = barrier_pass(main)
    (branch,) = ifs_in(body)
    assert barriers_in(branch.then_case) == 1
    assert barriers_in(body) == 1


def test_a_uniform_while_gets_barriers_inside_and_at_the_end_of_its_body() -> None:
    @T.prim_func
    def main(A: T.Tensor((256,), "float32"), B: T.Tensor((128,), "float32"), n: T.int32):
        with T.Kernel(1, threads=128) as _bx:
            S = T.alloc_shared((128,), "float32")
            k = T.alloc_var("int32")
            k = 0
            while k < n:
                T.copy(A[k * 128], S)
                for i in T.Parallel(128):
                    B[i] = B[i] + S[127 - i]
                k = k + 1

    loops: list[Any] = []
    tvm_ffi.structural_walk(barrier_pass(main), (tirx.While, loops.append), order="pre")
    (loop,) = loops
    kinds = ["sync" if is_barrier(s) else type(s).__name__ for s in loop.body.seq]
    # read after write inside, and the next iteration's copy after this one's read
    assert kinds.count("sync") == 2 and kinds[-1] == "sync"


def test_a_thread_dependent_if_is_split_at_its_barrier() -> None:
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _bx:
            tx = T.get_thread_binding(0)
            S = T.alloc_shared((128,), "float32")
            if tx < 64:
                S[tx] = A[tx] * 2.0
                B[tx] = S[63 - tx]

    body = barrier_pass(main)
    branches = ifs_in(body)
    assert len(branches) == 2  # if c: write; sync; if c: read
    assert all(barriers_in(b) == 0 for b in branches)
    assert barriers_in(body) == 1


def test_thread_dependence_flows_through_local_variables() -> None:
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _bx:
            tx = T.get_thread_binding(0)
            limit = T.alloc_var("int32")
            limit = tx + 1
            S = T.alloc_shared((128,), "float32")
            if limit < 65:
                S[tx] = A[tx]
                B[tx] = S[63 - tx]

    assert len(ifs_in(barrier_pass(main))) == 2  # split: the condition varies by thread


def test_a_barrier_in_a_thread_dependent_while_is_refused() -> None:
    from tl_passes.gpu import GpuLoweringError

    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _bx:
            tx = T.get_thread_binding(0)
            k = T.alloc_var("int32")
            k = tx
            S = T.alloc_shared((128,), "float32")
            while k < 128:
                S[tx] = A[k]
                B[tx] = S[127 - tx]
                k = k + 128

    with pytest.raises(GpuLoweringError, match=r"inside `while .*differs between threads"):
        barrier_pass(main)


def test_a_split_if_must_not_rewrite_what_its_condition_reads() -> None:
    from tl_passes.gpu import GpuLoweringError

    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _bx:
            tx = T.get_thread_binding(0)
            flag = T.alloc_var("int32")
            flag = tx
            S = T.alloc_shared((128,), "float32")
            if flag < 64:
                S[tx] = A[tx]
                flag = 100
                B[tx] = S[63 - tx]

    with pytest.raises(GpuLoweringError, match=r"reads \['flag'\], which the branch writes"):
        barrier_pass(main)
