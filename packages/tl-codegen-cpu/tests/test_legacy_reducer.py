"""TileLang's GEMV example with the legacy reducer (``T.alloc_reducer(...,
replication="all")``, ``acc[i] += ...`` in a T.Parallel loop, in-place
``T.finalize_reducer(acc)``), on c and llvm against numpy."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import tl_runtime
from integration_tests.builtin_kernels import gemv_alloc_reducer
from tl_backend_api import build_artifact, create_backend_context

TARGETS = ("c", "llvm")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("replication", ["all", "none"])
def test_the_legacy_reducer_gemv_matches_numpy(
    target: str, replication: str, tmp_path: Path
) -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((64, 96)).astype(np.float16)
    x = rng.standard_normal(96).astype(np.float16)
    context = create_backend_context(target)
    func = gemv_alloc_reducer(64, 96, replication=replication)
    kernel = tl_runtime.load(build_artifact(context, func, tmp_path / target, out_idx=[2]))
    o = kernel(a, x)
    expected = a.astype(np.float32) @ x.astype(np.float32)
    np.testing.assert_allclose(o.astype(np.float32), expected, rtol=1e-2, atol=1e-2)
