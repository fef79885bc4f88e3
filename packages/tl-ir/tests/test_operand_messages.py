"""A wrong operand in a kernel is refused with a message naming it (issue 24).

TVM's builders answered these with their own texts: an FFI signature ("Mismatched type
on argument #1 when calling `script.ir_builder.tirx.BufferStore(0: ir.Var, ...)`"), a
C++ check ("`lhs` is null in the binary operator", "Type ir.PrimType does not support
subscript"), or nothing at all until the C code generator stopped with an internal
error (``T.exp`` of an int, an unknown scope, ``T.float32(None)``). Each case parses a
kernel holding one wrong statement and checks the message names the call or the buffer,
what is expected and what came. None of these crashed the process, so they run here.
"""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from typing import Any

import pytest

from tl_ir.errors import KernelTypeError

_KERNEL = """
import numpy as np
import tl_ir.language as T

def build():
    @T.prim_func
    def main(
        A: T.Tensor((8,), "float32"),
        I: T.Tensor((8,), "int32"),
        B2: T.Tensor((4, 4), "float32"),
        x: T.float32,
        n: T.int32,
    ):
        with T.Kernel(1, threads=8) as bx:
            S = T.alloc_shared((8,), "float32")
{body}
    return main
"""

_COUNTER = itertools.count()

