"""Operands TVM's builders crashed on or silently misread, refused at parse (issue 24).

``None`` as a loop extent, a stored value, an index or an operand of ``T.if_then_else``
and other re-exported builders made TVM's C++ constructors segfault while the kernel was
parsed; a float loop extent was truncated (``T.serial(7.9)`` ran 7 iterations); a
constant slice or ``T.Ramp`` past the end of a tensor wrote the caller's memory; an
atomic on a constant index outside its buffer was dropped; ``reverse="False"`` scanned
backwards; plain mistakes (``A.shape[0] = 3``, ``T.get_thread_binding("x")``) were reported as
internal errors. Each
case runs in a subprocess, so a crash fails the test instead of the run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_KERNEL = """
import tl_ir.language as T
from tl_ir.errors import KernelTypeError

def build():
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1):
            {statement}

try:
    build()
    print("ACCEPTED")
except KernelTypeError as error:
    print("REFUSED", error)
"""

CASES = {
    "for i in T.serial(None):\n                A[0] = 1.0": "the extent must be an integer, got None",
    "for i in T.serial(None, 8):\n                A[0] = 1.0": "start must be an integer",
    "for i in T.unroll(None):\n                A[0] = 1.0": "must be an integer, got None",
    "for i in T.vectorized(None):\n                A[0] = 1.0": "must be an integer, got None",
    "for i, j in T.grid(8, None):\n                A[0] = 1.0": "extent 1 must be an integer",
    "for i in T.Pipelined(None, num_stages=1):\n                A[0] = 1.0": "must be an integer",
    "for i in T.serial(7.9):\n                A[0] = 1.0": "must be an integer, got 7.9",
    "for i in T.serial(True):\n                A[0] = 1.0": "must be an integer, got True",
    "A[0] = None": "A[...] = None",
    "A[None] = 1.0": "index 0 is None",
    "A[0] = T.if_then_else(None, 1.0, 2.0)": "T.if_then_else: operand 0 is None",
    "A[0] = T.BufferLoad(A, [None])": "T.BufferLoad: operand 1",
    "A[6:10] = B[0:4]": "the slice 6:10 (4 elements) of buffer A is out of bounds in dim 0",
    "B[0:4] = A[6:10]": "(a slice or T.Ramp) of buffer A is out of bounds in dim 0",
    "A[T.Ramp(6, 1, 4)] = T.Broadcast(T.float32(7), 4)": "(a slice or T.Ramp) of buffer A is out",
    "T.atomic_add(A[100], 1.0)": "constant index 100 of buffer A is out of bounds",
    "T.atomic_store(A[-9], 1.0)": "constant index -9 of buffer A is out of bounds",
    "B[0] = T.atomic_load(A[8])": "constant index 8 of buffer A is out of bounds",
    'T.cumsum(A, B, reverse="False")': "T.cumsum(reverse=...): expected a bool",
    'T.reduce_sum(A, B, clear="False")': "T.reduce_sum(clear=...): expected a bool",
    "B[1.5] = 1.0": "is a float32 value: expected an integer index",
    't = T.get_thread_binding("x")': "got dim='x'",
    "A.shape[0] = 3": "cannot assign to an element of",
    "B[0] = T.shfl_xor(A[0], 1, width=3)": "width must be a power of two",
    "c = T.index_to_coordinates(5, (0, 4))": "expected positive extents",
    "B[0] = A[A[1]]": "index A[1] of buffer A in dim 0 is a float32 value",
    # A bool index was used as 0 or 1.
    "B[True] = 1.0": "of buffer B in dim 0 is a bool value: expected an integer index",
    "B[0] = A[B[0] < 1.0]": "of buffer A in dim 0 is a bool value: expected an integer index",
}


def _run(statement: str, directory: Path) -> subprocess.CompletedProcess[str]:
    # A kernel's source must be in a file (the parser reads it).
    path = directory / "kernel.py"
    path.write_text(textwrap.dedent(_KERNEL).replace("{statement}", statement))
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("statement", list(CASES))
def test_the_operand_is_refused_by_name(statement: str, tmp_path: Path) -> None:
    done = _run(statement, tmp_path)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.startswith("REFUSED"), done.stdout + done.stderr[-2000:]
    assert CASES[statement] in done.stdout, done.stdout


def test_a_slice_inside_the_tensor_and_a_ramp_still_build(tmp_path: Path) -> None:
    ramp = "A[T.Ramp(0, 2, 4)] = T.Broadcast(T.float32(7), 4)"
    done = _run("A[4:8] = B[0:4]\n            " + ramp, tmp_path)
    assert done.stdout.startswith("ACCEPTED"), done.stdout + done.stderr[-2000:]
