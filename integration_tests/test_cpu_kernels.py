"""Every kernel of integration_tests/kernels, every case, on targets c and llvm, both adapters.

Each (kernel, compile-time arguments, target) is built once per session and
called through the ``tvm_ffi`` and ``cython`` adapters; cases that differ
only in run-time values (symbolic dims, scalars) share one build.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tl_jit
import tl_jit.language as T
from integration_tests.kernels import ALL_KERNELS, load
from integration_tests.kernels.suite import build_case, build_key, run_case
from tl_backend_api import create_backend_context

TARGETS = ("c", "llvm")
ADAPTERS = ("tvm_ffi", "cython")

CASES = [
    pytest.param(name, index, id=f"{name}-{index}")
    for name in ALL_KERNELS
    for index in range(len(load(name).CASES))
]


@pytest.fixture(scope="session")
def cpu_artifacts(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Build each (kernel, args, target) once; returns ``get(name, case, target) -> Path``."""
    root = tmp_path_factory.mktemp("cpu-artifacts")
    built: dict[str, Path] = {}
    contexts = {kind: create_backend_context(kind, execution_backend="tvm_ffi") for kind in TARGETS}

    def get(name: str, case: dict[str, Any], target: str) -> Path:
        key = build_key(name, case, target)
        if key not in built:
            built[key] = build_case(contexts[target], load(name), case, root / key)
        return built[key]

    return get


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("name", "index"), CASES)
def test_kernel_case_matches_reference_on_both_adapters(
    cpu_artifacts: Any, name: str, index: int, target: str
) -> None:
    module = load(name)
    case = module.CASES[index]
    artifact = cpu_artifacts(name, case, target)
    for adapter in ADAPTERS:
        assert run_case(artifact, module, case, adapter) == [], (name, index, target, adapter)


def rows_and_adapters(row_counts: list[int]) -> list[Any]:
    """``(rows, adapter)`` params, one per row count and adapter."""
    return [
        pytest.param(
            rows,
            adapter,
            id=f"{rows}-{adapter}",
        )
        for rows in row_counts
        for adapter in ADAPTERS
    ]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("rows", "adapter"), rows_and_adapters([0, 1, 2, 33, 200]))
def test_symbolic_dim_called_with_several_sizes_including_an_empty_grid(
    cpu_artifacts: Any, target: str, rows: int, adapter: str
) -> None:
    module = load("symbolic_scale")
    base = module.CASES[0]
    case = {"args": base["args"], "runtime": {**base["runtime"], "M": rows}}
    artifact = cpu_artifacts("symbolic_scale", case, target)
    assert run_case(artifact, module, case, adapter, seed=rows) == [], (rows, adapter)


def test_the_suite_covers_fp16_inputs_ragged_tiles_and_one_block() -> None:
    gemm_cases = load("gemm").CASES
    assert any(c["args"].get("dtype", "float16") == "float16" for c in gemm_cases)
    assert any(c["args"]["M"] % c["args"]["block_M"] for c in gemm_cases)
    single = [c for c in load("symbolic_scale").CASES if c["runtime"]["M"] == 1]
    assert single, "a one-element grid case"


