"""The GPU bundle (scripts/gpu-check --prepare / --bundle) without a GPU: a small bundle built
here, its size and contents checked, then its runner started as a GPU node would start it,
in a fresh process against a fake CUDA driver (a ``cuda.bindings.driver`` module that
records launches), up to the launch: wheels installed privately, every artifact loaded by
tl_runtime, every suite kernel launched with its manifest's grid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gpu_bundle_prepare

from tl_codegen_cuda.toolchain import Nvcc

ROOT = Path(__file__).resolve().parents[1]
needs_nvcc = pytest.mark.skipif(Nvcc().executable() is None, reason="nvcc is not installed here")

#: ``cuda.bindings.driver`` for the runner's process: device memory is host bytes, a launch
#: is recorded (one JSON line in $TL_FAKE_CUDA_LOG) and computes nothing.
FAKE_DRIVER = r"""
import ctypes, json, os, types

CUdevice_attribute = types.SimpleNamespace(
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR=75, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR=76)
CUfunction_attribute = types.SimpleNamespace(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES=8)

class CUstream:  # tvm_ffi checks arguments against it when this module imports
    pass
_memory = {}

def _log(record):
    with open(os.environ["TL_FAKE_CUDA_LOG"], "a") as out:
        out.write(json.dumps(record) + "\n")

def cuInit(flags): return (0,)
def cuDeviceGetCount(): return (0, 1)
def cuDeviceGet(ordinal): return (0, "device0")
def cuDevicePrimaryCtxRetain(device): return (0, "context")
def cuDeviceGetAttribute(attribute, device): return (0, 9 if attribute == 75 else 0)
def cuCtxSetCurrent(context): return (0,)
def cuModuleLoadData(image):
    _log({"module": len(image), "elf": bytes(image[:4]) == b"\x7fELF"})
    return (0, image)
def cuModuleGetFunction(module, name): return (0, name.decode())
def cuFuncSetAttribute(function, attribute, value): return (0,)
def cuMemAlloc(nbytes):
    pointer = 4096 * (len(_memory) + 1) + 4096 * 1024 * len(_memory)
    _memory[pointer] = bytearray(nbytes)
    return (0, pointer)
def cuMemcpyHtoD(pointer, host, nbytes):
    _memory[pointer][:nbytes] = ctypes.string_at(host, nbytes)
    return (0,)
def cuMemcpyDtoH(host, pointer, nbytes):
    ctypes.memmove(host, bytes(_memory[pointer][:nbytes]), nbytes)
    return (0,)
def cuMemFree(pointer):
    del _memory[pointer]
    return (0,)
def cuLaunchKernel(function, gx, gy, gz, bx, by, bz, shared, stream, arguments, extra):
    _log({"launch": function, "grid": [gx, gy, gz], "block": [bx, by, bz], "shared": shared,
          "arguments": len(arguments[0])})
    return (0,)
def cuCtxSynchronize(): return (0,)
def cuGetErrorString(err): return (0, b"fake error")
"""

SUITE = ["gemm", "softmax", "two_outputs"]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundle of three suite kernels and the 4096^3 GEMM for sm_90 (runtime wheels only:
    the dependency wheels need the index; this process's environment provides them)."""
    directory = tmp_path_factory.mktemp("bundle") / "b"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    gpu_bundle_prepare.prepare(
        directory,
        arch="sm_90",
        python=version,
        suite=SUITE,
        benchmarks=["gemm_4096"],
        download=False,
        log=lambda line: None,
    )
    return directory


@needs_nvcc
def test_the_bundle_holds_cubins_recipes_wheels_and_its_runner(bundle: Path) -> None:
    from integration_tests.kernels import load

    manifest = json.loads((bundle / "bundle.json").read_text())
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    assert size <= gpu_bundle_prepare.SIZE_LIMIT
    assert manifest["arch"] == "sm_90"
    assert [(e["kernel"], e["case"]) for e in manifest["suite"]] == [
        (name, index) for name in SUITE for index in range(len(load(name).CASES))
    ]
    for entry in [*manifest["suite"], *manifest["benchmarks"]]:
        artifact = json.loads((bundle / entry["artifact"] / "manifest.json").read_text())
        library = bundle / entry["artifact"] / artifact["library"]
        assert library.suffix == ".cubin" and library.read_bytes()[:4] == b"\x7fELF"
        assert artifact["target"]["arch"] == "sm_90"
    assert [b["name"] for b in manifest["benchmarks"]] == ["gemm_4096"]
    assert sorted(p.name for p in (bundle / "recipes").iterdir()) == [
        f"{n}.py" for n in sorted(SUITE)
    ]
    # Recipes are code (no data): nothing but the inputs' recipe and the numpy reference.
    assert not list(bundle.rglob("*.npy"))
    # The runtime distributions of the repository, as pure wheels (download=False: no others).
    present = [p for p in gpu_bundle_prepare.RUNTIME_PACKAGES if (ROOT / "packages" / p).is_dir()]
    assert [w.split("-")[0] for w in manifest["wheels"]] == [p.replace("-", "_") for p in present]
    for wheel in manifest["wheels"]:
        assert wheel.endswith("-py3-none-any.whl"), wheel
        with zipfile.ZipFile(bundle / "wheels" / wheel) as archive:
            names = archive.namelist()
        assert not [n for n in names if n.endswith(".so")], f"{wheel} ships a compiled module"
    with zipfile.ZipFile(bundle / "wheels" / manifest["wheels"][0]) as archive:
        assert "tl_runtime/__init__.py" in archive.namelist()
    assert (bundle / "run.py").read_text() == (
        ROOT / "benchmarks" / "gpu_bundle_run.py"
    ).read_text()


