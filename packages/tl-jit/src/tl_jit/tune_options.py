"""The checks ``@autotune`` makes of its options when it is applied, before anything
compiles: a mistake every configuration would fail on is refused by name up front."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from tl_jit.timing import validate_window

__all__ = ["check_measurement", "check_options"]


def check_options(
    executor: object,
    timeout: object,
    timer: object = None,
    isolate_timing: object = None,
    max_workers: object = None,
) -> None:
    """Refuse an ``executor`` without ``submit``, a ``timeout`` that is not seconds > 0,
    a ``timer`` that is not callable, an ``isolate_timing`` that is not a bool and a
    ``max_workers`` that is not an int >= 1 (or None).

    Raises:
        TypeError, ValueError: naming the option, what it expects and what came.
    """
    if max_workers is not None and (
        isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1
    ):
        raise ValueError(f"autotune max_workers: expected an int >= 1 or None, got {max_workers!r}")
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise TypeError(
            "autotune executor: expected an object with submit(fn, *args) returning a "
            f"concurrent.futures.Future, got {executor!r}"
        )
    if timeout is not None and not (
        isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0
    ):
        raise ValueError(
            f"autotune timeout: expected seconds > 0 or None (no limit), got {timeout!r}"
        )
    if timer is not None and not callable(timer):
        raise TypeError(
            "autotune timer: expected a function of a tl_jit.tune_timing.Measurement "
            f"returning ms, or None, got {timer!r}"
        )
    if isolate_timing is not None and not isinstance(isolate_timing, bool):
        raise TypeError(
            f"autotune isolate_timing: expected True, False or None (automatic), got "
            f"{isolate_timing!r}"
        )


def check_measurement(
    configs: object,
    warmup: object,
    rep: object,
    ref_prog: object,
    supply_prog: object,
    rtol: object,
    atol: object,
) -> None:
    """Refuse, before anything compiles, options every configuration would fail on (they
    were found only after every configuration had compiled: "every configuration failed").

    Raises:
        TypeError: ``configs`` is neither a list of dicts nor a callable; ``ref_prog`` or
            ``supply_prog`` is not callable.
        ValueError: ``warmup``/``rep`` are not timing windows (`do_bench`'s rules);
            ``rtol``/``atol`` are not finite numbers >= 0.
    """
    if not callable(configs) and (
        not isinstance(configs, Iterable) or isinstance(configs, str | bytes | Mapping)
    ):
        raise TypeError(
            "autotune: configs: expected a list of dicts or a callable returning one, "
            f"got {type(configs).__name__}"
        )
    for name, function in (("ref_prog", ref_prog), ("supply_prog", supply_prog)):
        if function is not None and not callable(function):
            raise TypeError(
                f"autotune: {name}: expected a callable or None, got {type(function).__name__}"
            )
    validate_window(warmup, rep, 1)  # type: ignore[arg-type]
    for name, value in (("rtol", rtol), ("atol", atol)):
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
        ):
            raise ValueError(f"autotune: {name}: expected a finite number >= 0, got {value!r}")
