"""The sweep helper (tl_jit.sweep): a table always, a plot where matplotlib is installed."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tl_jit.sweep import Benchmark, perf_report
from tl_jit.timing import summarize

BENCH = Benchmark(
    x_names=["N"],
    x_vals=[128, 256],
    line_arg="provider",
    line_vals=["tl", "numpy"],
    line_names=["tl", "NumPy"],
    plot_name="scale",
    ylabel="ms",
    args={"factor": 2.0},
)


@perf_report(BENCH)
def scale(N: int, provider: str, factor: float) -> Any:
    if provider == "tl":
        return summarize([N * factor / 1000, N * factor / 1000, N * factor / 500])
    return (N / 1000, N / 2000, N / 500)


def test_table_has_one_row_per_x_and_one_column_per_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    (result,) = scale.run(print_data=True)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "scale (ms):"
    assert printed[1].split() == ["N", "tl", "NumPy"]
    assert printed[2].split() == ["128", "0.256", "0.128"]
    assert printed[3].split() == ["256", "0.512", "0.256"]
    assert result.rows[0][0] == pytest.approx((0.256, 0.256, 0.384))
    assert result.plot is None and result.note == ""


def test_without_matplotlib_the_table_is_saved_and_the_plot_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    (result,) = scale.run(print_data=False, save_path=tmp_path)
    assert result.plot is None and "matplotlib is not installed" in result.note
    assert (tmp_path / "scale.csv").read_text().splitlines()[0] == "N,tl,NumPy"


def test_with_matplotlib_a_plot_is_saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    class Axes:
        def __getattr__(self, name: str) -> Any:
            return lambda *a, **k: calls.append(name)

    class Figure:
        def savefig(self, path: Path) -> None:
            Path(path).write_bytes(b"png")

    pyplot = types.ModuleType("matplotlib.pyplot")
    pyplot.subplots = lambda: (Figure(), Axes())  # type: ignore[attr-defined]
    pyplot.close = lambda figure: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "matplotlib", types.ModuleType("matplotlib"))
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", pyplot)
    (result,) = scale.run(print_data=False, save_path=tmp_path)
    assert result.plot == tmp_path / "scale.png" and result.plot.exists()
    assert calls.count("plot") == 2 and "fill_between" in calls


def test_bad_sweeps_are_refused() -> None:
    with pytest.raises(ValueError, match="line_names"):
        Benchmark(["N"], [1], "p", ["a", "b"], "x", line_names=["a"])
    with pytest.raises(ValueError, match="x_names"):
        Benchmark("N", [1], "p", ["a"], "x")
    with pytest.raises(TypeError, match="benchmarks"):
        perf_report([object()])  # type: ignore[list-item]

    @perf_report(Benchmark(["N"], [1], "p", ["a"], "bad"))
    def returns_text(N: int, p: str) -> str:
        return "fast"

    with pytest.raises(TypeError, match="expected a number"):
        returns_text.run(print_data=False)


def test_the_csv_has_one_column_per_line_whatever_the_labels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The CSV split the text table on whitespace: the xlabel "M, N" and line names with
    # spaces gave the header M,,N,tl,jit,numpy,ref over three-column rows.
    import csv

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)

    @perf_report(
        Benchmark(
            x_names=["M", "N"],
            x_vals=[128, 256],
            line_arg="provider",
            line_vals=["tl", "np"],
            line_names=["tl jit", 'numpy, "ref"'],
            plot_name="demo",
        )
    )
    def bench(M: int, N: int, provider: str) -> float:
        return M / 3 if provider == "tl" else 2.0

    bench.run(print_data=False, save_path=tmp_path)
    with (tmp_path / "demo.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["M, N", "tl jit", 'numpy, "ref"']
    assert [row[0] for row in rows[1:]] == ["128", "256"]
    assert all(len(row) == 3 for row in rows)
    assert float(rows[1][1]) == 128 / 3 and float(rows[2][2]) == 2.0  # full precision
