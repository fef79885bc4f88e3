"""Deployment: an artifact made in the full environment runs in a venv holding only
tl-runtime, apache-tvm-ffi and numpy (no tvm, no other tl_* package)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages" / "tl-runtime" / "tests"))

import runtime_kernels


def test_artifact_runs_with_tl_runtime_alone(runtime_only_python: Path, tmp_path: Path) -> None:
    # The build machine: export; the deployer: copy the directory.
    built = runtime_kernels.cached_artifact("padd", out_idx=(2,))
    deployed = tmp_path / "deployed-padd"
    shutil.copytree(built, deployed)
    script = textwrap.dedent(
        f"""
        import importlib.util, json, os, sys
        import numpy as np
        import tl_runtime
        from tl_runtime import context
        kernel = tl_runtime.load({str(deployed)!r})
        a = np.random.default_rng(0).random(65536, dtype=np.float32)
        b = np.random.default_rng(1).random(65536, dtype=np.float32)
        c = kernel(a, b)
        print(json.dumps({{
            "correct": bool(np.allclose(c, a + b)),
            "threads": context.last_launch_threads(),
            "cpus": os.cpu_count(),
            "tvm_importable": importlib.util.find_spec("tvm") is not None,
            "other_tl": sorted(m for m in sys.modules
                               if m.startswith("tl_")
                               and not m.startswith(("tl_runtime", "tl_rt_"))),
            "tvm_loaded": "tvm" in sys.modules,
            "runtime_file": tl_runtime.__file__,
        }}))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["TL_RUNTIME_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run(
        [str(runtime_only_python), "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["correct"]
    assert not report["tvm_importable"] and not report["tvm_loaded"]
    assert report["other_tl"] == []
    assert str(runtime_only_python.parent.parent) in report["runtime_file"]
    if (report["cpus"] or 1) >= 2:
        assert report["threads"] >= 2


def test_wheel_ships_the_cython_launcher(runtime_only_python: Path, tmp_path: Path) -> None:
    """tl-runtime installed from its built wheel runs the cython adapter with no C compiler
    on PATH and no Cython: the launcher was compiled when the wheel was built."""
    built = runtime_kernels.cached_artifact("vadd_elem")  # element-aligned: no copies
    deployed = tmp_path / "deployed-vadd"
    shutil.copytree(built, deployed)
    script = textwrap.dedent(
        f"""
        import importlib.util, json, shutil
        import numpy as np
        import tl_runtime
        from tl_runtime.adapters import cython_adapter
        kernel = tl_runtime.load({str(deployed)!r}, adapter="cython")
        a = np.ones(1024, dtype=np.float32)
        c = np.zeros(1024, dtype=np.float32)
        kernel(a, a, c)
        print(json.dumps({{
            "correct": bool((c == 2).all()),
            "launcher": cython_adapter.launcher_extension().__file__,
            "compiler": [shutil.which(n) for n in ("cc", "gcc", "clang")],
            "cython": importlib.util.find_spec("Cython") is not None,
            "torch": importlib.util.find_spec("torch") is not None,
        }}))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "CC")}
    env["PATH"] = str(runtime_only_python.parent)  # the venv's bin: no compiler
    env["TL_RUNTIME_CACHE_DIR"] = str(tmp_path / "cache")  # no launcher built before
    env.pop("TL_RUNTIME_LAUNCHER", None)
    proc = subprocess.run(
        [str(runtime_only_python), "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["correct"]
    assert report["compiler"] == [None, None, None] and not report["cython"]
    assert not report["torch"]  # and tl-runtime ran without torch
    assert report["launcher"].startswith(str(runtime_only_python.parent.parent))


def test_a_deploy_box_adds_the_launcher_of_its_device(
    runtime_only_python: Path, tmp_path: Path
) -> None:
    """tl-runtime-cuda installs beside tl-runtime alone (no tvm, no compiler package) and
    registers its adapter; without cuda-python its probe says what is missing."""
    from tl_backend_api import build_artifact, create_backend_context

    launcher = Path(__file__).resolve().parents[1] / "packages" / "tl-runtime-cuda"
    install = [
        str(runtime_only_python),
        "-m",
        "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
    ]
    subprocess.run([*install, str(launcher)], check=True, capture_output=True, timeout=600)
    context = create_backend_context({"kind": "cuda", "arch": "sm_80"}, execution_backend="source")
    artifact = build_artifact(context, _scale_kernel(), tmp_path / "scale", out_idx=[-1])
    script = textwrap.dedent(
        f"""
        import importlib.util, json, sys
        import tl_runtime
        report = {{"keys": sorted(tl_runtime.adapter_keys())}}
        adapter = tl_runtime.get_adapter("cuda_driver")
        report["module"] = adapter.__module__
        report["available"] = bool(adapter.probe())
        report["reason"] = adapter.probe().reason
        try:
            tl_runtime.load({str(artifact)!r})
        except tl_runtime.SourceOnlyArtifactError as exc:
            report["source_only"] = str(exc)
        try:
            tl_runtime.load({str(artifact)!r}, adapter="cuda_driver")
        except tl_runtime.AdapterUnavailableError as exc:
            report["unavailable"] = str(exc)
        report["tvm_importable"] = importlib.util.find_spec("tvm") is not None
        report["other_tl"] = sorted(
            m for m in sys.modules if m.startswith("tl_") and not m.startswith("tl_runtime")
        )
        print(json.dumps(report))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["TL_RUNTIME_CACHE_DIR"] = str(tmp_path / "cache")
    try:
        proc = subprocess.run(
            [str(runtime_only_python), "-c", script],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    finally:  # the session's runtime-only venv stays what the other tests expect
        subprocess.run(
            [*install[:3], "uninstall", "-q", "-y", "tl-runtime-cuda"],
            check=True,
            capture_output=True,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["keys"] == ["cuda_driver", "cython", "tvm_ffi"]
    assert report["module"] == "tl_runtime_cuda.adapter"
    assert not report["available"] and "cuda-python is not installed" in report["reason"]
    assert "holds source only" in report["source_only"]
    assert "'cubin' or 'nvrtc'" in report["source_only"]
    assert "cuda-python is not installed" in report["unavailable"]
    assert not report["tvm_importable"] and report["other_tl"] == []


def _scale_kernel() -> object:
    import tl_ir.language as T

    @T.prim_func
    def scale(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] * 2.0

    return scale
