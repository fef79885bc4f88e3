"""Sweeps: time a function over a grid of sizes and providers, print a table, save a plot.

In the spirit of ``triton.testing.perf_report``::

    @tl_jit.sweep.perf_report(
        tl_jit.sweep.Benchmark(
            x_names=["N"], x_vals=[256, 512, 1024],
            line_arg="provider", line_vals=["tl", "numpy"],
            ylabel="ms", plot_name="gemm",
        )
    )
    def bench(N, provider):
        ...
        return tl_jit.timing.measure(lambda: ...)   # or a float, or (y, y_min, y_max)

    bench.run(print_data=True, save_path="plots")

The function returns one figure per point: a float, a ``(y, y_min, y_max)`` triple, or
a `tl_jit.timing.TimingStats` (its median, with its quartiles as the band). The table
prints always; with ``save_path`` the figures are saved as ``save_path/<plot_name>.csv``
(written with the csv module: a header of the x label and the line labels, quoted where
they hold commas, then one row per x value) and the plot as ``save_path/<plot_name>.png``
where matplotlib is installed, and skipped (the result says so) where it is not.
"""

from __future__ import annotations

import csv
import importlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tl_jit.timing import TimingStats


@dataclass(frozen=True)
class Benchmark:
    """One sweep: the x axis, the lines, and how to label them.

    Attributes:
        x_names: argument names that take each value of ``x_vals`` (all the same value).
        x_vals: the points of the x axis.
        line_arg: the argument that selects a line (e.g. ``"provider"``).
        line_vals: its values, one line each.
        line_names: the lines' labels (default: ``str`` of ``line_vals``).
        plot_name: the table's title and the plot's file name.
        ylabel: what the function returns (e.g. ``"ms"`` or ``"GFLOP/s"``).
        xlabel: the x axis label (default: ``x_names`` joined).
        args: further keyword arguments passed to every call.
        x_log, y_log: logarithmic axes in the plot.
    """

    x_names: Sequence[str]
    x_vals: Sequence[Any]
    line_arg: str
    line_vals: Sequence[Any]
    plot_name: str
    ylabel: str = "ms"
    line_names: Sequence[str] | None = None
    xlabel: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    x_log: bool = False
    y_log: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.x_names, str) or not self.x_names:
            raise ValueError(f"x_names: expected a non-empty list of names, got {self.x_names!r}")
        if not self.x_vals:
            raise ValueError("x_vals: expected at least one value, got none")
        if not self.line_vals:
            raise ValueError("line_vals: expected at least one value, got none")
        if self.line_names is not None and len(self.line_names) != len(self.line_vals):
            raise ValueError(
                f"line_names: expected {len(self.line_vals)} names (one per line_vals), "
                f"got {len(self.line_names)}"
            )
        if not self.plot_name or "/" in self.plot_name:
            raise ValueError(f"plot_name: expected a file name, got {self.plot_name!r}")

    @property
    def labels(self) -> list[str]:
        """The lines' labels."""
        return list(self.line_names or [str(v) for v in self.line_vals])


@dataclass(frozen=True)
class SweepResult:
    """One sweep's figures: ``rows[i][j]`` is (y, y_min, y_max) at ``x_vals[i]``, line j.

    ``plot`` is the saved plot's path, or None; ``note`` says why there is none.
    """

    benchmark: Benchmark
    rows: tuple[tuple[tuple[float, float, float], ...], ...]
    plot: Path | None
    note: str

    def table(self) -> str:
        """The figures as an aligned text table (x values, then one column per line)."""
        bench = self.benchmark
        header = [bench.xlabel or ", ".join(bench.x_names), *bench.labels]
        body = [
            [str(x), *(f"{y:.4g}" for y, _, _ in row)]
            for x, row in zip(bench.x_vals, self.rows, strict=True)
        ]
        widths = [max(len(r[c]) for r in [header, *body]) for c in range(len(header))]
        lines = [f"{bench.plot_name} ({bench.ylabel}):"]
        for row in [header, *body]:
            lines.append(
                "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
            )
        return "\n".join(lines)


def _figure(value: Any, where: str) -> tuple[float, float, float]:
    if isinstance(value, TimingStats):
        return value.median_ms, value.q1_ms, value.q3_ms
    if isinstance(value, tuple | list) and len(value) == 3:
        y, low, high = (float(v) for v in value)
        return y, low, high
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value), float(value), float(value)
    raise TypeError(
        f"{where}: expected a number, a (y, y_min, y_max) triple or a TimingStats, "
        f"got {type(value).__name__}"
    )


