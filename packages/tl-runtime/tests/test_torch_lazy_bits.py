"""torch's lazy view bits flipped on a tensor the fast paths have seen, on both CPU adapters.

A tensor can gain torch's negative bit in place while keeping everything else the fast
paths read (object, data address, shape, strides, ``_version``): ``x.data = y`` where ``y``
is a lazily negated view of ``x``'s own memory (``x = z.imag; x.data = z.conj().imag``,
``x.data = x._neg_view()``) or ``torch._C._set_neg(x, True)``. The next call must compute
on the values the tensor stands for (inputs) or refuse it naming the parameter (written
parameters), never read or write the raw memory. (``z.conj().imag`` reaches the same state
through public calls, but as a view with element stride 2, which the contiguous kernels
here refuse; ``_neg_view``/``_set_neg`` give the bit to contiguous memory.) The conjugate bit exists only on complex
tensors, which no kernel dtype accepts: a tensor that gains it is refused by its dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tl_runtime

Artifact = Callable[..., Path]

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True, params=["memory", "is_neg"])
def negative_bit_read(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every case twice: the bit read from memory where the probe found it, and asked of
    ``is_neg()`` (what the launcher does where the probe finds nothing)."""
    from tl_runtime import torch_negative_bit

    if request.param == "memory":
        assert torch_negative_bit.negative_bit_layout(torch.Tensor) is not None
    else:
        monkeypatch.setattr(torch_negative_bit.PROBE, "probed", True)
        monkeypatch.setattr(torch_negative_bit.PROBE, "layout", None)
    return str(request.param)


def _negate_in_place(x: Any, how: str) -> None:
    """Give ``x`` the negative bit over the very memory it has (same object and address)."""
    address = x.data_ptr()
    if how == "data_neg_view":
        x.data = x._neg_view()
    elif how == "set_neg":
        torch._C._set_neg(x, True)
    else:
        raise AssertionError(how)
    assert x.is_neg() and x.data_ptr() == address


@pytest.mark.parametrize("how", ["data_neg_view", "set_neg"])
def test_input_negated_in_place_is_read_as_its_values(
    artifact: Artifact, adapter: str, how: str
) -> None:
    kernel = tl_runtime.load(artifact("scale_rows"), adapter=adapter)
    a = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    c = torch.zeros(4, 8)
    for _ in range(3):  # warm every cache the fast paths keep
        kernel(a, c)
    assert torch.equal(c, 2 * a)
    _negate_in_place(a, how)
    kernel(a, c)
    assert torch.equal(c, 2 * a)  # 2 * (the negated values), not 2 * (the raw memory)
    assert c[0, 1].item() == -2.0


@pytest.mark.parametrize("how", ["data_neg_view", "set_neg"])
def test_output_negated_in_place_is_refused(artifact: Artifact, adapter: str, how: str) -> None:
    kernel = tl_runtime.load(artifact("scale_rows"), adapter=adapter)
    a = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    c = torch.zeros(4, 8)
    for _ in range(3):
        kernel(a, c)
    _negate_in_place(c, how)
    with pytest.raises(ValueError, match=r"parameter 'C': .*lazy negative bit"):
        kernel(a, c)


def test_tensor_given_the_conjugate_bit_in_place_is_refused_by_dtype(
    artifact: Artifact, adapter: str
) -> None:
    kernel = tl_runtime.load(artifact("scale_rows"), adapter=adapter)
    a = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    c = torch.zeros(4, 8)
    for _ in range(3):
        kernel(a, c)
    a.data = torch.ones(4, 8, dtype=torch.complex64).conj()  # conj bit: complex only
    assert a.is_conj()
    with pytest.raises(TypeError, match="parameter 'A': expected dtype float32, got complex64"):
        kernel(a, c)


class _Subclass(torch.Tensor):
    """A plain tensor subclass: the launcher asks it through torch's own readers too."""


class _ClaimsNegative(torch.Tensor):
    """A subclass whose ``is_neg`` is Python code (asked with a plain call)."""

    def is_neg(self) -> bool:  # type: ignore[override]
        return bool(getattr(self, "claim", False))


@pytest.mark.parametrize("kind", [_Subclass, _ClaimsNegative])
def test_subclass_bits_are_asked_every_call(artifact: Artifact, adapter: str, kind: type) -> None:
    kernel = tl_runtime.load(artifact("scale_rows"), adapter=adapter)
    a = torch.arange(32, dtype=torch.float32).reshape(4, 8).as_subclass(kind)
    c = torch.zeros(4, 8).as_subclass(kind)
    for _ in range(3):
        kernel(a, c)
    assert torch.equal(c, 2 * a)
    if kind is _Subclass:
        torch._C._set_neg(a, True)
        kernel(a, c)
        assert c[0, 1].item() == -2.0
    else:  # the type's own answer is what counts: the slow path asks it too
        c.claim = True
        with pytest.raises(ValueError, match=r"parameter 'C': .*lazy negative bit"):
            kernel(a, c)


def test_written_tensor_given_requires_grad_in_place_is_refused(
    artifact: Artifact, adapter: str
) -> None:
    kernel = tl_runtime.load(artifact("scale_rows"), adapter=adapter)
    a = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    c = torch.zeros(4, 8)
    for _ in range(3):
        kernel(a, c)
    c.requires_grad_(True)
    with pytest.raises(ValueError, match="parameter 'C': expected a tensor that does not require"):
        kernel(a, c)
