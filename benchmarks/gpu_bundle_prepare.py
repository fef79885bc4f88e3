"""Build a GPU bundle on a build machine: the kernels compiled for one arch, the inputs'
recipes and the runtime's wheels, for a GPU node with no package index and no toolchain.

Run: scripts/gpu-check --prepare DIR [--arch sm_90] [--python 3.12]
     (or .venv/bin/python benchmarks/gpu_bundle_prepare.py DIR ...)

What DIR holds (at most `SIZE_LIMIT` bytes; the build stops with an error above it):

* ``bundle.json``: the arch, the Python version, the execution backend the
  artifacts were built with, the wheels to install, and one entry per
  kernel: its artifact directory and its recipe (suite kernels: kernel
  module, case, seed; benchmark kernels: kind and sizes);
* ``artifacts/suite/<kernel>-<case>/``: every case of integration_tests/kernels,
  and ``artifacts/bench/<name>/``: fp16 GEMM 4096^3 and flash attention
  (batch 4, 16 heads, sequence 2048, head dim 64 and 128, causal and not),
  each a tl-runtime artifact holding a cubin for the arch;
* ``recipes/<kernel>.py``: each suite kernel module's ``CASES``,
  ``TOLERANCE``, ``OUT_IDX``, ``make_inputs`` and ``REFERENCE`` (numpy only:
  the node regenerates the inputs from the seed; no data is shipped), checked
  here against the module they come from;
* ``wheels/``: tl-runtime and tl-runtime-cuda (the CUDA launcher) as
  pure-Python wheels, plus apache-tvm-ffi, filelock, platformdirs (with their
  dependencies) and numpy downloaded as binary wheels for the Python version
  and ``manylinux_2_28_x86_64``. The pure tl-runtime wheel carries no Cython
  launcher (built wheels ship one compiled for the build machine's Python
  only); CUDA artifacts launch through tl-runtime-cuda's pure-Python
  ``cuda_driver`` adapter, which needs none;
* ``run.py``: the runner (``benchmarks/gpu_bundle_run.py``), which
  ``scripts/gpu-check --bundle DIR`` starts with the node's Python.
"""

from __future__ import annotations

import argparse
import builtins
import dataclasses
import dis
import inspect
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

#: The most a bundle may hold, in bytes (50 MiB).
SIZE_LIMIT = 50 * 1024 * 1024
#: The runtime distributions shipped as wheels, where the repository has them.
RUNTIME_PACKAGES = ("tl-runtime", "tl-runtime-cuda")
#: Third-party wheels the runtime needs on the node, downloaded with their dependencies
#: (torch and cuda-bindings are the node's own). numpy is installed on the node only
#: where it has none.
DEPENDENCIES = ("apache-tvm-ffi==0.1.15.post2", "filelock>=3.12", "platformdirs>=3")
OPTIONAL_DEPENDENCIES = {"numpy": "numpy>=1.24"}
PLATFORM = "manylinux_2_28_x86_64"
BUNDLE_FORMAT = 1


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """One timed kernel of the bundle: ``kind`` ``gemm`` (m, n, k) or ``attention``
    (batch, heads, seq_len, dim, causal)."""

    name: str
    kind: str
    sizes: dict[str, Any]


BENCHMARKS = (
    Benchmark("gemm_4096", "gemm", {"m": 4096, "n": 4096, "k": 4096}),
    *(
        Benchmark(
            f"attention_d{dim}{'_causal' if causal else ''}",
            "attention",
            {"batch": 4, "heads": 16, "seq_len": 2048, "dim": dim, "causal": causal},
        )
        for dim in (64, 128)
        for causal in (False, True)
    ),
)


class BundleError(RuntimeError):
    """The bundle cannot be built (the message says which step and why)."""


def _cuda_context(arch: str) -> Any:
    """The cuda backend context that builds cubins (spec ``cubin``, formerly ``tvm_ffi``)
    on a machine without a GPU.

    That spec's availability probe asks whether its artifacts can *run* here (a GPU and
    cuda-python); building one needs only nvcc. So the target, host and backend are
    resolved as usual (through the always-available ``source`` spec) and the cubin spec
    is put in its place, its run-here probe not asked.
    """
    from tl_backend_api import create_backend_context

    context = create_backend_context({"kind": "cuda", "arch": arch}, execution_backend="source")
    specs = {spec.name: spec for spec in context.backend.execution_backends}
    for name in ("cubin", "tvm_ffi"):
        if name in specs and specs[name].enable_device_compile:
            return type(context)(
                backend=context.backend,
                target=context.target,
                target_host=context.target_host,
                execution_backend=specs[name],
            )
    raise BundleError(f"the cuda backend has no cubin-building execution backend: {sorted(specs)}")


