"""Parameters with declared strides on the fast paths: numpy and torch, both CPU adapters.

A call whose arrays have exactly the declared strides (and pass every other check)
skips the Python checker; anything else takes it and gets its error unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import runtime_kernels
from numpy.lib.stride_tricks import as_strided

import tl_runtime

Artifact = Callable[..., Path]


def _count_full_checks(kernel: Any) -> list[int]:
    """Make the kernel's full checker count its calls (the fast paths never call it)."""
    checker = kernel._impl.checker
    calls = [0]
    prepare = checker.prepare

    def counting(args: Any) -> Any:
        calls[0] += 1
        return prepare(args)

    checker.prepare = counting
    return calls


def _column_major(rows: int, cols: int, lead: int, offset_bytes: int = 0, fill: bool = True) -> Any:
    """A (rows, cols) float32 view with element strides (1, lead), ``offset_bytes`` past 64."""
    raw = runtime_kernels.aligned_array(np, (cols * lead * 4 + 64,), "uint8")
    matrix = np.ndarray((cols, lead), np.float32, buffer=raw, offset=offset_bytes)
    view = matrix.T[:rows]
    view[...] = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) if fill else 0
    return view


def test_declared_strides_take_the_fast_path(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("strided_copy"), adapter=adapter)
    calls = _count_full_checks(kernel)
    a = _column_major(8, 32, 16)
    b = _column_major(8, 32, 12, fill=False)
    for _ in range(3):
        kernel(a, b)
    np.testing.assert_array_equal(b, a)
    # a new pair of arrays: checked again (overlap, alignment), still without the full check
    a2, b2 = _column_major(8, 32, 16), _column_major(8, 32, 12, fill=False)
    a2 += 1
    kernel(a2, b2)
    np.testing.assert_array_equal(b2, a2)
    assert calls[0] == 0


def test_refusals_of_strided_params_are_the_full_checks(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("strided_copy"), adapter=adapter)
    calls = _count_full_checks(kernel)
    a, b = _column_major(8, 32, 16), _column_major(8, 32, 12)
    kernel(a, b)
    with pytest.raises(ValueError, match="'A': expected stride 1 = 16, got 12"):
        kernel(_column_major(8, 32, 12), b)
    with pytest.raises(ValueError, match="'B': expected stride 0 = 1, got 32"):
        kernel(a, runtime_kernels.aligned_array(np, (8, 32), "float32"))  # C-contiguous
    with pytest.raises(TypeError, match="'A': expected dtype float32, got float64"):
        kernel(as_strided(np.zeros(512), (8, 32), (8, 128)), b)
    with pytest.raises(ValueError, match="'B': expected data aligned to 4 bytes"):
        kernel(a, _column_major(8, 32, 12, offset_bytes=2))
    read_only = _column_major(8, 32, 12)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="'B': expected a writable array"):
        kernel(a, read_only)
    # an output sharing memory with the input (the input's column 1 is the output's)
    shared = _column_major(8, 32, 16)
    overlapping = as_strided(shared[:, 1:], (8, 32), (4, 48))
    with pytest.raises(ValueError, match="'B': expected memory shared with no other"):
        kernel(shared, overlapping)
    assert calls[0] == 6


def test_copied_strided_inputs_keep_the_declared_layout(artifact: Artifact, adapter: str) -> None:
    """Read-only or misaligned inputs are copied with their strides, not compacted."""
    kernel = tl_runtime.load(artifact("strided_copy"), adapter=adapter)
    read_only = _column_major(8, 32, 16)
    read_only.flags.writeable = False
    b = _column_major(8, 32, 12, fill=False)
    kernel(read_only, b)
    np.testing.assert_array_equal(b, read_only)
    misaligned = _column_major(8, 32, 16, offset_bytes=2)
    misaligned += 5
    kernel(misaligned, b)
    np.testing.assert_array_equal(b, misaligned)


def test_symbolic_strides_bind_on_the_fast_path(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("strided_rows"), adapter=adapter)
    calls = _count_full_checks(kernel)
    for width in (16, 9, 8):
        wide = runtime_kernels.aligned_array(np, (5, width), "float32")
        wide[...] = np.arange(5 * width).reshape(5, width)
        c = runtime_kernels.aligned_array(np, (5, 8), "float32")
        kernel(wide[:, :8], c)
        np.testing.assert_array_equal(c, 2 * wide[:, :8])
    assert calls[0] == 0
    with pytest.raises(ValueError, match="'A': expected stride 1 = 1, got 2"):
        kernel(runtime_kernels.aligned_array(np, (5, 16), "float32")[:, ::2], c)
    # a row stride reaching beyond the 32-bit index width (the view is never read)
    far = as_strided(np.zeros(64, np.float32), (5, 8), (4 * 2**29, 4))
    with pytest.raises(ValueError, match="'A': expected at most 2147483647 elements"):
        kernel(far, c)
    assert calls[0] == 2


