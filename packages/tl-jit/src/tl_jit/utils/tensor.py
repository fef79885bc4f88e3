"""TileLang's ``tilelang.utils.tensor``: generated torch inputs of a supply kind
(`get_tensor_supply`) and a tolerance check that allows a share of mismatched elements
(`torch_assert_close`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tl_jit.profiler_compare import assert_close
from tl_jit.tensor_supply import TensorSupplyType, checked_supply

__all__ = ["TensorSupplyType", "get_tensor_supply", "torch_assert_close"]


def _static_shape(param: Any) -> tuple[int, ...]:
    """``param.shape`` as ints; a symbolic dim (a name or an expression) is refused."""
    shape = getattr(param, "shape", None)
    if shape is None:
        raise ValueError(
            f"param: expected a tensor parameter with a shape, got {type(param).__name__} "
            f"{param!r:.120}"
        )
    sizes: list[int] = []
    for dim in shape:
        try:
            size = int(dim)
        except (TypeError, ValueError):
            name = getattr(param, "name", "?")
            raise ValueError(
                f"param {name!r}: expected a static shape to generate a tensor for, got "
                f"the symbolic dim {dim!r} in {tuple(shape)!r}"
            ) from None
        sizes.append(size)
    return tuple(sizes)


def get_tensor_supply(
    supply_type: TensorSupplyType | str = TensorSupplyType.Integer,
) -> Callable[[Any], Any]:
    """A function that makes one torch CPU tensor for a kernel parameter, filled with
    TileLang's values of ``supply_type`` (see `tl_jit.tensor_supply`).

    The function takes anything with a static ``shape`` and a ``dtype`` (a kernel's
    `tl_runtime.ParamSpec`, TileLang's ``KernelParam``). Draws come from a numpy
    generator seeded from torch's global generator, so ``torch.manual_seed`` makes them
    repeatable.

    Raises:
        ValueError, TypeError: ``supply_type`` names no kind (now); the function, for a
            parameter with a symbolic dim or no shape.
    """
    import numpy as np

    from tl_jit.profiler_inputs import random_array

    kind = checked_supply(supply_type)
    assert kind is not None  # a default is always given

    def supply(param: Any) -> Any:
        import torch

        shape = _static_shape(param)
        dtype = str(getattr(param, "dtype", ""))
        dtype = dtype.removeprefix("torch.")
        seed = int(torch.randint(0, 2**62, ()).item())
        return random_array(
            shape, dtype, np.random.default_rng(seed), like="torch", device=None, supply=kind
        )

    return supply


def torch_assert_close(
    tensor_a: Any,
    tensor_b: Any,
    rtol: float = 1e-2,
    atol: float = 1e-3,
    max_mismatched_ratio: float = 0.001,
    verbose: bool = False,
    equal_nan: bool = True,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    base_name: str = "LHS",
    ref_name: str = "RHS",
) -> bool:
    """Check that two tensors agree within ``atol + rtol * |tensor_b|`` on all but at
    most ``floor(numel * max_mismatched_ratio)`` elements (TileLang's defaults: rtol
    1e-2, atol 1e-3, 0.1% of the elements). With the ``check_*`` flags, the device,
    dtype, layout and strides of two torch tensors must match too. Returns True.

    Raises:
        AssertionError: a checked attribute differs, or too many elements differ (the
            message names ``base_name``/``ref_name``, the count and the first index).
    """
    for flag, attribute in (
        (check_device, "device"),
        (check_dtype, "dtype"),
        (check_layout, "layout"),
    ):
        left, right = getattr(tensor_a, attribute, None), getattr(tensor_b, attribute, None)
        if flag and left is not None and right is not None and left != right:
            raise AssertionError(f"{attribute}: {base_name} has {left}, {ref_name} has {right}")
    strided = hasattr(tensor_a, "stride") and hasattr(tensor_b, "stride")
    if check_stride and strided and tensor_a.stride() != tensor_b.stride():
        raise AssertionError(
            f"stride: {base_name} has {tensor_a.stride()}, {ref_name} has {tensor_b.stride()}"
        )
    assert_close(
        tensor_a,
        tensor_b,
        rtol=rtol,
        atol=atol,
        max_mismatched_ratio=max_mismatched_ratio,
        equal_nan=equal_nan,
        got_name=base_name,
        expected_name=ref_name,
    )
    if verbose:
        print(f"{base_name} and {ref_name} agree (rtol={rtol}, atol={atol})")
    return True
