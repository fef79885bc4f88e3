"""A legacy ``T.alloc_reducer((1,), ...)`` fed by a 1-D ``T.Parallel`` loop.

Every iteration of ``for i in T.Parallel(N): s[0] += A[i]`` updates the same element.
`cpu-lower-parallel-loops` used to mark that loop vectorized (its body is one store), so
its iterations became vector lanes that all read the same old ``s[0]`` and the store kept
one lane: on ``llvm``, where `cpu-split-vector-loops` cuts the loop into 16-lane chunks,
a sum of 128 ones was 8, and max/min kept one element in 16. The loop now stays serial
when a store writes one element for several iterations of a buffer the body reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm_ffi
from tvm import tirx

import tl_ir.language as T
import tl_runtime
from tl_backend_api import build_artifact, create_backend_context
from tl_codegen_cpu.passes.lower_parallel_loops import lower_parallel_loops
from tl_ir.launch import LOOP_KIND_KEY

TARGETS = ("c", "llvm")


def _reducer_kernel(n: int, threads: int, op: str) -> Any:
    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((1,), T.float32)):  # type: ignore[no-untyped-def, valid-type]
        with T.Kernel(1, threads=threads):
            a_frag = T.alloc_fragment((n,), T.float32)
            T.copy(A, a_frag)
            s = T.alloc_reducer((1,), T.float32, op=op, replication="all")
            if op == "sum":
                T.fill(s, 0.0)
            elif op == "max":
                T.fill(s, -T.infinity(T.float32))
            else:
                T.fill(s, T.infinity(T.float32))
            for i in T.Parallel(n):
                if op == "sum":
                    s[0] += a_frag[i]
                elif op == "max":
                    s[0] = T.max(s[0], a_frag[i])
                else:
                    s[0] = T.min(s[0], a_frag[i])
            T.finalize_reducer(s)
            B[0] = s[0]

    return main


def _run(target: str, func: Any, a: np.ndarray, directory: Path) -> float:
    context = create_backend_context(target)
    kernel = tl_runtime.load(build_artifact(context, func, directory, out_idx=[1]))
    return float(np.asarray(kernel(a))[0])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("n", "threads"), [(128, 128), (256, 32), (16, 1)])
def test_a_scalar_reducer_sums_every_element(
    target: str, n: int, threads: int, tmp_path: Path
) -> None:
    ones = np.ones(n, np.float32)
    assert _run(target, _reducer_kernel(n, threads, "sum"), ones, tmp_path / target) == n


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_a_scalar_reducer_matches_numpy(target: str, op: str, tmp_path: Path) -> None:
    a = np.random.default_rng(1).standard_normal(128).astype(np.float32)
    got = _run(target, _reducer_kernel(128, 128, op), a, tmp_path / target)
    want = {"sum": a.sum(), "max": a.max(), "min": a.min()}[op]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


I = tirx.Var("i", "int32")  # noqa: E741 - the loop index
S = tirx.decl_buffer((1,), "float32", name="S")
X = tirx.decl_buffer((16,), "float32", name="X")


def _kind(body: tirx.Stmt) -> tirx.ForKind:
    loop = tirx.For(I, 0, 16, tirx.ForKind.SERIAL, body, annotations={LOOP_KIND_KEY: "parallel"})
    loops: list[tirx.For] = []
    tvm_ffi.structural_walk(lower_parallel_loops(loop, 16), (tirx.For, loops.append))
    return loops[0].kind


def test_an_update_of_one_element_stays_serial() -> None:
    zero = tirx.IntImm("int32", 0)
    update = tirx.BufferLoad(S, [zero]) + tirx.BufferLoad(X, [I])
    assert _kind(tirx.BufferStore(S, update, [zero])) == tirx.ForKind.SERIAL


def test_an_update_of_each_iterations_own_element_is_vectorized() -> None:
    doubled = tirx.BufferLoad(X, [I]) * tirx.const(2.0, "float32")
    assert _kind(tirx.BufferStore(X, doubled, [I])) == tirx.ForKind.VECTORIZED
