"""Run a GPU bundle on a GPU node: install its wheels privately, check every suite kernel
against numpy, time GEMM and flash attention against torch, print one summary line.

Run: scripts/gpu-check --bundle DIR [--repeats 20] [--target SITE] [--launch-only]
     (or python3 DIR/run.py DIR ...; this file is the bundle's run.py)

Needs only what a GPU node has: Python (the version the bundle was prepared
for), torch with CUDA, cuda-bindings (``cuda.bindings.driver``) and numpy,
no package index, no apache-tvm, no compiler. Steps:

1. ``pip install --no-index --no-deps --target SITE`` the bundle's wheels
   (tl-runtime, tl-runtime-cuda and their dependencies; numpy only where the
   node has none)
   into a private directory (default ``DIR/.site-<python>``; reused when it
   holds the same wheels), which goes first on ``sys.path``. Without pip the
   wheels are unpacked there (they are zip archives).
2. Every suite kernel: its artifact loaded with ``tl_runtime.load(...,
   adapter="cuda_driver")``, its inputs made from the recipe and the seed
   (numpy arrays: the adapter copies them to the device and back), the
   outputs compared with the recipe's numpy reference at its tolerance.
3. Benchmarks, on CUDA tensors with CUDA events (warmup, then the median of
   ``--repeats`` single-call timings): the fp16 GEMM against ``torch.matmul``,
   flash attention against ``torch.nn.functional.scaled_dot_product_attention``;
   each result checked against torch first. A time budget (``--budget``,
   default 420 s) skips what is left when it runs out, and says so.

``--launch-only`` stops at the launch: suite kernels are loaded and called
once (nothing compared), benchmark artifacts loaded; for a fake CUDA driver
(the tests) or a first smoke run. The exit status is 0 when every check passed.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ADAPTER = "cuda_driver"


def install(bundle: Path, manifest: dict[str, Any], target: Path) -> Path:
    """Install the bundle's wheels into ``target`` (reused when it holds the same ones) and
    put it first on ``sys.path``."""
    wheels = [bundle / "wheels" / name for name in manifest["wheels"]]
    for module, wheel in manifest.get("optional", {}).items():
        if importlib.util.find_spec(module) is None:
            wheels.append(bundle / "wheels" / wheel)
    stamp = target / ".bundle-wheels"
    wanted = "\n".join(sorted(w.name for w in wheels))
    if not (stamp.is_file() and stamp.read_text() == wanted):
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        command = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps"]
        command += ["--disable-pip-version-check", "-q", "--target", str(target)]
        done = subprocess.run(
            [*command, *map(str, wheels)], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            if "No module named pip" not in done.stderr:
                raise SystemExit(f"gpu-check bundle: pip failed:\n{done.stderr}{done.stdout}")
            for wheel in wheels:  # no pip: a wheel is a zip of its installed files
                _unpack(wheel, target)
        stamp.write_text(wanted)
    sys.path.insert(0, str(target))
    importlib.invalidate_caches()
    return target


def _unpack(wheel: Path, target: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)
    for data in target.glob("*.data"):
        for kind in ("purelib", "platlib"):
            if (data / kind).is_dir():
                shutil.copytree(data / kind, target, dirs_exist_ok=True)
        shutil.rmtree(data)


def _recipe(bundle: Path, kernel: str) -> ModuleType:
    path = bundle / "recipes" / f"{kernel}.py"
    spec = importlib.util.spec_from_file_location(f"bundle_recipe_{kernel}", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _outputs(kernel: Any, result: Any, inputs: list[Any], out_idx: list[int]) -> dict[str, Any]:
    """Parameter name -> value after the call: returned outputs, and the inputs (which a
    kernel may update in place)."""
    names = [p.name for p in kernel.params]
    returned = [i % len(names) for i in out_idx]
    values = [] if not returned else [result] if len(returned) == 1 else list(result)
    got = dict(zip((names[i] for i in returned), values, strict=True))
    remaining = iter(inputs)
    for position, name in enumerate(names):
        if position not in returned:
            got.setdefault(name, next(remaining))
    return got


def check_suite(bundle: Path, manifest: dict[str, Any], launch_only: bool) -> list[str]:
    """Run every suite kernel; returns one line per mismatch (empty: all match)."""
    import numpy as np

    import tl_runtime

    recipes: dict[str, ModuleType] = {}
    problems = []
    for entry in manifest["suite"]:
        label = f"{entry['kernel']}-{entry['case']}"
        recipe = recipes.get(entry["kernel"]) or _recipe(bundle, entry["kernel"])
        recipes[entry["kernel"]] = recipe
        case = dict(recipe.CASES[entry["case"]])
        try:
            kernel = tl_runtime.load(bundle / entry["artifact"], adapter=ADAPTER)
            inputs = list(recipe.make_inputs(case, np.random.default_rng(entry["seed"])))
            copies = [np.copy(x) if isinstance(x, np.ndarray) else x for x in inputs]
            result = kernel(*inputs)
        except Exception as exc:  # report every kernel, then fail
            problems.append(f"{label}: {type(exc).__name__}: {exc}")
            continue
        if launch_only:
            continue
        got = _outputs(kernel, result, inputs, list(recipe.OUT_IDX))
        for name, reference in recipe.REFERENCE(case, *copies).items():
            reference = np.asarray(reference)
            actual = np.asarray(got[name])
            tolerance = float(recipe.TOLERANCE.get(str(reference.dtype), 1e-5))
            if actual.shape != reference.shape:
                problems.append(f"{label}: {name} shape {actual.shape}, expected {reference.shape}")
            elif not np.allclose(
                actual.astype(np.float64),
                reference.astype(np.float64),
                atol=tolerance,
                rtol=tolerance,
                equal_nan=True,
            ):
                worst = float(np.max(np.abs(actual.astype(np.float64) - reference)))
                problems.append(f"{label}: {name} max abs difference {worst} > {tolerance}")
    return problems


def median_ms(run: Callable[[], Any], repeats: int, warmup: int = 3) -> float:
    """The median of ``repeats`` CUDA-event timings of one ``run()``, after ``warmup``."""
    import torch

    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def _tensor(value: Any) -> Any:
    import torch

    return value if isinstance(value, torch.Tensor) else torch.from_dlpack(value)


def time_benchmark(bundle: Path, bench: dict[str, Any], repeats: int) -> tuple[str, str, float]:
    """Check and time one benchmark; returns (its line, its summary cell, ours/theirs speed)."""
    import torch
    import torch.nn.functional as F

    import tl_runtime

    kernel = tl_runtime.load(bundle / bench["artifact"], adapter=ADAPTER)
    generator = torch.Generator(device="cuda").manual_seed(0)

    def randn(*shape: int) -> Any:
        return torch.randn(*shape, device="cuda", dtype=torch.float16, generator=generator)

    if bench["kind"] == "gemm":
        m, n, k = bench["m"], bench["n"], bench["k"]
        a, b = randn(m, k), randn(k, n)
        expected = torch.matmul(a.float(), b.float())
        got = _tensor(kernel(a, b)).float()
        error = ((got - expected).abs().max() / expected.abs().max()).item()
        ours = median_ms(lambda: kernel(a, b), repeats)
        theirs = median_ms(lambda: torch.matmul(a, b), repeats)
        flops, versus, limit = 2.0 * m * n * k, "torch.matmul", 2e-2
    else:
        shape = (bench["batch"], bench["seq_len"], bench["heads"], bench["dim"])
        q, k_, v = randn(*shape), randn(*shape), randn(*shape)
        causal = bool(bench["causal"])

        def sdpa() -> Any:
            return F.scaled_dot_product_attention(
                q.transpose(1, 2), k_.transpose(1, 2), v.transpose(1, 2), is_causal=causal
            )

        expected = sdpa().transpose(1, 2).float()
        got = _tensor(kernel(q, k_, v)).float()
        error = (got - expected).abs().max().item()
        ours = median_ms(lambda: kernel(q, k_, v), repeats)
        theirs = median_ms(sdpa, repeats)
        b, s, h, d = shape
        flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
        versus, limit = "SDPA", 2e-2
    ratio = theirs / ours
    status = "ok" if error <= limit else f"WRONG (error {error:.2e} > {limit})"
    line = (
        f"gpu-check bundle: {bench['name']}: {flops / ours / 1e9:.1f} TFLOP/s ({ours:.3f} ms), "
        f"{versus} {flops / theirs / 1e9:.1f} TFLOP/s ({theirs:.3f} ms), ratio {ratio:.3f}; "
        f"error {error:.2e} {status}"
    )
    return line, f"{bench['name']} {ratio:.2f}x {versus}", ratio if error <= limit else -1.0


def main(argv: list[str] | None = None) -> int:
    """The ``--bundle`` command line; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--budget", type=float, default=420.0, help="seconds for everything")
    parser.add_argument("--target", type=Path, default=None, help="where the wheels go")
    parser.add_argument("--launch-only", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    bundle = args.bundle.resolve()
    manifest = json.loads((bundle / "bundle.json").read_text())
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    if version != manifest["python"]:
        print(
            f"gpu-check bundle: prepared for Python {manifest['python']}, running {version}: "
            "its binary wheels may not install"
        )
    target = install(bundle, manifest, args.target or bundle / f".site-{version}")
    import tl_runtime

    print(f"gpu-check bundle: tl_runtime from {Path(tl_runtime.__file__).parent}")
    adapter = tl_runtime.get_adapter(ADAPTER)
    where = Path(str(getattr(sys.modules[adapter.__module__], "__file__", "?")))
    availability = tl_runtime.adapter_availability(ADAPTER)
    print(f"gpu-check bundle: {ADAPTER} adapter from {where}: {availability}")
    problems = check_suite(bundle, manifest, args.launch_only)
    suite = len(manifest["suite"])
    for line in problems:
        print(f"gpu-check bundle: FAIL {line}")
    verb = "launched" if args.launch_only else "match"
    cells = [f"suite {suite - len(problems)}/{suite} {verb}"]
    failed = bool(problems)
    if args.launch_only:
        for bench in manifest["benchmarks"]:
            tl_runtime.load(bundle / bench["artifact"], adapter=ADAPTER)
        cells.append(f"{len(manifest['benchmarks'])} benchmark kernels loaded")
    else:
        import torch

        cells.insert(0, torch.cuda.get_device_name())
        for bench in manifest["benchmarks"]:
            if time.perf_counter() - started > args.budget:
                cells.append(f"{bench['name']} skipped (time budget)")
                continue
            try:
                line, cell, ratio = time_benchmark(bundle, bench, args.repeats)
            except Exception as exc:
                line = f"gpu-check bundle: {bench['name']}: {type(exc).__name__}: {exc}"
                cell, ratio = f"{bench['name']} FAILED", -1.0
            print(line)
            cells.append(cell)
            failed = failed or ratio < 0
    print(
        f"gpu-check bundle: {manifest['arch']}, {'; '.join(cells)}; "
        f"{time.perf_counter() - started:.0f} s (wheels in {target})"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