CASES = {
    # stored values
    "A[0] = 'abc'": "A[...] = value: expected a scalar value or expression of A's dtype "
    "float32, got str 'abc'",
    "A[0] = [1.0, 2.0]": "got list [1.0, 2.0]",
    "A[0] = {1: 2}": "got dict {1: 2}",
    "A[0] = 1j": "got complex 1j",
    "A[0] = np.array([1.0, 2.0])": "got a numpy.ndarray of shape (2,)",
    "A[0] = S": "got the shared.dyn tile S (shape (8,), float32); copy a tile with T.copy",
    "I[0] = float('nan')": "I[...] = nan: an integer element (int32) cannot hold nan",
    "I[0] = float('-inf')": "cannot hold -inf",
    "A[0] = 1e300": "the constant 1e+300 is beyond the largest finite float32",
    # indices
    "A['0'] = 1.0": "A[...]: index 0 must be an integer, a slice or an integer expression, "
    "got str '0'",
    "A[S] = 1.0": "index 0 must be an integer, a slice or an integer expression, got the "
    "shared.dyn tile S",
    "A[...] = 1.0": "got ... (Ellipsis)",
    "A[0] = A['1']": "A[...]: index 0 must be an integer",
    "A[0] = A[None]": "index 0 must be an integer, a slice or an integer expression, got None",
    "A[0, 0] = 1.0": "A has 1 dim(s) (shape (8,)), indexed with 2 index(es)",
    "B2[0] = 1.0": "B2 has 2 dim(s) (shape (4, 4)), indexed with 1 index(es)",
    "A[0] = B2[1]": "B2 has 2 dim(s)",
    "T.copy(B2[0, 0, 0], S)": "B2 has 2 dim(s) (shape (4, 4)), indexed with 3 index(es)",
    "S[0:4] = A[0:8:2]": "a slice read with a step (A[0:8:2]) is not supported",
    # math functions
    "A[0] = T.exp(S)": "T.exp: operand 0 must be a scalar value or expression, got the "
    "shared.dyn tile S",
    "A[0] = T.exp('x')": "T.exp: operand 0 must be a scalar value or expression, got str 'x'",
    "A[0] = T.exp(I[0])": "T.exp: operand 0 must be a float, got the int32 expression I[0];",
    "A[0] = T.sqrt(n)": "T.sqrt: operand 0 must be a float, got the int32 expression n; "
    'convert it first: T.sqrt(T.cast(x, "float32"))',
    "A[0] = T.atan2(A[0], 1)": "T.atan2: operand 1 must be a float, got int 1",
    "A[0] = T.exp(None)": "T.exp: operand 0 must be a scalar value or expression, got None",
    "A[0] = T.max(S, 0.0)": "T.max: operand 0 must be a scalar value or expression, got the "
    "shared.dyn tile S",
    "A[0] = T.max(None, 1.0)": "T.max: operand 0 must be a scalar value or expression, got None",
    "A[0] = T.min('a', 1.0)": "T.min: operand 0 must be a scalar value or expression, got str",
    "A[0] = T.clamp(A[0], 'a', 1.0)": "T.clamp(dst, min_val, max_val): min_val must be a "
    "scalar value or expression, got str 'a'",
    "A[0] = T.clamp(A[0], 0.0, None)": "max_val must be a scalar value or expression, got None",
    "A[0] = T.cast(S, 'float32')": "T.cast(value, dtype): value must be a scalar value or "
    "expression, got the shared.dyn tile S",
    "A[0] = T.cast(None, 'float32')": "T.cast(value, dtype): value must be a scalar value "
    "or expression, got None",
    "A[0] = T.reinterpret('float32', T.int64(5))": "T.reinterpret: the value and the dtype "
    "must have the same bits, got the int64 expression T.int64(5) (64 bits) as float32 (32 bits)",
    # conditions
    "A[0] = T.if_then_else('c', 1.0, 2.0)": "T.if_then_else(cond, ...): cond must be a bool, "
    "got str 'c'",
    "A[0] = T.if_then_else(A[0], 1.0, 2.0)": "cond must be a bool, got the float32 expression",
    "A[0] = T.if_then_else(n, 1.0, 2.0)": "cond must be a bool, got the int32 expression n; "
    "compare a number to test it (x != 0)",
    "A[0] = T.Select(n, 1.0, 2.0)": "T.Select(cond, ...): cond must be a bool",
    # dtype constructors
    "A[0] = T.float32([1.0])": "T.float32(value): expected a scalar value or expression, got "
    "list [1.0]",
    "A[0] = T.cast(T.bool('x'), 'float32')": "T.bool(value): expected a scalar value or "
    "expression, got str 'x'",
    "A[0] = T.float32(None)": "T.float32(value): expected a scalar value or expression, got None",
    "I[0] = T.cast(T.uint32(float('nan')), 'int32')": "T.uint32(nan): uint32 cannot hold nan",
    # vectors
    "A[T.Ramp(0, 1, 0)] = 1.0": "T.Ramp: lanes must be at least 2, got 0",
    "A[T.Ramp(0, 1, 4)] = T.Broadcast(T.float32(1), -4)": "T.Broadcast: lanes must be at "
    "least 2, got -4",
    # allocations
    "W = T.alloc_shared((8,), 'float32', scope=3)": "T.alloc_shared(shape, dtype): scope "
    "must be one of 'global', 'shared', 'shared.dyn', 'local.fragment', 'local', "
    "'local.var', got 3",
    "W = T.alloc_fragment((8,), 'float32', scope='bogus')": "scope must be one of",
    "w = T.alloc_var('float32', scope='bogus')": "T.alloc_var(dtype): scope must be one of",
    # tiles used as values
    "if S > 0:\n    A[0] = 1.0": "a tile or tensor is not a value",
    "S += 1.0": "a tile or tensor is not a value",
    "A[0] = S + 1.0": "a tile or tensor is not a value",
    # None where TVM checked defined()
    "T.evaluate(None)": "T.evaluate(value): expected an expression (a call), got NoneType None",
    "T.evaluate('x')": "T.evaluate(value): expected an expression (a call), got str 'x'",
    "T.annotate_layout({S: lambda i, j: i})": "T.annotate_layout({S: ...}): expected a layout "
    "of 1 index, one per dim of S (rank 1, shape (8)), got a function of 2 indices",
    "T.assume(None)": "T.assume: operand 0 is None",
    "A[0] = T.call_extern(None, 'foo')": "T.call_extern: operand 0 is None",
    "T.evaluate(T.tvm_access_ptr(None, A.data, 0, 8, 1))": "T.tvm_access_ptr: operand 0 is None",
    "for i in T.thread_binding(None, thread='threadIdx.x'):\n    A[0] = 1.0": (
        "T.thread_binding: operand 0 is None"
    ),
    "while None:\n    A[0] = 1.0": "an operand is None (or missing); expected a value",
}


