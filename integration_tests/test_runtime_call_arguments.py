"""Kernels written in tl-ir, compiled by tl_jit, called with arguments they cannot compute
right: every adapter refuses them by name before any launch (no crash, no wrong answer).

tl-ir's symbolic dims are int32, so an array of 2**31 elements or more would be indexed
with wrapped integers: a (2, 2**30 + 64) fill used to write 2 GiB before the array. The
huge arrays are as_strided views over a few KiB, called in a child process so that a
regression crashes the child, not the test run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_ir.language as T
import tl_jit
import tl_runtime


def _fill(block: int = 64) -> Any:
    M = T.symbolic("M")
    N = T.symbolic("N")

    @T.prim_func
    def fill(B: T.Tensor((M, N), "float32"), value: T.float32):
        with T.Kernel(T.ceildiv(N, block), M, threads=128) as (bx, by):
            for j in T.Parallel(block):
                if bx * block + j < N:
                    B[by, bx * block + j] = value

    return fill


def _add(block: int = 64) -> Any:
    N = T.symbolic("N")

    @T.prim_func
    def add(
        A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")
    ):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return add


@pytest.fixture(scope="module")
def artifacts() -> dict[str, Path]:
    return {
        "fill": Path(tl_jit.compile(_fill(), target="c").artifact_dir),
        "add": Path(tl_jit.compile(_add(), target="c").artifact_dir),
    }


def test_tl_ir_kernels_index_with_32_bits_and_refuse_larger_arrays(
    artifacts: dict[str, Path],
) -> None:
    assert tl_runtime.read_manifest(artifacts["fill"]).index_bits == 32
    script = textwrap.dedent(
        f"""
        import json
        import numpy as np
        from numpy.lib.stride_tricks import as_strided
        import tl_runtime

        base = np.zeros(4096, np.float32)
        out = []
        for adapter in ("tvm_ffi", "cython"):
            fill = tl_runtime.load({str(artifacts["fill"])!r}, adapter=adapter)
            add = tl_runtime.load({str(artifacts["add"])!r}, adapter=adapter)
            wide = as_strided(base, shape=(2, 2**30 + 64), strides=(4 * (2**30 + 64), 4))
            long = as_strided(base, shape=(2**32 + 16,), strides=(4,))
            for call in (lambda: fill(wide, 1.0), lambda: add(long, long, long)):
                for _ in range(2):
                    try:
                        call()
                        out.append("ran")
                    except ValueError as exc:
                        out.append(str(exc))
            small = np.zeros((3, 100), np.float32)
            fill(small, 2.0)
            out.append(bool((small == 2.0).all()))
        print(json.dumps(out))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"child exited with {proc.returncode}: {proc.stderr[-2000:]}"
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results[4] is True and results[9] is True
    refusals = results[:4] + results[5:9]
    for message in refusals:
        assert "expected at most 2147483647 elements (the kernel indexes with 32-bit" in message
    assert all("parameter 'B'" in m for m in refusals[0:2] + refusals[4:6])
    assert all("parameter 'A'" in m for m in refusals[2:4] + refusals[6:8])


@pytest.mark.parametrize("adapter", ["tvm_ffi", "cython"])
def test_tl_ir_kernels_refuse_overlap_and_byte_swapped_arrays(
    artifacts: dict[str, Path], adapter: str
) -> None:
    add = tl_runtime.load(artifacts["add"], adapter=adapter)
    raw = np.ones(2049, np.float32)
    a, b = raw[:1024], np.full(1024, 2.0, np.float32)
    for _ in range(2):
        with pytest.raises(ValueError, match="parameter 'C': expected memory shared with no other"):
            add(a, b, raw[1:1025])
        with pytest.raises(TypeError, match="parameter 'B': expected float32 in native"):
            add(a, b.astype(b.dtype.newbyteorder("S")), raw[1025:2049])
    assert np.all(a == 1.0)
    c = raw[1025:2049]
    add(a, b, c)
    assert np.all(c == 3.0)


@pytest.mark.parametrize("adapter", ["cython", "tvm_ffi"])
def test_every_uint64_scalar_reaches_the_kernel(adapter: str) -> None:
    # tvm-ffi passes Python ints as int64: uint64 values of 2**63 or more were refused
    # ("Mismatched type on argument #1 ... expected int") while cython took them.
    torch = pytest.importorskip("torch")

    @T.prim_func
    def add_u64(A: T.Tensor((4,), "uint64"), x: T.uint64, C: T.Tensor((4,), "uint64")):
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(4):
                C[i] = A[i] + x

    kernel = tl_jit.compile(add_u64, out_idx=[-1], target="c", execution_backend=adapter)
    for value in (0, 5, 2**63 - 1, 2**63, 2**64 - 1, np.uint64(2**63 + 7)):
        expected = [int(value)] * 4
        assert kernel(np.zeros(4, np.uint64), value).tolist() == expected
        assert kernel(torch.zeros(4, dtype=torch.uint64), value).tolist() == expected
    for bad in (-1, 2**64):
        with pytest.raises(ValueError, match=r"parameter 'x': expected an int in \[0, "):
            kernel(np.zeros(4, np.uint64), bad)
