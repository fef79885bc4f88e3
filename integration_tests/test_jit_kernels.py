"""The whole kernel suite through ``tl_jit.compile`` (target c) and ``@tl_jit.jit`` (llvm),
checked against each module's numpy REFERENCE."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tl_jit
from integration_tests.kernels import KERNEL_MODULES, load

CASES = [(name, index) for name in KERNEL_MODULES for index in range(len(load(name).CASES))]


@pytest.fixture(autouse=True)
def _session_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path_factory.getbasetemp() / "tl-jit-kernel-suite-cache"
    monkeypatch.setenv("TL_CACHE_DIR", str(root))
    monkeypatch.delenv("TL_DISABLE_CACHE", raising=False)


def _check(module: Any, case: dict[str, Any], kernel: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    inputs = list(module.make_inputs(case, rng))  # ordinary numpy arrays, as users pass
    expected = module.REFERENCE(case, *[np.copy(x) if hasattr(x, "shape") else x for x in inputs])
    result = kernel(*inputs)
    outputs = result if isinstance(result, tuple) else (result,)
    names = [p.name for p in kernel.params]
    out_names = [names[i] for i in kernel.out_idx]
    got = dict(zip(out_names, outputs, strict=True)) if kernel.out_idx else {}
    input_names = [n for i, n in enumerate(names) if i not in kernel.out_idx]
    got.update({n: v for n, v in zip(input_names, inputs, strict=True) if n in expected})
    for name, value in expected.items():
        tolerance = module.TOLERANCE.get(str(value.dtype), 1e-4)
        np.testing.assert_allclose(
            np.asarray(got[name], dtype=np.float64),
            np.asarray(value, dtype=np.float64),
            rtol=tolerance,
            atol=tolerance,
            err_msg=f"{module.__name__} {case} output {name}",
        )


@pytest.mark.parametrize(("name", "index"), CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_compile_runs_the_suite_on_c(name: str, index: int) -> None:
    module = load(name)
    case = module.CASES[index]
    kernel = tl_jit.compile(
        module.KERNEL(**case["args"]), out_idx=module.OUT_IDX or None, target="c"
    )
    _check(module, case, kernel, seed=index)


@pytest.mark.parametrize("name", KERNEL_MODULES)
def test_jit_runs_the_suite_on_llvm(name: str) -> None:
    module = load(name)
    jitted = tl_jit.jit(out_idx=module.OUT_IDX or None, target="llvm")(module.KERNEL)
    case = module.CASES[0]
    kernel = jitted(**case["args"])
    assert jitted(**case["args"]) is kernel
    _check(module, case, kernel, seed=1)


def test_lower_gives_c_source_without_building() -> None:
    module = load("gemm")
    sources = tl_jit.lower(module.KERNEL(**module.CASES[0]["args"]), target="c")
    text = "\n".join(sources.files.values())
    assert sources.entry_symbol and "for" in text