def test_strided_torch_tensors(artifact: Artifact, adapter: str) -> None:
    torch = pytest.importorskip("torch")
    kernel = tl_runtime.load(artifact("strided_copy"), adapter=adapter)
    calls = _count_full_checks(kernel)
    a = torch.arange(32 * 16, dtype=torch.float32).reshape(32, 16).T[:8]
    b = torch.zeros((32, 12)).T[:8]
    for _ in range(2):
        kernel(a, b)
    assert torch.equal(b, a)
    assert calls[0] == 0
    with pytest.raises(ValueError, match="'A': expected stride 1 = 16, got 12"):
        kernel(torch.zeros((32, 12)).T[:8], b)
    with pytest.raises(TypeError, match="'A': expected dtype float32, got float64"):
        kernel(torch.zeros((32, 16), dtype=torch.float64).T[:8], b)
    misaligned = torch.from_numpy(_column_major(8, 32, 12, offset_bytes=2))
    with pytest.raises(ValueError, match="'B': expected data aligned to 4 bytes"):
        kernel(a, misaligned)
    grad = torch.zeros((32, 12), requires_grad=True)
    with pytest.raises(ValueError, match="'B': expected a tensor that does not require grad"):
        kernel(a, grad.T[:8])
    assert calls[0] == 4
    rows = tl_runtime.load(artifact("strided_rows"), adapter=adapter)
    row_calls = _count_full_checks(rows)
    wide = torch.arange(5 * 16, dtype=torch.float32).reshape(5, 16)
    out = torch.empty((5, 8))
    rows(wide[:, :8], out)
    assert torch.equal(out, 2 * wide[:, :8])
    assert row_calls[0] == 0


def test_out_idx_shape_bound_by_a_strided_param(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("strided_rows", out_idx=(1,)), adapter=adapter)
    calls = _count_full_checks(kernel)
    wide = runtime_kernels.aligned_array(np, (6, 12), "float32")
    wide[...] = np.arange(72).reshape(6, 12)
    out = kernel(wide[:, :8])
    assert type(out) is np.ndarray and out.shape == (6, 8)
    np.testing.assert_array_equal(out, 2 * wide[:, :8])
    assert calls[0] == 0
    # zero-size: the full path (numpy's zero strides), same result as before
    assert kernel(runtime_kernels.aligned_array(np, (0, 12), "float32")[:, :8]).shape == (0, 8)
    assert calls[0] == 1


def test_out_idx_parameter_with_declared_strides_is_refused_at_load(artifact: Artifact) -> None:
    # The runtime allocates out_idx outputs C-contiguous: a strided one is refused clearly
    # when the kernel is loaded, not by the kernel's own stride check at every call.
    with pytest.raises(
        NotImplementedError, match=r"out_idx parameter 'B' declares strides \[1, 12\]"
    ):
        tl_runtime.load(artifact("strided_copy", out_idx=(1,)))
    # strided inputs with a contiguous out_idx output are fine
    kernel = tl_runtime.load(artifact("strided_rows", out_idx=(1,)))
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(kernel(a), 2 * a)


def test_a_written_array_whose_elements_share_memory_is_refused(
    artifact: Artifact, adapter: str
) -> None:
    """A broadcast or expanded view as a written parameter: the writes of different
    elements would land on one place (torch refuses writing such a tensor too)."""
    kernel = tl_runtime.load(artifact("strided_out"), adapter=adapter)
    a = runtime_kernels.aligned_array(np, (4, 8), "float32")
    a[...] = np.arange(32).reshape(4, 8)
    wide = runtime_kernels.aligned_array(np, (4, 12), "float32")
    kernel(a, wide[:, :8])  # rows 12 apart: no element shared
    np.testing.assert_array_equal(wide[:, :8], 2 * a)
    row = runtime_kernels.aligned_array(np, (16,), "float32")
    for strides in ((0, 4), (16, 4)):  # every row on one row; rows 4 apart, 8 long
        with pytest.raises(ValueError, match="'C': expected a written array whose elements"):
            kernel(a, as_strided(row, (4, 8), strides))
        kernel(a, wide[:, :8])  # the fast path's cache does not keep the refused view
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="'C': expected a written array whose elements"):
        kernel(torch.from_numpy(a), torch.zeros(8).expand(4, 8))


def test_the_overlap_tests_of_a_layout() -> None:
    from tl_runtime.argument_memory import layout_overlaps, strides_separate

    assert strides_separate((4, 8), (12, 1)) and layout_overlaps((4, 8), (12, 1)) is False
    assert not strides_separate((4, 8), (4, 1)) and layout_overlaps((4, 8), (4, 1))
    assert layout_overlaps((4, 8), (0, 1)) and layout_overlaps((2, 2), (1, 1))
    assert layout_overlaps((1, 8), (0, 1)) is False  # a dim of extent 1 addresses once
    # interleaved strides: the quick test cannot prove it, the enumeration can
    assert not strides_separate((2, 3), (3, 2)) and layout_overlaps((2, 3), (3, 2)) is False
    assert layout_overlaps((3000, 3000), (2, 3)) is None  # too many to enumerate
    assert layout_overlaps((4, 0), (0, 0)) is False
