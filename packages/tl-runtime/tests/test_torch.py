"""torch tensors on every CPU adapter: the fast path, autograd, odd tensors, mixed arguments."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import runtime_kernels

import tl_runtime

torch = pytest.importorskip("torch")

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


def test_seen_signature_skips_the_full_check(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("vadd_elem"), adapter=adapter)
    calls = _count_full_checks(kernel)
    a, b, c = torch.arange(1024.0), torch.ones(1024), torch.empty(1024)
    for _ in range(3):
        kernel(a, b, c)
    assert torch.equal(c, a + 1)
    assert calls[0] == 0
    # a different layout is checked in full (and refused: the kernel writes C in place)
    with pytest.raises(ValueError, match="'C': expected a C-contiguous array"):
        kernel(a, b, torch.empty(2048)[::2])
    assert calls[0] == 1


def test_out_idx_allocates_torch_on_the_fast_path(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("vadd_n", out_idx=(2,)), adapter=adapter)
    calls = _count_full_checks(kernel)
    x = torch.arange(100.0)
    out = kernel(x, x)
    assert type(out) is torch.Tensor and out.dtype == torch.float32 and out.shape == (100,)
    assert torch.equal(out, 2 * x)
    assert out.data_ptr() % 64 == 0
    assert calls[0] == 0
    # numpy in, numpy out, also without the full check
    a = runtime_kernels.aligned_array(np, (100,), "float32")
    a[:] = np.arange(100)
    result = kernel(a, a)
    assert type(result) is np.ndarray and result.ctypes.data % 64 == 0
    np.testing.assert_array_equal(result, 2 * a)
    assert calls[0] == 0


def test_scalars_with_torch(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("axpb"), adapter=adapter)
    calls = _count_full_checks(kernel)
    a, c = torch.arange(64.0), torch.empty(64)
    kernel(a, c, 2.0, 3)
    assert torch.equal(c, a * 2 + 3)
    assert calls[0] == 0


def test_requires_grad_inputs_give_plain_outputs(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("vadd_n", out_idx=(2,)), adapter=adapter)
    x = torch.arange(10.0, requires_grad=True)
    y = (x * 1).detach().requires_grad_(True)
    out = kernel(x, y)
    assert not out.requires_grad and out.grad_fn is None
    assert torch.equal(out, 2 * x.detach())
    # a non-leaf that requires grad is an input like any other
    out = kernel(x * 2, y)
    assert torch.equal(out, 3 * x.detach())


def test_written_tensor_that_requires_grad_is_refused(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("vadd_elem"), adapter=adapter)
    a = torch.ones(1024)
    c = torch.zeros(1024, requires_grad=True)
    with pytest.raises(ValueError, match="'C': expected a tensor that does not require grad") as e:
        kernel(a, a, c)
    assert len(str(e.value)) < 300
    assert torch.equal(c.detach(), torch.zeros(1024))  # nothing was written
    inout = tl_runtime.load(artifact("accumulate"), adapter=adapter)
    with pytest.raises(ValueError, match="'X': expected a tensor that does not require grad"):
        inout(a, torch.zeros(1024, requires_grad=True))


def test_non_contiguous_input(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("sum_diff", out_idx=(2, 3)), adapter=adapter)
    square = torch.zeros((8, 16), dtype=torch.float64)
    with pytest.raises(ValueError, match=r"'A': expected a C-contiguous array.*x.contiguous\(\)"):
        kernel(square.T, torch.zeros((16, 8), dtype=torch.float64))
    s, d = kernel(square.T.contiguous(), torch.ones((16, 8), dtype=torch.float64))
    assert torch.equal(s, torch.ones((16, 8), dtype=torch.float64)) and torch.equal(d, -s)


def test_meta_tensor_error_is_short(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("vadd_n", out_idx=(2,)), adapter=adapter)
    meta = torch.empty(10, device="meta")
    with pytest.raises(TypeError, match="'A': expected a tensor with data, got a torch meta") as e:
        kernel(meta, torch.ones(10))
    assert len(str(e.value)) < 300 and "frame #" not in str(e.value)


def test_mixed_torch_and_numpy(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("vadd_n", out_idx=(2,)), adapter=adapter)
    t = torch.arange(16.0)
    a = np.arange(16, dtype=np.float32)
    # outputs follow the first tensor argument
    out = kernel(t, a)
    assert type(out) is torch.Tensor and torch.equal(out, 2 * t)
    result = kernel(a, t)
    assert type(result) is np.ndarray
    np.testing.assert_array_equal(result, 2 * a)
    explicit = tl_runtime.load(artifact("vadd_elem"), adapter=adapter)
    c = np.zeros(1024, dtype=np.float32)
    explicit(torch.ones(1024), np.ones(1024, dtype=np.float32), c)
    np.testing.assert_array_equal(c, 2.0)


def test_wrong_dtype_and_shape_name_the_parameter(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("vadd_elem"), adapter=adapter)
    a, c = torch.ones(1024), torch.empty(1024)
    with pytest.raises(TypeError, match="'B': expected dtype float32, got float64"):
        kernel(a, torch.ones(1024, dtype=torch.float64), c)
    with pytest.raises(ValueError, match="'B': expected dim 0 = 1024, got 1023"):
        kernel(a, torch.ones(1023), c)


def test_misaligned_written_view_is_refused(artifact: Artifact, adapter: str) -> None:
    # vadd declares 64-byte alignment: a view one element in is not aligned
    kernel = tl_runtime.load(artifact("vadd"), adapter=adapter)
    a = torch.ones(1024)
    c = torch.zeros(1025)[1:]
    with pytest.raises(ValueError, match="'C': expected data aligned to 64 bytes"):
        kernel(a, a, c)
    # an input is copied instead
    out = torch.zeros(1024)
    kernel(torch.ones(1025)[1:], a, out)
    assert torch.equal(out, torch.full((1024,), 2.0))


def test_cython_adapter_imports_neither_tvm_ffi_package_nor_torch(artifact: Artifact) -> None:
    """The cython adapter needs libtvm_ffi only: importing tvm-ffi's Python package would
    import torch (seconds) wherever torch is installed."""
    import json
    import os
    import subprocess
    import sys
    import textwrap

    directory = artifact("vadd_elem")
    script = textwrap.dedent(
        f"""
        import json, sys
        import numpy as np
        import tl_runtime
        kernel = tl_runtime.load({str(directory)!r}, adapter="cython")
        a = np.ones(1024, np.float32); c = np.zeros(1024, np.float32)
        kernel(a, a, c)
        print(json.dumps({{"ok": bool((c == 2).all()), "tvm_ffi": "tvm_ffi" in sys.modules,
                           "torch": "torch" in sys.modules}}))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=os.environ
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report == {"ok": True, "tvm_ffi": False, "torch": False}


class _DeviceArray:
    """A DLPack producer that reports memory on another device (as a CUDA tensor does)."""

    def __init__(self, data: np.ndarray, device: tuple[int, int]) -> None:
        self._data = data
        self._device = device

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device

    def __dlpack__(self, **kwargs: Any) -> Any:
        raise AssertionError("a kernel must not read memory of another device")


@pytest.mark.parametrize("device", [(2, 0), (2, 1), (10, 0)])
def test_device_tensor_on_a_cpu_kernel_is_refused(
    artifact: Artifact, adapter: str, device: tuple[int, int]
) -> None:
    kernel = tl_runtime.load(artifact("vadd_n", out_idx=(2,)), adapter=adapter)
    x = torch.arange(10, dtype=torch.float32)
    on_device = _DeviceArray(np.arange(10, dtype=np.float32), device)
    for args, name in (((on_device, x), "A"), ((x, on_device), "B")):
        with pytest.raises(ValueError, match=rf"parameter '{name}'.*got device type {device[0]}"):
            kernel(*args)
    # after the refusals the fast path still serves good calls
    assert torch.equal(kernel(x, x), 2 * x)