def _parse(source: str, directory: Path) -> Any:
    """The kernel ``build()`` in ``source`` returns (a kernel's source must be in a
    file: the parser reads it)."""
    path = directory / f"kernel_{next(_COUNTER)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build()


def _kernel(statement: str) -> str:
    body = "\n".join(" " * 12 + line for line in statement.splitlines())
    return _KERNEL.format(body=body)


@pytest.mark.parametrize("statement", list(CASES))
def test_a_wrong_operand_is_named(statement: str, tmp_path: Path) -> None:
    with pytest.raises(KernelTypeError) as caught:
        _parse(_kernel(statement), tmp_path)
    message = str(caught.value)
    assert CASES[statement] in message, message
    assert "please report" not in message
    assert "Mismatched type on argument" not in message


def test_the_error_points_at_the_statement(tmp_path: Path) -> None:
    with pytest.raises(KernelTypeError) as caught:
        _parse(_kernel("A[0] = 1.0\nA[1] = 'abc'"), tmp_path)
    assert ":17:" in str(caught.value), str(caught.value)


_SPECIAL = """
import tl_ir.language as T

def build():
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), x: T.float32):
        {kernel}
            A[0] = 1.0
    return main
"""


@pytest.mark.parametrize(
    ("kernel", "expected"),
    [
        (
            "with T.Kernel(2, threads=1) as (bx, by):",
            "the int32 expression v is a scalar: it cannot be indexed or unpacked (a "
            "T.Kernel with one grid extent binds one name",
        ),
        (
            "with T.Kernel(x, threads=1) as bx:",
            "T.Kernel grid extent: expected an int or an integer expression, got the float32 "
            "expression x",
        ),
    ],
)
def test_a_wrong_kernel_launch_is_named(kernel: str, expected: str, tmp_path: Path) -> None:
    with pytest.raises(KernelTypeError) as caught:
        _parse(_SPECIAL.format(kernel=kernel), tmp_path)
    assert expected in str(caught.value), str(caught.value)


def test_a_number_as_the_test_of_a_conditional_expression_is_true_when_not_zero(
    tmp_path: Path,
) -> None:
    """``a if n else b`` takes ``n`` as ``if n:`` does (TVM refused a non-bool test)."""
    import numpy as np

    from tl_ir.interpret import run

    source = """
import tl_ir.language as T

def build():
    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), N: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                A[i] = 1.0 if N[i] else 2.0
    return main
"""
    kernel = _parse(source, tmp_path)
    values = np.zeros(4, np.float32)
    run(kernel, [values, np.array([0, 3, -1, 0], np.int32)])
    np.testing.assert_array_equal(values, [2.0, 1.0, 1.0, 2.0])


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("S[100] = 1.0", "constant index 100 of buffer S is out of bounds in dim 0"),
        ("A[2**40] = 1.0", "constant index 1099511627776 of buffer A is out of bounds"),
        ("A[-9] = 1.0", "constant index -9 of buffer A is out of bounds"),
        ("A[6:10] = A[0:4]", "the slice 6:10 (4 elements) of buffer A is out of bounds"),
        (
            "A[T.Ramp(0, 1, 100000)] = T.Broadcast(T.float32(1), 100000)",
            "the 100000 lanes from 0 by 1 (a slice or T.Ramp) of buffer A is out of bounds",
        ),
    ],
)
def test_a_store_outside_its_buffer_is_refused_at_its_line(
    statement: str, expected: str, tmp_path: Path
) -> None:
    """A constant store index outside the buffer was reported at the ``def`` line (the
    check ran on the built kernel); the store's own line is named now."""
    with pytest.raises(KernelTypeError) as caught:
        _parse(_kernel("A[0] = 1.0\n" + statement), tmp_path)
    assert expected in str(caught.value), str(caught.value)
    assert ":17:" in str(caught.value), str(caught.value)


