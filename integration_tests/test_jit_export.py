"""``JITKernel.export`` then ``tl_runtime.load`` in a venv holding only tl-runtime,
apache-tvm-ffi and numpy (the deployer's side), for both CPU targets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tl_jit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from integration_tests.kernels import load


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_exported_gemm_runs_with_tl_runtime_alone(
    target: str, runtime_only_python: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))
    module = load("gemm")
    args = {"M": 96, "N": 80, "K": 48, "block_M": 32, "block_N": 32, "block_K": 16}
    args |= {"dtype": "float32", "accum_dtype": "float32"}
    kernel = tl_jit.compile(module.KERNEL(**args), out_idx=[-1], target=target)
    exported = kernel.export(tmp_path / "deployed")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((96, 48), dtype=np.float32)
    b = rng.standard_normal((48, 80), dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    script = textwrap.dedent(
        f"""
        import importlib.util, json, sys
        import numpy as np
        import tl_runtime
        kernel = tl_runtime.load({str(exported)!r})
        a, b = np.load({str(tmp_path / "a.npy")!r}), np.load({str(tmp_path / "b.npy")!r})
        c = kernel(a, b)
        print(json.dumps({{
            "correct": bool(np.allclose(c, a @ b, rtol=1e-3, atol=1e-3)),
            "tvm_importable": importlib.util.find_spec("tvm") is not None,
            "tl_jit_importable": importlib.util.find_spec("tl_jit") is not None,
        }}))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["TL_RUNTIME_CACHE_DIR"] = str(tmp_path / "runtime-cache")
    proc = subprocess.run(
        [str(runtime_only_python), "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report == {"correct": True, "tvm_importable": False, "tl_jit_importable": False}
