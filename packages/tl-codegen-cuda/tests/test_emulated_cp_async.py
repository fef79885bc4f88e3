"""The CPU emulation's cp.async against the PTX ISA ("cp.async", "cp.async.commit_group",
"cp.async.wait_group"), through hand-written kernels (fragment_test_kernels.py): a read
before the wait sees the old data, wait_group(n) retires all but the n newest groups,
a wait does not retire uncommitted copies, zero-fill reads nothing; and the test
kernels compile with nvcc against the real tl_tensor_core.h.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu
import fragment_test_kernels as kernels

pytestmark = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


def _cp_async(scenario: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    src = np.random.default_rng(scenario).integers(0, 2**32, (32, 16), dtype=np.uint32)
    out = np.zeros((4, 32, 4, 4), np.uint32)
    kernels.run("cp_async_groups", {"src": src, "out": out, "scenario": scenario})
    sentinel = np.array([[0xDEAD0000 + b * 16 + i for i in range(4)] for b in range(4)], np.uint32)
    return src, out, np.broadcast_to(sentinel, (32, 4, 4))


def test_cp_async_is_not_visible_before_its_wait() -> None:
    src, out, old = _cp_async(0)
    np.testing.assert_array_equal(out[0], old)
    np.testing.assert_array_equal(out[1][:, 0], src[:, 0:4])
    np.testing.assert_array_equal(out[1][:, 1:], old[:, 1:])


def test_cp_async_wait_group_leaves_the_newest_groups_pending() -> None:
    src, out, old = _cp_async(1)
    # wait_group(2): the first of three groups is complete.
    np.testing.assert_array_equal(out[0][:, 0], src[:, 0:4])
    np.testing.assert_array_equal(out[0][:, 1:], old[:, 1:])
    # wait_group(1): the first two (the second made of two 8-byte copies).
    np.testing.assert_array_equal(out[1][:, 1], src[:, 4:8])
    np.testing.assert_array_equal(out[1][:, 2], old[:, 2])
    # wait_group(0): all; the 4-byte copy wrote one word only.
    np.testing.assert_array_equal(out[2][:, 2, 0], src[:, 8])
    np.testing.assert_array_equal(out[2][:, 2, 1:], old[:, 2, 1:])
    np.testing.assert_array_equal(out[2][:, 3], old[:, 3])


def test_cp_async_zero_fill_writes_zeros_and_reads_nothing() -> None:
    src, out, old = _cp_async(2)
    np.testing.assert_array_equal(out[0], old)
    np.testing.assert_array_equal(out[1][:, 0], 0)  # 16 bytes of zeros
    np.testing.assert_array_equal(out[1][:, 1, :2], 0)  # 8 bytes of zeros
    np.testing.assert_array_equal(out[1][:, 1, 2:], old[:, 1, 2:])
    np.testing.assert_array_equal(out[1][:, 2, 0], src[:, 0])  # valid: copied
    np.testing.assert_array_equal(out[1][:, 3], src[:, 12:16])


def test_cp_async_wait_does_not_retire_uncommitted_copies() -> None:
    src, out, old = _cp_async(3)
    np.testing.assert_array_equal(out[0], old)
    np.testing.assert_array_equal(out[1][:, 0, 0], src[:, 0])


def test_cp_async_refuses_a_misaligned_copy() -> None:
    with pytest.raises(RuntimeError, match="not 16-byte aligned"):
        _cp_async(4)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_the_test_kernels_compile_against_the_real_header(tmp_path: Path) -> None:
    # The same kernels with the device asm of tl_tensor_core.h (no emulation): the
    # stand-ins are called with the real helpers' signatures.
    source = tmp_path / "fragments.cu"
    source.write_text(kernels.source())
    done = subprocess.run(
        ["nvcc", "-cubin", "-arch=sm_89", "-o", str(tmp_path / "f.cubin"), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
