"""Bigger CPU sweeps (marked slow; ./scripts/test skips them): larger GEMMs over block
configs and dtypes, and more random shapes than the quick property tests."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tl_runtime
from integration_tests.kernels import load
from integration_tests.test_cpu_kernels import rows_and_adapters
from tl_backend_api import build_artifact, create_backend_context

pytestmark = pytest.mark.slow

# Builds of this module, removed when the process exits.
_SCRATCH = tempfile.TemporaryDirectory(prefix="tl-cpu-sweep-")


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("block", [(32, 64, 16), (64, 64, 32), (128, 128, 64)])
def test_larger_gemms_over_block_configs(target: str, dtype: str, block: Any) -> None:
    M, N, K = 300, 260, 190
    module = load("gemm")
    bm, bn, bk = block
    func = module.KERNEL(
        M=M, N=N, K=K, block_M=bm, block_N=bn, block_K=bk, dtype=dtype, accum_dtype="float32"
    )
    directory = Path(tempfile.mkdtemp(dir=_SCRATCH.name)) / "a"
    kernel = tl_runtime.load(
        build_artifact(create_backend_context(target), func, directory, out_idx=[-1])
    )
    rng = np.random.default_rng(bm + bn + bk)
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    expected = a.astype(np.float32) @ b.astype(np.float32)
    tolerance = 5e-2 if dtype == "float16" else 1e-3
    np.testing.assert_allclose(
        kernel(a, b).astype(np.float32), expected, rtol=tolerance, atol=tolerance
    )


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize(("rows", "adapter"), rows_and_adapters([0, 1, 31, 32, 33, 1000]))
def test_symbolic_rows_sweep(target: str, rows: int, adapter: str) -> None:
    module = load("symbolic_scale")
    base = module.CASES[3]
    case = {"args": base["args"], "runtime": {**base["runtime"], "M": rows}}
    directory = Path(tempfile.mkdtemp(dir=_SCRATCH.name)) / "a"
    build_artifact(
        create_backend_context(target), module.KERNEL(**case["args"]), directory, out_idx=[-1]
    )
    from integration_tests.kernels.suite import run_case

    assert run_case(directory, module, case, adapter) == []
