"""The checks ``@autotune`` makes of its options when it is applied, before anything
compiles: a mistake every configuration would fail on is refused by name up front."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tl_jit.tensor_supply import TensorSupplyType, checked_supply
from tl_jit.timing import validate_window

__all__ = ["TuningChecks", "check_flags", "check_measurement", "check_options", "tuning_checks"]


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


def check_flags(skip_check: Any, cache_results: Any) -> None:
    """Raise TypeError unless both flags are bools (taken by truth, "no" skipped the
    check)."""
    for flag, value in (("skip_check", skip_check), ("cache_results", cache_results)):
        if not isinstance(value, bool):
            raise TypeError(f"autotune({flag}=...): expected a bool, got {value!r}")


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


@dataclass(frozen=True)
class TuningChecks:
    """TileLang's finer options of ``@autotune`` on how each configuration is checked
    and timed (validated by `tuning_checks`)."""

    max_mismatched_ratio: float = 0.01
    """The share of each output's elements that may differ beyond ``rtol``/``atol``
    (TileLang's default: 1%)."""
    manual_check_prog: Callable[[list[Any], list[Any]], Any] | None = None
    """Replaces the tolerance check: ``manual_check_prog(kernel_outputs,
    reference_outputs)`` raises to fail a configuration."""
    supply_type: TensorSupplyType | None = None
    """The kind of generated inputs (None: the profiler's own random inputs)."""
    early_stop_factor: float | None = None
    """With early stop, a configuration whose first estimate is slower than this factor
    times the fastest so far is not timed in full (None: off)."""


def tuning_checks(
    max_mismatched_ratio: object = 0.01,
    manual_check_prog: object = None,
    supply_type: object = None,
    cache_input_tensors: object = False,
    early_stop: object = False,
    early_stop_factor: object = 2.0,
) -> TuningChecks:
    """The options as `TuningChecks`.

    ``cache_input_tensors`` is accepted for TileLang's programs and changes nothing:
    configurations whose kernels take the same parameters are always timed and checked
    on one set of inputs (made once, from a fixed seed), and a configuration whose
    parameters differ gets inputs of its own, which is what TileLang's True and False
    amount to here.

    Raises:
        TypeError, ValueError: an option of the wrong type or range, named.
    """
    if (
        isinstance(max_mismatched_ratio, bool)
        or not isinstance(max_mismatched_ratio, int | float)
        or not 0 <= max_mismatched_ratio <= 1
    ):
        raise ValueError(
            "autotune max_mismatched_ratio: expected a share between 0 and 1, got "
            f"{max_mismatched_ratio!r}"
        )
    if manual_check_prog is not None and not callable(manual_check_prog):
        raise TypeError(
            "autotune manual_check_prog: expected a callable of (kernel outputs, reference "
            f"outputs) or None, got {type(manual_check_prog).__name__}"
        )
    supply = None if supply_type is None else checked_supply(supply_type)
    for name, flag in (("cache_input_tensors", cache_input_tensors), ("early_stop", early_stop)):
        if not isinstance(flag, bool):
            raise TypeError(f"autotune {name}: expected True or False, got {flag!r}")
    if (
        isinstance(early_stop_factor, bool)
        or not isinstance(early_stop_factor, int | float)
        or not math.isfinite(early_stop_factor)
        or early_stop_factor < 1.0
    ):
        raise ValueError(
            f"autotune early_stop_factor: expected a finite number >= 1.0, got "
            f"{early_stop_factor!r}"
        )
    return TuningChecks(
        max_mismatched_ratio=float(max_mismatched_ratio),
        manual_check_prog=manual_check_prog,
        supply_type=supply,
        early_stop_factor=float(early_stop_factor) if early_stop else None,
    )