def _globals_read(code: CodeType) -> set[str]:
    """The global names ``code`` (and the code nested in it) reads."""
    names = {
        str(i.argval)
        for i in dis.get_instructions(code)
        if i.opname in {"LOAD_GLOBAL", "LOAD_NAME"}
    }
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            names |= _globals_read(constant)
    return names


def _recipe_source(module: ModuleType) -> str:
    """A numpy-only module text with ``module``'s CASES, TOLERANCE, OUT_IDX, make_inputs and
    REFERENCE (the kernel itself, which needs tl_ir, stays behind)."""
    lines = [
        f'"""Inputs and numpy reference of integration_tests/kernels/{module.__name__.rsplit(".", 1)[-1]}'
        '.py (copied by gpu_bundle_prepare)."""',
        "from typing import Any",
        "",
        "import numpy as np",
        "",
        f"CASES = {module.CASES!r}",
        f"TOLERANCE = {module.TOLERANCE!r}",
        f"OUT_IDX = {list(module.OUT_IDX)!r}",
        "",
    ]
    for name in ("make_inputs", "REFERENCE"):
        function = getattr(module, name)
        unknown = _globals_read(function.__code__) - {"np", "Any"} - set(dir(builtins))
        if unknown:
            raise BundleError(
                f"{module.__name__}.{name} uses module globals {sorted(unknown)}: the recipe "
                "copies only make_inputs and REFERENCE; inline them"
            )
    for name in ("make_inputs", "REFERENCE"):
        lines += [inspect.getsource(getattr(module, name)), ""]
    return "\n".join(lines)


