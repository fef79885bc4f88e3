"""`do_bench`: one figure of the shared timing statistic (`tl_jit.timing.measure`) of
a function called without arguments, as TileLang's ``tilelang.profiler.do_bench``;
and the checks of the profiler methods' function and input arguments."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from tl_jit.timing import check_timing_backend, measure

__all__ = ["RETURN_MODES", "check_callable", "check_inputs", "do_bench", "validate_mode"]

RETURN_MODES = ("median", "mean", "min", "max")


def validate_mode(return_mode: str, quantiles: Sequence[float] | None) -> list[float] | None:
    """Check ``return_mode`` and ``quantiles``; returns the quantiles as a list (or None).

    Raises:
        ValueError: ``return_mode`` is not one of `RETURN_MODES`, or a quantile is not a
            number in [0, 1].
        TypeError: ``quantiles`` is not a sequence of numbers (a lone ``0.5``, a string,
            a set).
    """
    if return_mode not in RETURN_MODES:
        raise ValueError(f"return_mode: expected one of {RETURN_MODES}, got {return_mode!r}")
    if quantiles is None:
        return None
    numpy: Any = sys.modules.get("numpy")
    is_array = numpy is not None and isinstance(quantiles, numpy.ndarray) and quantiles.ndim == 1
    if not is_array and (isinstance(quantiles, str | bytes) or not isinstance(quantiles, Sequence)):
        raise TypeError(
            "quantiles: expected a sequence of numbers in [0, 1] (e.g. [0.5, 0.9]) or None, "
            f"got {type(quantiles).__name__} {quantiles!r:.80}"
        )
    values: Any = quantiles
    checked: list[Any] = values.tolist() if is_array else list(values)
    for q in checked:
        if isinstance(q, bool) or not isinstance(q, int | float) or not 0.0 <= q <= 1.0:
            raise ValueError(f"quantiles: expected values in [0, 1], got {q!r}")
    return checked


def do_bench(
    fn: Callable[[], Any],
    warmup: float = 25.0,
    rep: float = 100.0,
    return_mode: str = "median",
    quantiles: Sequence[float] | None = None,
    *,
    flush_cache: bool = False,
    device: str = "auto",
    max_repeats: int = 100_000,
    backend: str = "event",
) -> float | list[float]:
    """Time ``fn()`` and return milliseconds per call (one figure of `tl_jit.timing.measure`).

    Warms up for at least ``warmup`` ms and until the time per call is stable, then
    times about ``rep`` ms of calls one by one (at least 5). `tl_jit.timing.measure`
    gives the whole statistic (median, spread, outliers, throughput).

    Args:
        fn: the thing to time, called without arguments.
        warmup: milliseconds of untimed calls first (at least).
        rep: milliseconds of timed calls.
        return_mode: ``"median"`` (the default: robust to a call preempted by other
            work), ``"mean"``, ``"min"`` or ``"max"`` of the per-call times.
        quantiles: when given, return these quantiles (each in [0, 1]) instead.
        flush_cache: write a 64 MiB buffer before every timed call (CPU: cold caches).
        device: ``"cpu"`` (wall clock); the device type of torch's accelerator (timed
            with its events, synchronized through ``torch.accelerator``); or
            ``"auto"``: the accelerator when torch is already imported and has one,
            else the wall clock.
        max_repeats: upper bound on the number of timed calls.
        backend: TileLang's ``"event"``, ``"cupti"`` or ``"cudagraph"``; each times
            the calls as above (`tl_jit.timing.check_timing_backend`).

    Returns:
        A float (ms), or a list of floats for ``quantiles``.

    Raises:
        ValueError: a bad ``warmup``, ``rep``, ``return_mode``, ``quantiles`` value or
            ``device``.
        TypeError: ``quantiles`` is not a sequence (a lone ``0.5``, say).
        whatever ``fn`` raises.
    """
    check_timing_backend(backend)
    checked_quantiles = validate_mode(return_mode, quantiles)
    stats = measure(
        fn,
        warmup=warmup,
        rep=rep,
        flush_cache=flush_cache,
        device=device,
        max_repeats=max_repeats,
    )
    if checked_quantiles is not None:
        return stats.quantiles(checked_quantiles)
    return stats.value(return_mode)


def check_callable(func: Any, where: str, optional: bool) -> None:
    """Raise TypeError unless ``func`` is callable (or None where ``optional``)."""
    if (func is None and optional) or callable(func):
        return
    expected = "a function (or None)" if optional else "a function"
    raise TypeError(f"Profiler.{where}: expected {expected}, got {func!r}")


def check_inputs(inputs: Any, where: str) -> None:
    """Raise TypeError unless ``inputs`` is None or a list or tuple of arguments."""
    if inputs is not None and not isinstance(inputs, list | tuple):
        raise TypeError(
            f"Profiler.{where}: expected a list or tuple of the kernel's arguments, got {inputs!r}"
        )
