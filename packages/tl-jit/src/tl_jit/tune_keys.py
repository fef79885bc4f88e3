"""What the autotuner keys and measures a search by: the key of a search's saved result
(`result_key`) and the shapes of an eager call's arrays (`call_shapes`), which size the
built kernels' run-time dims."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from tl_jit.autotune_inputs import describe_input

__all__ = ["call_shapes", "result_key"]


def result_key(
    tuner: Any,
    arguments: Mapping[str, Any],
    configs: list[dict[str, Any]],
    captured: list[Any] | None = None,
) -> str | None:
    """The disk key of ``tuner``'s (a `tl_jit.autotuner.AutoTuner`) search for
    ``arguments`` over ``configs``: the function's front-end key with everything that
    can change which configuration wins or passes (tolerances, checks, dims, the timer,
    the captured inputs' shapes and dtypes); None when something in it has no key."""
    from tl_jit.keys import Unkeyable, frontend_key

    described: dict[str, Any] = {}
    if captured is not None:  # set_autotune_inputs: kept per input shapes and dtypes
        described["inputs"] = [describe_input(value) for value in captured]
    checks = tuner.checks
    try:
        return frontend_key(
            tuner.jit_function.func,
            {
                "arguments": dict(arguments),
                "configs": configs,
                "eager": tuner.eager,
                **described,
            },
            {
                **tuner.jit_function._frontend_options({}),
                "autotune": [
                    tuner.rtol,
                    tuner.atol,
                    tuner.skip_check,
                    sorted(tuner.dims.items()),
                    tuner.timer,
                    checks.max_mismatched_ratio,
                    checks.manual_check_prog,
                    None if checks.supply_type is None else checks.supply_type.name,
                    checks.early_stop_factor,
                ],
            },
        )
    except (Unkeyable, AttributeError):
        return None


def call_shapes(
    tuner: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> dict[str, tuple[int, ...]]:
    """The shapes of the call's arrays by the eager kernel's parameter names: each built
    kernel reads the sizes of its run-time dims (``T.dynamic``) from them, so that
    tuning times inputs of the call's shape (``dims`` given to `autotune` win). Empty
    for a builder, or a call that does not bind."""
    if not tuner.eager:
        return {}
    try:
        bound = inspect.signature(tuner.jit_function.func).bind(*args, **kwargs).arguments
    except TypeError:
        return {}
    shapes: dict[str, tuple[int, ...]] = {}
    for param in tuner.jit_function.analysis.kernel_params:
        shape = getattr(bound.get(param.name), "shape", None)
        try:
            shapes[param.name] = tuple(int(size) for size in shape)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            continue
    return shapes