class Sweep:
    """A function decorated with `perf_report`; `run` performs its sweeps."""

    def __init__(self, fn: Callable[..., Any], benchmarks: Sequence[Benchmark]):
        self.fn = fn
        self.benchmarks = tuple(benchmarks)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the undecorated function."""
        return self.fn(*args, **kwargs)

    def run(
        self,
        print_data: bool = True,
        save_path: str | Path | None = None,
        show_plots: bool = False,
    ) -> list[SweepResult]:
        """Call the function at every point of every sweep; print and plot the figures.

        Args:
            print_data: print each sweep's table.
            save_path: a directory for ``<plot_name>.png`` (and ``.csv``); None: no files.
            show_plots: show each plot on screen too (matplotlib only).

        Returns:
            One `SweepResult` per `Benchmark`.
        """
        results = []
        for bench in self.benchmarks:
            rows = []
            for x in bench.x_vals:
                row = []
                for line in bench.line_vals:
                    kwargs = {**bench.args, **dict.fromkeys(bench.x_names, x), bench.line_arg: line}
                    row.append(_figure(self.fn(**kwargs), f"{bench.plot_name} at {kwargs}"))
                rows.append(tuple(row))
            result = _finish(bench, tuple(rows), save_path, show_plots)
            if print_data:
                print(result.table())
                if result.note:
                    print(result.note)
            results.append(result)
        return results


def _write_csv(
    path: Path, bench: Benchmark, rows: tuple[tuple[tuple[float, float, float], ...], ...]
) -> None:
    """Write the figures as CSV (the csv module quotes a label holding a comma or quote):
    a header (the x label, then one label per line), then one row per x value with each
    line's y at full precision."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow([bench.xlabel or ", ".join(bench.x_names), *bench.labels])
        for x, row in zip(bench.x_vals, rows, strict=True):
            writer.writerow([x, *(float(y) for y, _, _ in row)])


def _finish(
    bench: Benchmark,
    rows: tuple[tuple[tuple[float, float, float], ...], ...],
    save_path: str | Path | None,
    show_plots: bool,
) -> SweepResult:
    plot: Path | None = None
    note = ""
    directory = None if save_path is None else Path(save_path)
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
        _write_csv(directory / f"{bench.plot_name}.csv", bench, rows)
    if directory is None and not show_plots:
        return SweepResult(bench, rows, None, "")
    try:
        pyplot: Any = importlib.import_module("matplotlib.pyplot")
    except ImportError:
        return SweepResult(bench, rows, None, "no plot: matplotlib is not installed")
    figure, axes = pyplot.subplots()
    xs = list(bench.x_vals)
    for index, label in enumerate(bench.labels):
        ys = [row[index][0] for row in rows]
        axes.plot(xs, ys, label=label, marker="o")
        lows, highs = [row[index][1] for row in rows], [row[index][2] for row in rows]
        if any(not math.isclose(lo, hi) for lo, hi in zip(lows, highs, strict=True)):
            axes.fill_between(xs, lows, highs, alpha=0.2)
    axes.set_xlabel(bench.xlabel or ", ".join(bench.x_names))
    axes.set_ylabel(bench.ylabel)
    axes.set_title(bench.plot_name)
    if bench.x_log:
        axes.set_xscale("log")
    if bench.y_log:
        axes.set_yscale("log")
    axes.legend()
    if directory is not None:
        plot = directory / f"{bench.plot_name}.png"
        figure.savefig(plot)
    if show_plots:
        pyplot.show()
    pyplot.close(figure)
    return SweepResult(bench, rows, plot, note)


def perf_report(
    benchmarks: Benchmark | Sequence[Benchmark],
) -> Callable[[Callable[..., Any]], Sweep]:
    """Decorate a function of (x values, line value) to sweep it with `Sweep.run`."""
    chosen = [benchmarks] if isinstance(benchmarks, Benchmark) else list(benchmarks)
    for bench in chosen:
        if not isinstance(bench, Benchmark):
            raise TypeError(f"benchmarks: expected Benchmark values, got {type(bench).__name__}")

    def decorate(fn: Callable[..., Any]) -> Sweep:
        return Sweep(fn, chosen)

    return decorate
