"""The TileLang compatibility corpus: TileLang's own kernels, imports changed only, checked
against numpy on ``c`` and ``llvm`` and lowered for CUDA with nvcc compiling the result.

Failures known today are strict xfails carrying the exception they raise (see
registry.EXPECTED_FAILURES and README.md); a wrong number is never expected.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from integration_tests.tilelang_compat.harness import build_for_cuda, run_on_cpu
from integration_tests.tilelang_compat.registry import ALL_CASES, EXPECTED_FAILURES, TARGETS


def _params() -> list[object]:
    params = []
    for name, case in ALL_CASES.items():
        for target in TARGETS:
            marks: list[pytest.MarkDecorator] = []
            expected = EXPECTED_FAILURES.get((name, target))
            if expected is not None:
                raises, reason = expected
                marks.append(pytest.mark.xfail(strict=True, raises=raises, reason=reason))
            if "slow" in case.tags:
                marks.append(pytest.mark.slow)
            params.append(pytest.param(name, target, marks=marks, id=f"{name}-{target}"))
    return params


@pytest.fixture(autouse=True)
def _private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path_factory.getbasetemp() / "tilelang-compat-cache"
    monkeypatch.setenv("TL_CACHE_DIR", str(root))
    monkeypatch.delenv("TL_DISABLE_CACHE", raising=False)


@pytest.mark.parametrize(("name", "target"), _params())
def test_tilelang_kernel(name: str, target: str, tmp_path: Path) -> None:
    case = ALL_CASES[name]
    if target == "cuda-nvcc":
        if shutil.which("nvcc") is None:
            pytest.skip("nvcc is not on PATH")
        cubin = build_for_cuda(case, tmp_path / "cuda")
        assert cubin.read_bytes()[:4] == b"\x7fELF"
    else:
        run_on_cpu(case, target)


def test_every_expected_failure_names_a_case_and_target() -> None:
    for name, target in EXPECTED_FAILURES:
        assert name in ALL_CASES, name
        assert target in TARGETS, target
    from integration_tests.tilelang_compat.registry import runnable_cases

    for target in TARGETS:
        failing = {n for n, t in EXPECTED_FAILURES if t == target}
        assert {c.name for c in runnable_cases(target)} == set(ALL_CASES) - failing
    with pytest.raises(ValueError, match="target: expected one of"):
        runnable_cases("metal")


def test_the_harness_rejects_wrong_numbers_and_shapes() -> None:
    import numpy as np

    from integration_tests.tilelang_compat.harness import compare

    case = ALL_CASES["language_copy.tilelang_copy"]
    inputs = case.make_inputs()
    (want,) = case.expected(inputs)
    compare(case, [want.copy()], [want])
    wrong = want.copy()
    wrong[0, 0] += 1
    with pytest.raises(AssertionError, match="output 0"):
        compare(case, [wrong], [want])
    with pytest.raises(AssertionError, match="shape"):
        compare(case, [want[:1]], [want])
    with pytest.raises(AssertionError, match="outputs"):
        compare(case, [], [want])
    assert np.array_equal(case.make_inputs()[0], inputs[0])  # inputs are deterministic


def test_case_names_are_unique_across_the_cases_files() -> None:
    from collections import Counter

    from integration_tests.tilelang_compat.registry import CASE_MODULES, _by_name

    names = Counter(case.name for module in CASE_MODULES for case in module.CASES)
    assert [name for name, count in names.items() if count > 1] == []
    assert len(ALL_CASES) == sum(names.values())
    with pytest.raises(ValueError, match="expected unique names"):
        _by_name((CASE_MODULES[0], CASE_MODULES[0]))


def test_the_readme_table_has_one_true_row_per_case() -> None:
    """The results table (written by survey.py; merges of two branches' tables have
    doubled rows before) lists every case once, in registry order, with the status
    EXPECTED_FAILURES gives, the constructs its program uses and true counts."""
    from integration_tests.tilelang_compat.survey import BEGIN, END, HERE, constructs

    text = (HERE / "README.md").read_text()
    table = text[text.index(BEGIN) + len(BEGIN) : text.index(END)]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    names = [row.split("`")[1] for row in rows]
    assert names == list(ALL_CASES)
    for name, row in zip(names, rows, strict=True):
        cells = [cell.strip() for cell in row.split(" | ")]
        assert cells[2] == constructs(name), name
        for target, cell in zip(TARGETS, cells[3:6], strict=True):
            expected = EXPECTED_FAILURES.get((name, target))
            assert cell == ("ok" if expected is None else f"`{expected[0].__name__}`"), (
                name,
                target,
            )
    counts = ", ".join(
        f"{t}: {sum((n, t) not in EXPECTED_FAILURES for n in ALL_CASES)}/{len(ALL_CASES)}"
        for t in TARGETS
    )
    assert f"Passing: {counts}." in table
