"""Where torch keeps a tensor's negative bit (``tl_runtime.torch_negative_bit``).

The launcher reads the bit from memory on every call where the probe found and checked its
place. These tests hold the probe to its contract: found on this torch, the same for every
subclass that answers as torch does, absent for types that answer for themselves, absent when
anything it checks disagrees, and equal to ``is_neg()`` on tensors built every way hypothesis
can think of. One test shows the launcher really reads that place.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tl_runtime
from tl_runtime import torch_negative_bit
from tl_runtime.torch_negative_bit import negative_bit_layout, read_negative_bit
from tl_runtime.torch_probes import PROBE_TRIES

torch = pytest.importorskip("torch")

Artifact = Callable[..., Path]


@pytest.fixture
def fresh_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget the process's probe so a test can run it again under its own conditions."""
    monkeypatch.setattr(torch_negative_bit.PROBE, "probed", False)
    monkeypatch.setattr(torch_negative_bit.PROBE, "layout", None)


class _Plain(torch.Tensor):
    pass


class _OwnAnswer(torch.Tensor):
    def is_neg(self) -> bool:  # type: ignore[override]
        return True


class _WithTorchFunction(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return super().__torch_function__(func, types, args, kwargs)


def test_the_layout_is_found_and_shared_by_subclasses_that_answer_as_torch() -> None:
    layout = negative_bit_layout(torch.Tensor)
    assert layout is not None
    object_offset, impl_offset, mask = layout
    assert object_offset >= object.__basicsize__ and impl_offset >= 0
    assert mask and not mask & (mask - 1)
    assert negative_bit_layout(torch.nn.Parameter) == layout
    assert negative_bit_layout(_Plain) == layout


@pytest.mark.parametrize("kind", [_OwnAnswer, _WithTorchFunction, int, np.ndarray, object])
def test_types_that_answer_for_themselves_or_are_not_torch_get_none(kind: type) -> None:
    assert negative_bit_layout(kind) is None


def test_no_allocation_size_means_no_layout(
    fresh_probe: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch_negative_bit, "_usable_size_reader", lambda: None)
    assert negative_bit_layout(torch.Tensor) is None


def test_a_key_set_torch_does_not_confirm_means_no_layout(
    fresh_probe: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    class _Keys:
        def raw_repr(self) -> int:
            return 0x0123456789ABCDEF  # a word no TensorImpl holds

    monkeypatch.setattr(torch._C, "_dispatch_keys", lambda tensor: _Keys())
    assert negative_bit_layout(torch.Tensor) is None


def test_a_disagreement_with_is_neg_means_no_layout(
    fresh_probe: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = torch_negative_bit.read_negative_bit
    monkeypatch.setattr(
        torch_negative_bit, "read_negative_bit", lambda tensor, layout: not real(tensor, layout)
    )
    assert negative_bit_layout(torch.Tensor) is None


def test_a_probe_that_raises_means_no_layout_for_now_and_is_tried_again(
    fresh_probe: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def refuse(tensor: Any, on: bool) -> None:
        calls.append(on)
        raise RuntimeError("no _set_neg here")

    monkeypatch.setattr(torch_negative_bit.PROBE, "failed", 0)
    monkeypatch.setattr(torch._C, "_set_neg", refuse)
    for _ in range(PROBE_TRIES + 2):
        assert negative_bit_layout(torch.Tensor) is None
    assert len(calls) == PROBE_TRIES  # then it gives up


def test_the_probe_ignores_the_callers_default_device_and_inference_mode(
    fresh_probe: None,
) -> None:
    expected = torch_negative_bit._probe(torch)
    torch.set_default_device("meta")
    try:
        with torch.inference_mode():
            assert negative_bit_layout(torch.Tensor) == expected is not None
    finally:
        torch.set_default_device(None)


_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int64]


@st.composite
def _tensors(draw: st.DrawFn) -> Any:
    shape = draw(st.lists(st.integers(0, 4), min_size=0, max_size=3))
    tensor = torch.zeros(shape, dtype=draw(st.sampled_from(_DTYPES)))
    for step in draw(st.lists(st.sampled_from(list(_STEPS)), max_size=6)):
        tensor = _STEPS[step](tensor)
    return tensor


def _complex_part(tensor: Any) -> Any:
    values = torch.zeros(tensor.shape, dtype=torch.complex64)
    return values.conj().imag if tensor.is_neg() else values.imag


def _swap_data(tensor: Any) -> Any:
    tensor.data = tensor._neg_view()
    return tensor


def _set_neg(tensor: Any) -> Any:
    torch._C._set_neg(tensor, not tensor.is_neg())
    return tensor


_STEPS: dict[str, Callable[[Any], Any]] = {
    "neg_view": lambda t: t._neg_view(),
    "resolve": lambda t: t.resolve_neg(),
    "swap_data": _swap_data,
    "set_neg": _set_neg,
    "transpose": lambda t: t.mT if t.dim() >= 2 else t,
    "slice": lambda t: t[..., ::2] if t.dim() else t,
    "complex_part": _complex_part,
    "parameter": lambda t: torch.nn.Parameter(t, requires_grad=t.is_floating_point()),
    "subclass": lambda t: t.as_subclass(_Plain),
    "detach": lambda t: t.detach(),
    "clone": lambda t: t.clone(),
}


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(tensor=_tensors())
def test_the_read_bit_is_what_is_neg_says(tensor: Any) -> None:
    layout = negative_bit_layout(type(tensor))
    assert layout is not None
    assert read_negative_bit(tensor, layout) is bool(tensor.is_neg())


def test_the_launcher_reads_the_bit_where_the_layout_says(
    artifact: Artifact, adapter: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A layout naming a bit torch never sets makes a negated input read as raw memory: proof
    that the launcher reads memory, not ``is_neg()`` (the real layout gives the right sign)."""
    from tl_runtime.adapters import cython_adapter

    real = negative_bit_layout(torch.Tensor)
    assert real is not None
    wrong = (real[0], real[1], 1 << 63)
    assert all(not read_negative_bit(torch.zeros(1)._neg_view(), wrong) for _ in range(2))
    monkeypatch.setattr(cython_adapter, "negative_bit_layout", lambda kind: wrong)
    kernel = tl_runtime.load(artifact("scale_rows"), adapter=adapter)
    a = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    c = torch.zeros(4, 8)
    kernel(a, c)
    torch._C._set_neg(a, True)
    kernel(a, c)
    assert c[0, 1].item() == 2.0  # raw memory: the wrong layout was read
    monkeypatch.undo()
    kernel = tl_runtime.load(artifact("scale_rows"), adapter=adapter)
    kernel(a, c)
    assert c[0, 1].item() == -2.0