@needs_nvcc
def test_the_runner_installs_loads_and_launches_against_a_fake_driver(
    bundle: Path, tmp_path: Path
) -> None:
    fake = tmp_path / "fake"
    (fake / "cuda" / "bindings").mkdir(parents=True)
    (fake / "cuda" / "__init__.py").write_text("")
    (fake / "cuda" / "bindings" / "__init__.py").write_text("")
    (fake / "cuda" / "bindings" / "driver.py").write_text(FAKE_DRIVER)
    log = tmp_path / "launches.jsonl"
    environment = dict(
        os.environ, PYTHONPATH=str(fake), TL_FAKE_CUDA_LOG=str(log), PYTHONNOUSERSITE="1"
    )
    site = tmp_path / "site"
    target = ["--target", str(site)]
    done = subprocess.run(
        [str(ROOT / "scripts" / "gpu-check"), "--bundle", str(bundle), "--launch-only", *target],
        capture_output=True,
        text=True,
        env=dict(environment, PYTHON=sys.executable),
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert f"gpu-check bundle: tl_runtime from {site / 'tl_runtime'}" in lines, lines
    # The launcher comes from the bundle's wheels too (tl_runtime's or tl_runtime_cuda's).
    [adapter] = [line for line in lines if "cuda_driver adapter from" in line]
    assert f"from {site}/" in adapter and "available=True" in adapter, adapter
    manifest = json.loads((bundle / "bundle.json").read_text())
    suite = len(manifest["suite"])
    assert lines[-1].startswith(
        f"gpu-check bundle: sm_90, suite {suite}/{suite} launched; 1 benchmark kernels loaded"
    ), lines
    records = [json.loads(line) for line in log.read_text().splitlines()]
    modules = [r for r in records if "module" in r]
    assert len(modules) == suite + 1 and all(r["elf"] for r in modules)
    launches = [r for r in records if "launch" in r]
    assert len(launches) >= suite
    # The first GEMM case: 128x128 with 64x64 blocks, 128 threads, the shared memory its
    # manifest asks for.
    import tl_runtime

    spec = tl_runtime.read_manifest(bundle / manifest["suite"][0]["artifact"]).launches[0]
    _grid, _block, shared = spec.resolve({})
    first = launches[0]
    assert first["grid"] == [2, 2, 1] and first["block"] == [128, 1, 1]
    assert first["shared"] == shared > 0


@needs_nvcc
def test_a_bundle_above_the_size_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpu_bundle_prepare, "SIZE_LIMIT", 1024)
    with pytest.raises(gpu_bundle_prepare.BundleError, match="above the 50 MiB limit"):
        gpu_bundle_prepare.prepare(
            tmp_path / "b",
            suite=["elementwise_add"],
            benchmarks=[],
            download=False,
            log=lambda line: None,
        )


def test_a_recipe_that_reads_a_module_global_is_refused() -> None:
    import types

    module = types.ModuleType("integration_tests.kernels.fake")
    exec(
        "import numpy as np\nSCALE = 2\nCASES = [{}]\nTOLERANCE = {}\nOUT_IDX = [-1]\n"
        "def make_inputs(case, rng):\n    return [rng.standard_normal(4).T]\n"
        "def REFERENCE(case, A):\n    return {'B': A * SCALE}\n",
        module.__dict__,
    )
    with pytest.raises(
        gpu_bundle_prepare.BundleError, match=r"REFERENCE uses module globals \['SCALE'\]"
    ):
        gpu_bundle_prepare._recipe_source(module)


class _ReferenceKernel:
    """Stands in for a loaded suite kernel: computes the recipe's reference (``wrong``: off
    by one), so the runner's comparison is checked without a GPU."""

    def __init__(self, artifact: Path, wrong: bool) -> None:
        import gpu_bundle_run

        import tl_runtime

        self.params = tl_runtime.read_manifest(artifact).params
        kernel, _, case = artifact.name.rpartition("-")
        self.recipe = gpu_bundle_run._recipe(artifact.parents[2], kernel)
        self.case = dict(self.recipe.CASES[int(case)])
        self.wrong = wrong

    def __call__(self, *inputs: object) -> object:
        import numpy as np

        expected = self.recipe.REFERENCE(self.case, *inputs)
        names = [p.name for p in self.params]
        out = [names[i % len(names)] for i in self.recipe.OUT_IDX]
        values = [np.asarray(expected[n]) + (1 if self.wrong else 0) for n in out]
        for name, value in expected.items():  # in-place outputs: written into the inputs
            if name not in out:
                target = inputs[[n for n in names if n not in out].index(name)]
                target[...] = np.asarray(value) + (1 if self.wrong else 0)  # type: ignore[index]
        return values[0] if len(values) == 1 else tuple(values)


@needs_nvcc
@pytest.mark.parametrize("wrong", [False, True])
def test_the_runner_compares_every_suite_kernel_with_its_reference(
    bundle: Path, monkeypatch: pytest.MonkeyPatch, wrong: bool
) -> None:
    import gpu_bundle_run

    import tl_runtime

    monkeypatch.setattr(tl_runtime, "load", lambda path, adapter: _ReferenceKernel(path, wrong))
    manifest = json.loads((bundle / "bundle.json").read_text())
    problems = gpu_bundle_run.check_suite(bundle, manifest, launch_only=False)
    if wrong:
        assert len(problems) >= len(manifest["suite"]), problems
        assert all("max abs difference" in line for line in problems), problems
    else:
        assert problems == []