def print_kernel() -> Any:
    import tl_ir.language as T

    @T.prim_func
    def main(A: T.Tensor((2, 3), "float32"), B: T.Tensor((2, 3), "float32")):
        with T.Kernel(1, threads=32) as bx:
            tile = T.alloc_fragment((2, 3), "float32")
            T.copy(A[0, 0], tile)
            T.print(msg="begin 100%")  # TileLang's message alone; % is not a format
            T.print(tile, msg="tile")
            T.print(A[1, 2] + T.float32(bx), msg="scalar")
            T.copy(tile, B[0, 0])
            for i in T.Parallel(3):
                if A[1, i] > T.float32(3.5):  # llvm printed garbage here (printf's varargs)
                    T.print(A[1, i], msg="big")
                    T.print(T.int32(i) - 7, msg="int")

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_print_writes_every_element_to_stdout(
    target: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import numpy as np

    import tl_runtime
    from tl_backend_api import build_artifact

    context = create_backend_context(target)
    kernel = tl_runtime.load(build_artifact(context, print_kernel(), tmp_path / "a", out_idx=-1))
    kernel(np.arange(6, dtype=np.float32).reshape(2, 3))
    lines = capfd.readouterr().out.splitlines()
    assert lines[0] == "begin 100%"
    assert "tile: tile[1, 2] = 5" in lines
    assert "scalar: 5" in lines
    assert sum(line.startswith("tile: tile[") for line in lines) == 6
    assert sorted(line for line in lines if line.startswith("big: ")) == ["big: 4", "big: 5"]
    assert sorted(line for line in lines if line.startswith("int: ")) == ["int: -5", "int: -6"]


def language_kernel() -> Any:
    import tl_ir.language as T

    @T.prim_func
    def main(
        A: T.Tensor((16, 8), "float32"),
        B: T.Tensor((16, 8), "float32"),
        R: T.Tensor((16,), "float32"),
    ):
        with T.Kernel(2, threads=32) as bx:
            loc = T.alloc_local((8,), "float32")
            frag = T.alloc_fragment((8, 8), "float32")
            row = T.alloc_fragment((8,), "float32")
            T.copy(A[bx * 8, 0], frag)
            T.reduce_absmax(frag, row, dim=1)
            T.copy(row, R[bx * 8])
            for i, j in T.Parallel(8, 8):
                frag[i, j] = T.if_then_else(
                    frag[i, j] > 0,
                    T.tanh(frag[i, j]) + T.sigmoid(frag[i, j]),
                    T.exp2(frag[i, j]),
                )
            for i in T.unroll(8):
                loc[i] = T.max(frag[i, 0], T.float32(-1))
            for i, j in T.grid(8, 8):
                frag[i, j] = frag[i, j] + loc[i] * T.float32(0.5)
            n = T.alloc_var("int32", init=0)
            while n < 3:
                n = n + 1
            for j in T.vectorized(8):
                frag[0, j] = frag[0, j] + T.cast(n, "float32")
            T.copy(frag, B[bx * 8, 0])

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_math_loops_and_control_flow_of_the_language(target: str, tmp_path: Path) -> None:
    import numpy as np

    import tl_runtime
    from tl_backend_api import build_artifact

    context = create_backend_context(target)
    artifact = build_artifact(context, language_kernel(), tmp_path / "a", out_idx=[-2, -1])
    a = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
    b, r = tl_runtime.load(artifact)(a)
    f = np.where(a > 0, np.tanh(a) + 1 / (1 + np.exp(-a)), np.exp2(a)).reshape(2, 8, 8)
    f = f + np.maximum(f[:, :, 0], -1)[:, :, None] * 0.5
    f[:, 0, :] += 3
    np.testing.assert_allclose(b, f.reshape(16, 8), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r, np.abs(a).max(axis=1), rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_a_tier2_warp_shuffle_runs_on_the_cpu(target: str, tmp_path: Path) -> None:
    import numpy as np

    import tl_ir.language as T
    import tl_runtime
    from tl_backend_api import build_artifact
    from tl_ir.language import gpu as G

    @T.prim_func
    def main(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding(0)
            A[tx] = G.shfl_xor(A[tx], 1)

    artifact = build_artifact(create_backend_context(target), main, tmp_path / "a")
    a = np.arange(32, dtype=np.float32)
    tl_runtime.load(artifact)(a)
    np.testing.assert_array_equal(a, np.arange(32).reshape(16, 2)[:, ::-1].reshape(32))


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_nested_lowercase_parallel_loops_build_and_run(target: str) -> None:
    # TileLang's fp8 block mean pooling: T.parallel in T.parallel failed to build on
    # llvm ("Nested parallel loop is not supported by threadpool").
    @T.prim_func
    def zero_rows(A: T.Tensor((16, 32), "float32"), lim: T.int32, B: T.Tensor((16, 32), "float32")):
        with T.Kernel(1, threads=128):
            tile = T.alloc_fragment((16, 32), "float32")
            T.copy(A, tile)
            for i in T.parallel(16):
                for j in T.parallel(32):
                    if i >= lim:
                        tile[i, j] = T.float32(0)
            T.copy(tile, B)

    a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    b = np.zeros_like(a)
    tl_jit.compile(zero_rows, target=target)(a, 5, b)
    np.testing.assert_array_equal(b, np.where(np.arange(16)[:, None] >= 5, 0, a))
