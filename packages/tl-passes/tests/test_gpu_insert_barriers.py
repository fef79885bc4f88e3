"""Barriers sit between shared writes and reads by other threads, and at the end of a
loop whose next iteration overwrites what this one read."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

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