def _check_recipe(path: Path, module: ModuleType) -> None:
    """The copied recipe makes the same inputs and reference as ``module`` for every case."""
    import numpy as np

    namespace: dict[str, Any] = {"__name__": f"recipe_{path.stem}"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    for index, case in enumerate(module.CASES):
        ours = namespace["make_inputs"](dict(case), np.random.default_rng(0))
        theirs = module.make_inputs(dict(case), np.random.default_rng(0))
        same = len(ours) == len(theirs) and all(
            np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(ours, theirs, strict=True)
        )
        if not same:
            raise BundleError(f"recipe {path.name}: case {index}'s inputs differ from the module's")
        expected = module.REFERENCE(dict(case), *[np.copy(x) for x in theirs])
        got = namespace["REFERENCE"](dict(case), *[np.copy(x) for x in ours])
        if sorted(got) != sorted(expected) or not all(
            np.array_equal(got[k], expected[k], equal_nan=True) for k in expected
        ):
            raise BundleError(f"recipe {path.name}: case {index}'s reference differs")


def _pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", *args, "--disable-pip-version-check", "-q"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BundleError(f"{' '.join(command)} failed:\n{done.stderr}{done.stdout}")


def build_wheels(directory: Path, python: str, download: bool = True) -> dict[str, Any]:
    """The runtime's wheels into ``directory``: the runtime packages as pure wheels (built
    here, offline) and, when ``download``, the dependencies as binary wheels for
    ``python`` from the package index.

    Returns:
        ``{"wheels": [names always installed], "optional": {module: wheel name}}``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    environment = dict(os.environ, TL_RUNTIME_PURE_WHEEL="1")
    for package in RUNTIME_PACKAGES:
        source = ROOT / "packages" / package
        if not (source / "pyproject.toml").is_file():
            continue
        command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation"]
        command += ["--no-deps", "--no-index", "--disable-pip-version-check", "-w", str(directory)]
        done = subprocess.run(
            [*command, str(source)], capture_output=True, text=True, env=environment, check=False
        )
        if done.returncode != 0:
            raise BundleError(f"building the {package} wheel failed:\n{done.stderr}{done.stdout}")
    runtime = sorted(p.name for p in directory.glob("*.whl"))
    optional: dict[str, str] = {}
    if download:
        target = ["--only-binary=:all:", "--python-version", python, "--platform", PLATFORM]
        before = set(directory.glob("*.whl"))
        # With their own dependencies (apache-tvm-ffi needs typing-extensions).
        _pip("download", *target, "-d", str(directory), *DEPENDENCIES)
        runtime += sorted(p.name for p in set(directory.glob("*.whl")) - before)
        for module, requirement in OPTIONAL_DEPENDENCIES.items():
            before = set(directory.glob("*.whl"))
            _pip("download", *target, "--no-deps", "-d", str(directory), requirement)
            [wheel] = sorted(set(directory.glob("*.whl")) - before) or [None]
            if wheel is not None:
                optional[module] = wheel.name
    return {"wheels": runtime, "optional": optional}


def _size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def prepare(
    directory: Path,
    *,
    arch: str = "sm_90",
    python: str = "3.12",
    suite: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    download: bool = True,
    log: Any = print,
) -> Path:
    """Build the bundle into ``directory`` (created; must be empty or absent).

    Args:
        arch: the GPU arch the cubins are for (``sm_90`` for H100/H200).
        python: the node's Python version the dependency wheels are for.
        suite: suite kernel names to include (default: all of integration_tests/kernels).
        benchmarks: `BENCHMARKS` names to include (default: all).
        download: fetch the dependency wheels from the index (False: runtime wheels
            only; the node must already have the dependencies).
        log: where progress lines go.

    Raises:
        BundleError: a step failed, or the bundle exceeds `SIZE_LIMIT`.
        ValueError: an unknown suite kernel or benchmark name.
    """
    from integration_tests.kernels import ALL_KERNELS, load
    from integration_tests.kernels.suite import build_case
    from tl_backend_api import build_artifact

    suite = list(ALL_KERNELS) if suite is None else list(suite)
    chosen = list(BENCHMARKS) if benchmarks is None else [_benchmark(n) for n in benchmarks]
    for name in suite:
        if name not in ALL_KERNELS:
            raise ValueError(f"suite: expected names from {ALL_KERNELS}, got {name!r}")
    if directory.exists() and any(directory.iterdir()):
        raise BundleError(f"{directory} is not empty: give a new or empty directory")
    directory.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    context = _cuda_context(arch)
    entries: list[dict[str, Any]] = []
    (directory / "recipes").mkdir()
    for name in suite:
        module = load(name)
        recipe = directory / "recipes" / f"{name}.py"
        recipe.write_text(_recipe_source(module))
        _check_recipe(recipe, module)
        for index, case in enumerate(module.CASES):
            relative = f"artifacts/suite/{name}-{index}"
            build_case(context, module, case, directory / relative)
            entries.append({"artifact": relative, "kernel": name, "case": index, "seed": 0})
        log(f"gpu-check prepare: {name}: {len(module.CASES)} cases built")
    benches: list[dict[str, Any]] = []
    for bench in chosen:
        func, out_idx = _benchmark_program(bench)
        relative = f"artifacts/bench/{bench.name}"
        build_artifact(context, func, directory / relative, out_idx=out_idx)
        benches.append(
            {"artifact": relative, "name": bench.name, "kind": bench.kind, **bench.sizes}
        )
        log(f"gpu-check prepare: {bench.name} built")
    wheels = build_wheels(directory / "wheels", python, download)
    shutil.copyfile(ROOT / "benchmarks" / "gpu_bundle_run.py", directory / "run.py")
    manifest = {
        "format": BUNDLE_FORMAT,
        "arch": arch,
        "python": python,
        "execution_backend": context.execution_backend.name,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **wheels,
        "suite": entries,
        "benchmarks": benches,
    }
    (directory / "bundle.json").write_text(json.dumps(manifest, indent=1) + "\n")
    size = _size(directory)
    if size > SIZE_LIMIT:
        raise BundleError(f"the bundle holds {size / 2**20:.1f} MiB, above the 50 MiB limit")
    log(
        f"gpu-check prepare: {directory}: {len(entries)} suite and {len(benches)} benchmark "
        f"kernels for {arch}, wheels for Python {python}, {size / 2**20:.1f} MiB, "
        f"{time.perf_counter() - started:.0f} s"
    )
    return directory


def _benchmark(name: str) -> Benchmark:
    for bench in BENCHMARKS:
        if bench.name == name:
            return bench
    raise ValueError(
        f"benchmarks: expected names from {[b.name for b in BENCHMARKS]}, got {name!r}"
    )


def _benchmark_program(bench: Benchmark) -> tuple[Any, list[int]]:
    import gpu_programs

    if bench.kind == "gemm":
        func, out_idx, _ = gpu_programs.gemm_program(**bench.sizes)
    else:
        func, out_idx, _ = gpu_programs.attention_program(**bench.sizes)
    return func, out_idx


def main(argv: Sequence[str] | None = None) -> int:
    """The ``--prepare`` command line; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--python", default="3.12")
    parser.add_argument("--kernels", nargs="*", default=None, help="suite kernels (default all)")
    parser.add_argument("--benchmarks", nargs="*", default=None, help="default all")
    args = parser.parse_args(argv)
    try:
        prepare(
            args.directory,
            arch=args.arch,
            python=args.python,
            suite=args.kernels,
            benchmarks=args.benchmarks,
        )
    except (BundleError, ValueError) as exc:
        print(f"gpu-check prepare: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