def test_a_slice_without_start_or_stop_stores_to_the_end(tmp_path: Path) -> None:
    """``A[4:] = B[0:4]`` failed in TVM's store ("unsupported operand type(s) for -:
    'NoneType' and 'int'"); a missing start is 0 and a missing stop the extent."""
    import numpy as np

    from tl_ir.interpret import run

    source = """
import tl_ir.language as T

def build():
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1):
            A[4:] = B[0:4]
            A[:2] = 7.0
    return main
"""
    kernel = _parse(source, tmp_path)
    a = np.zeros(8, np.float32)
    run(kernel, [a, np.arange(8, dtype=np.float32)])
    np.testing.assert_array_equal(a, [7, 7, 0, 0, 0, 1, 2, 3])


def test_a_gemm_region_past_its_tile_is_refused_at_its_line(tmp_path: Path) -> None:
    """``T.gemm(As[8:24, 0:16], ...)`` on a 16 x 16 shared tile stopped the CPU lowering
    with its micro-kernel's message and no line."""
    source = """
import tl_ir.language as T

def build():
    @T.prim_func
    def main(A: T.Tensor((16, 16), "float32"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32):
            As = T.alloc_shared((16, 16), "float32")
            Cl = T.alloc_fragment((16, 16), "float32")
            T.copy(A, As)
            T.gemm(As[8:24, 0:16], As, Cl)
            T.copy(Cl, C)
    return main
"""
    with pytest.raises(KernelTypeError) as caught:
        _parse(source, tmp_path)
    message = str(caught.value)
    assert (
        "T.gemm: A: the region 8:24 of shared.dyn tile As in dim 0 reaches past the tile (extent 16)"
        in message
    )
    assert ":11:" in message, message


def test_a_float_constructor_reads_a_number_spelled_as_a_string(tmp_path: Path) -> None:
    """``T.float32("-inf")`` is how TVM's printer and TileLang programs spell infinity;
    the operand check must not refuse it (an int dtype or another string is refused)."""
    import numpy as np

    from tl_ir.interpret import run

    source = """
import tl_ir.language as T

def build():
    @T.prim_func
    def main(A: T.Tensor((3,), "float32")):
        with T.Kernel(1, threads=1):
            A[0] = T.float32("-inf")
            A[1] = T.float32("1.5")
            A[2] = T.cast(T.float16("nan"), "float32")
    return main
"""
    a = np.zeros(3, np.float32)
    run(_parse(source, tmp_path), [a])
    assert a[0] == -np.inf and a[1] == 1.5 and np.isnan(a[2])
    with pytest.raises(KernelTypeError, match=r"T.int32\(value\): expected a scalar value"):
        _parse(_kernel("I[0] = T.int32('inf')"), tmp_path)


def test_an_equality_test_is_a_bool_condition_and_a_scalar_operand(tmp_path: Path) -> None:
    """``a != b`` and ``a == b`` are Python objects TVM turns into the comparison on
    demand; the condition and operand checks take them as the bool expressions they
    are (TileLang's fp8 quantization example tests ``bits != 0`` this way)."""
    import numpy as np

    from tl_ir.interpret import run

    source = """
import tl_ir.language as T

def build():
    @T.prim_func
    def main(A: T.Tensor((2,), "float32"), B: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=1):
            B[0] = T.if_then_else(A[0] != A[1], 1.0, 2.0)
            B[1] = T.Select(A[0] == A[1], 3.0, T.cast(T.max(A[0] == A[0], False), "float32"))
    return main
"""
    b = np.zeros(2, np.float32)
    run(_parse(source, tmp_path), [np.array([1.0, 2.0], np.float32), b])
    np.testing.assert_array_equal(b, [1.0, 1.0])


def test_a_read_outside_its_buffer_is_named_at_its_line(tmp_path: Path) -> None:
    """A constant read outside its buffer is found on the built kernel (at parse it
    could be a tile op's anchor, a partial tile); the access's span names its line,
    which the message pointed at the ``def`` line instead."""
    with pytest.raises(KernelTypeError) as caught:
        _parse(_kernel("A[1] = 2.0\nA[0] = A[100] + 1.0"), tmp_path)
    message = str(caught.value)
    assert "constant index 100 of buffer A is out of bounds in dim 0" in message
    assert ":17:" in message and "A[0] = A[100] + 1.0" in message, message
