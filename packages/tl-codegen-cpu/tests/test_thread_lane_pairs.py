"""Lock-step lane loops reading packed operands at ``f // 2`` as loops over pairs of
lanes (`thread_lane_pairs`), and the fallback when no grouping makes the index affine."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm
from tvm import tirx

import tl_ir.language as T
import tl_runtime
from tl_backend_api import build_artifact, create_backend_context, lower_to_sources
from tl_codegen_cpu.lowering.thread_lane_pairs import pair_lane_loops
from tl_codegen_cpu.lowering.thread_lanes import THREAD_PATH_KEY
from tl_codegen_cpu.passes import CpuLowerLaunchPass
from tl_passes import PassContext

N, K = 16, 512
ROWS, THREADS_K, CHUNK = 4, 32, 8
BLOCK_K = THREADS_K * CHUNK


@T.prim_func
def int4_gemv(
    A: T.Tensor((K,), "float32"), B: T.Tensor((N, K // 2), "int8"), C: T.Tensor((N,), "float32")
):
    """C = dequant(B) @ A: two 4-bit values per byte (low nibble first, value - 8), each
    thread staging its bytes and dequantizing them at ``k // 2`` / ``k % 2``; the threads'
    sums meet in a shared row accumulator."""
    with T.Kernel(T.ceildiv(N, ROWS), threads=(ROWS, THREADS_K)) as bn:
        tn = T.get_thread_binding(0)
        tk = T.get_thread_binding(1)
        a_regs = T.alloc_local((CHUNK,), "float32")
        packed = T.alloc_local((CHUNK // 2,), "int8")
        b_regs = T.alloc_local((CHUNK,), "float32")
        row_sum = T.alloc_shared((ROWS,), "float32")
        acc = T.alloc_local((1,), "float32")
        if tk == 0:
            row_sum[tn] = 0
        T.clear(acc)
        for bk in T.serial(K // BLOCK_K):
            for k in T.serial(CHUNK):
                a_regs[k] = A[bk * BLOCK_K + tk * CHUNK + k]
            for j in T.serial(CHUNK // 2):
                packed[j] = B[bn * ROWS + tn, (bk * BLOCK_K + tk * CHUNK) // 2 + j]
            for k in T.serial(CHUNK):
                b_regs[k] = T.Cast(
                    "float32", ((T.Cast("int32", packed[k // 2]) >> (k % 2 * 4)) & 15) - 8
                )
            for k in T.serial(CHUNK):
                acc[0] += a_regs[k] * b_regs[k]
        T.atomic_add(row_sum[tn], acc[0])
        C[bn * ROWS + tn] = row_sum[tn]


def _inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(K).astype(np.float32)
    nibbles = rng.integers(0, 16, size=(N, K), dtype=np.int64)
    packed = (nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)).astype(np.uint8).view(np.int8)
    want = (nibbles - 8).astype(np.float64) @ a.astype(np.float64)
    return a, packed, want


def _paths(func: Any) -> list[str]:
    mod = tvm.IRModule({"main": func})
    lowered = CpuLowerLaunchPass().run(mod, PassContext(target=tvm.target.Target("c")))
    return re.findall(rf'"{re.escape(THREAD_PATH_KEY)}": "([^"]*)"', lowered.script())


def test_the_lock_step_loop_runs_over_pairs_of_lanes() -> None:
    paths = _paths(int4_gemv)
    assert any("as 128 groups of 2 (its // and % by 2 affine)" in p for p in paths), paths
    source = lower_to_sources(create_backend_context("c"), int4_gemv).files["kernel.c"]
    # One vector loop over pairs (proven independent: each pair owns two elements),
    # reading the packed byte at the pair index and each nibble at a constant shift.
    pair = re.search(r"#pragma GCC ivdep\s*for \(int32_t (\w+_pair) = 0; \1 < 128;", source)
    assert pair is not None, source
    assert f"[{pair.group(1)}]) >> 4)" in source, source
    assert f"{pair.group(1)} >> 1" not in source


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_the_paired_gemv_agrees_with_numpy(target: str, tmp_path: Path) -> None:
    a, packed, want = _inputs()
    context = create_backend_context(target)
    artifact = build_artifact(context, int4_gemv, tmp_path / target, out_idx=-1, dump_dir=None)
    got = np.asarray(tl_runtime.load(artifact)(a, packed))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def _vector_loop(extent: int, index_of: Any) -> tuple[Any, Any]:
    f = tirx.Var("f", "int32")
    acc = tirx.decl_buffer((extent,), "float32", name="acc", scope="local")
    src = tirx.decl_buffer((extent,), "float32", name="src", scope="local")
    value = tirx.BufferLoad(acc, [f]) + tirx.BufferLoad(src, [index_of(f)])
    body = tirx.BufferStore(acc, value, [f])
    return f, tirx.For(f, 0, extent, tirx.ForKind.VECTORIZED, body)


def test_a_quartered_index_takes_groups_of_four() -> None:
    _, loop = _vector_loop(64, lambda f: tirx.floordiv(f, 4))
    rewritten, notes = pair_lane_loops(loop)
    assert notes == ["f as 16 groups of 4 (its // and % by 4 affine)"]
    assert isinstance(rewritten.body, tirx.SeqStmt) and len(rewritten.body.seq) == 4
    assert "//" not in rewritten.script()


def test_an_index_no_grouping_makes_affine_stays_and_says_so() -> None:
    _, loop = _vector_loop(64, lambda f: tirx.floordiv(f, 3))
    rewritten, notes = pair_lane_loops(loop)
    assert rewritten.same_as(loop)
    assert notes == ["f keeps a non-affine // or % of its index (scalar on c)"]


def test_serial_and_affine_loops_are_left_alone() -> None:
    _, affine = _vector_loop(64, lambda f: f)
    _, halved = _vector_loop(64, lambda f: tirx.floordiv(f, 2))
    serial = tirx.For(halved.loop_var, 0, 64, tirx.ForKind.SERIAL, halved.body)
    for loop in (affine, serial):
        rewritten, notes = pair_lane_loops(loop)
        assert rewritten.same_as(loop) and notes == []
