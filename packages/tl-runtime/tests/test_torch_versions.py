"""A kernel's in-place write of a caller's torch tensor moves the tensor's version count, as
torch's own in-place operations do, on both CPU adapters and every path (issue 24).

autograd saves tensors for the backward pass and checks their version count there: a
tensor written in place after it was saved is refused ("modified by an inplace
operation"). A kernel writes through the data pointer, which torch cannot see: before, the
count stayed put and ``backward()`` used the overwritten values, a silently wrong gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import tl_runtime

Artifact = Callable[..., Path]

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True, params=["memory", "marker"])
def version_count_moved(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every case twice: the count moved in memory where the probe found it, and through
    ``torch._C._increment_version`` (what the launcher does where the probe finds nothing)."""
    from tl_runtime import torch_version_count

    if request.param == "memory":
        assert torch_version_count.version_count_layout(torch.Tensor) is not None
    else:
        monkeypatch.setattr(torch_version_count.PROBE, "probed", True)
        monkeypatch.setattr(torch_version_count.PROBE, "layout", None)
    return str(request.param)


def test_a_saved_tensor_the_kernel_overwrites_fails_the_backward_pass(
    artifact: Artifact, adapter: str
) -> None:
    kernel = tl_runtime.load(artifact("scale_rows"), adapter=adapter)
    a = torch.ones(4, 8)
    for call in range(3):  # the first call's full path, then the fast path
        x = torch.ones(4, 8, requires_grad=True)
        weight = torch.ones(4, 8)
        loss = (x * weight).sum()  # autograd saves weight
        before = weight._version
        kernel(a, weight)  # weight := 2 * a, in place
        assert weight._version > before, call
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


def test_only_written_tensors_count_a_write(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("scale_rows"), adapter=adapter)
    a = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    c = torch.zeros(4, 8)
    view = c.view(32)  # shares c's count
    for call in range(1, 4):
        kernel(a, c)
        assert a._version == 0
        assert c._version == view._version == call
    assert torch.equal(c, 2 * a)


def test_inference_tensors_have_no_count_and_are_written(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("scale_rows"), adapter=adapter)
    a = torch.ones(4, 8)
    with torch.inference_mode():
        c = torch.zeros(4, 8)
    for _ in range(2):
        kernel(a, c)
    assert torch.equal(c, 2 * a)


def test_a_numpy_output_beside_torch_inputs_is_left_alone(artifact: Artifact, adapter: str) -> None:
    np = pytest.importorskip("numpy")
    kernel = tl_runtime.load(artifact("scale_rows"), adapter=adapter)
    a = torch.ones(4, 8)
    c = np.zeros((4, 8), np.float32)
    for _ in range(2):
        kernel(a, c)
    assert (c == 2).all() and a._version == 0


def test_the_probe_reads_the_count_torch_reports(version_count_moved: str) -> None:
    if version_count_moved == "marker":
        pytest.skip("the probe itself: once")
    from tl_runtime.torch_version_count import read_version_count, version_count_layout

    layout = version_count_layout(torch.Tensor)
    assert layout is not None
    x = torch.zeros(3)
    for count in range(4):
        assert read_version_count(x, layout) == x._version == count
        assert read_version_count(x[1:], layout) == count  # a view shares the count
        x.add_(1)
    with torch.inference_mode():
        uncounted = torch.zeros(3)
    assert read_version_count(uncounted, layout) is None

    class Overrides(torch.Tensor):
        @classmethod
        def __torch_function__(cls, *args: object, **kwargs: object) -> object:
            return super().__torch_function__(*args, **kwargs)

    assert version_count_layout(Overrides) is None  # its own behaviour: torch is asked
