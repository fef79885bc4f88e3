"""Comparing a kernel's results with a reference: the arguments a reference function
receives (`reference_arguments`) and the tolerance check with an allowed share of
mismatched elements (`assert_close`), shared by `tl_jit.profiler.Profiler.assert_allclose`
and `tl_jit.utils.tensor.torch_assert_close`."""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "assert_close",
    "reference_arguments",
    "reference_uses_torch",
    "to_float64",
    "written_and_expected",
]


def reference_uses_torch(ref_fn: Callable[..., Any]) -> bool:
    """Whether ``ref_fn`` was written against torch: its module (or the module of the
    ``__call__`` of a callable object) holds the ``torch`` module under some name.

    TileLang's references use torch methods (``x.pow(2)``, ``Q.size(-1)``) because
    TileLang's profiler gives torch tensors; such a reference gets torch tensors here too.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    function: Any = ref_fn
    while isinstance(function, functools.partial):
        function = function.func
    with contextlib.suppress(ValueError):  # a cycle of __wrapped__: the callable itself
        function = inspect.unwrap(function)
    namespace = getattr(function, "__globals__", None)
    if namespace is None:  # a callable object: its class's __call__
        call = vars(type(function)).get("__call__")
        namespace = getattr(call, "__globals__", None)
    if not isinstance(namespace, dict):
        return False
    return any(value is torch for value in namespace.values())


def _as_torch(array: Any) -> Any:
    """A torch CPU tensor holding a copy of the numpy array ``array`` (bfloat16 and
    float8 arrays, ml_dtypes' in numpy, through their bits)."""
    import numpy as np
    import torch

    copy = np.array(array, copy=True, order="C")
    name = copy.dtype.name
    bit_views = {"bfloat16": (np.uint16, torch.bfloat16)}
    for float8 in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"):
        if hasattr(torch, float8):
            bit_views[float8] = (np.uint8, getattr(torch, float8))
    if name in bit_views:
        bits, torch_dtype = bit_views[name]
        return torch.from_numpy(copy.view(bits)).view(torch_dtype)
    return torch.from_numpy(copy)


def reference_arguments(
    args: Sequence[Any], ref_fn: Callable[..., Any], wants_torch: bool | None = None
) -> list[Any]:
    """Copies of ``args`` for ``ref_fn``: torch tensors stay torch (cloned); numpy
    arrays become torch CPU tensors when `reference_uses_torch` (else numpy copies);
    scalars pass as they are (``wants_torch``: `reference_uses_torch`'s answer when the
    caller has it). The kernel's own arguments are never handed to the reference, so a
    reference that writes its inputs changes nothing the kernel saw."""
    import numpy as np

    if wants_torch is None:
        wants_torch = reference_uses_torch(ref_fn)
    copies: list[Any] = []
    for arg in args:
        if hasattr(arg, "clone"):
            copies.append(arg.clone())
        elif isinstance(arg, np.ndarray):
            copies.append(_as_torch(arg) if wants_torch else np.copy(arg))
        else:
            copies.append(arg)
    return copies


def to_float64(value: Any) -> Any:
    """``value`` (a torch tensor, a numpy array, a number) as a numpy array for
    comparison: floats as float64, integers and bools as they are."""
    import numpy as np

    if hasattr(value, "detach"):
        tensor = value.detach().cpu().resolve_conj().resolve_neg()
        if tensor.dtype.is_floating_point:
            tensor = tensor.double()  # bfloat16 and float8 have no numpy dtype
        return tensor.numpy()
    array = np.asarray(value)
    if array.dtype.kind == "f" or array.dtype.name == "bfloat16" or "float8" in array.dtype.name:
        return array.astype(np.float64)
    return array


def assert_close(
    got: Any,
    expected: Any,
    *,
    rtol: float,
    atol: float,
    max_mismatched_ratio: float = 0.0,
    equal_nan: bool = True,
    got_name: str = "got",
    expected_name: str = "expected",
) -> None:
    """Check that ``got`` and ``expected`` agree elementwise within
    ``|got - expected| <= atol + rtol * |expected|`` on all but at most
    ``floor(size * max_mismatched_ratio)`` elements (0: every element).

    Raises:
        AssertionError: the shapes differ, or more elements differ than allowed; the
            message gives the count, the first differing index with both values, and
            the largest absolute and relative differences.
        ValueError: ``rtol``, ``atol`` or ``max_mismatched_ratio`` is negative or not a
            number, or the ratio is above 1.
    """
    import numpy as np

    for name, bound in (("rtol", rtol), ("atol", atol)):
        if isinstance(bound, bool) or not isinstance(bound, int | float) or not bound >= 0:
            raise ValueError(f"{name}: expected a number >= 0, got {bound!r}")
    ratio = max_mismatched_ratio
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 <= ratio <= 1:
        raise ValueError(f"max_mismatched_ratio: expected a number in [0, 1], got {ratio!r}")
    a, b = to_float64(got), to_float64(expected)
    if a.shape != b.shape:
        raise AssertionError(
            f"{got_name} has shape {tuple(a.shape)}, {expected_name} has {tuple(b.shape)}"
        )
    if a.size == 0:
        return
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    mismatched = int(close.size - np.count_nonzero(close))
    allowed = math.floor(a.size * ratio)
    if mismatched <= allowed:
        return
    first = np.unravel_index(int(np.argmin(close.reshape(-1))), a.shape)
    index = tuple(int(i) for i in first)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        difference = np.abs(a.astype(np.float64) - b.astype(np.float64))
        relative = difference / (np.abs(b.astype(np.float64)) + 1e-12)
    raise AssertionError(
        f"{mismatched} of {a.size} elements differ beyond rtol={rtol}, atol={atol} "
        f"(allowed: {allowed}); first at index {list(index)}: {got_name}={a[index].item()!r}, "
        f"{expected_name}={b[index].item()!r}; greatest absolute difference "
        f"{np.nanmax(difference).item()!r}, greatest relative difference "
        f"{np.nanmax(relative).item()!r}"
    )


def written_and_expected(
    kernel: Any, ref_fn: Callable[..., Any], make_args: Callable[[], list[Any]]
) -> tuple[list[tuple[str, Any]], list[Any]]:
    """Run ``kernel`` and ``ref_fn`` on the arguments ``make_args()`` gives (the
    reference gets `reference_arguments` of them) and pair what the kernel wrote with
    what the reference returned: ``([(param name, kernel value), ...], [expected, ...])``
    of one length, as `tl_jit.profiler.Profiler.assert_allclose` documents (the
    ``out_idx`` outputs first, then the parameters written in place in parameter
    order; or the ``out_idx`` outputs alone when the reference returns only those).

    Raises:
        ValueError: the kernel writes no parameter (nothing to compare).
        TypeError: the reference returned None.
        AssertionError: the reference returned a number of values matching neither form.
    """
    params = kernel.params
    out_idx = tuple(kernel.out_idx)
    in_place = [i for i, p in enumerate(params) if p.written and i not in out_idx]
    if not out_idx and not in_place:
        raise ValueError(
            f"ref_fn: expected kernel {kernel.name!r} to write a parameter (an out_idx "
            "output, or a parameter with role 'output' or 'inout'), got roles "
            f"{ {p.name: p.role for p in params}!r}: there is nothing to compare"
        )
    args = make_args()
    reference_args = reference_arguments(args, ref_fn)
    returned = kernel(*args)
    expected = ref_fn(*reference_args)
    if expected is None:
        # It went on to be compared as an array: "... ref_fn has ()".
        raise TypeError(
            f"ref_fn: expected the value(s) of what kernel {kernel.name!r} writes, got None "
            "(ref_fn returned None: a missing return?)"
        )
    # The kernel's arguments are the params not in out_idx, in order.
    position = {p: k for k, p in enumerate(i for i in range(len(params)) if i not in out_idx)}
    got: list[tuple[str, Any]] = []
    if out_idx:
        values = list(returned) if isinstance(returned, tuple | list) else [returned]
        got += [(params[i].name, v) for i, v in zip(out_idx, values, strict=True)]
    got += [(params[i].name, args[position[i]]) for i in in_place]
    expected_list = list(expected) if isinstance(expected, tuple | list) else [expected]
    if len(expected_list) == len(out_idx) and in_place:
        got = got[: len(out_idx)]  # the outputs alone: the documented shorter form
    if len(expected_list) != len(got):
        names = [name for name, _ in got]
        raise AssertionError(
            f"ref_fn: expected {len(names)} value(s), one per parameter kernel "
            f"{kernel.name!r} writes ({names}: out_idx outputs first, then in-place "
            f"writes in parameter order), got {len(expected_list)}"
        )
    return got, expected_list
