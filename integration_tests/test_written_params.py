"""What a kernel writes decides a parameter's role, and the role decides whether the
runtime copies results back, refuses read-only arrays and may allocate the parameter
(``out_idx``). Writes through a view or a write pointer count; a parameter that is
never written cannot be an output."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_ir.language as T
import tl_jit

ADAPTERS = ["cython", "tvm_ffi"]


def _through_a_view() -> Any:
    @T.prim_func
    def pairs(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as _:
            V = T.view(B, (2, 2))
            for i in T.serial(2):
                V[i, 0] = A[2 * i]
                V[i, 1] = A[2 * i + 1]

    return pairs


def _roles(kernel: Any) -> list[str]:
    return [p.role for p in kernel.runtime_kernel.manifest.params]


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_parameter_written_only_through_a_view_is_written(adapter: str) -> None:
    # It was an "input": a misaligned array was copied in and the result dropped, and
    # a read-only array was written in place (cython) or its result dropped (tvm_ffi).
    kernel = tl_jit.compile(_through_a_view(), target="c", execution_backend=adapter)
    assert _roles(kernel) == ["input", "inout"]
    a = np.arange(4, dtype=np.float32)
    b = np.zeros(4, np.float32)
    kernel(a, b)
    assert b.tolist() == [0.0, 1.0, 2.0, 3.0]
    raw = np.zeros(64, np.uint8)
    start = 1 if raw.ctypes.data % 4 == 0 else 0
    with pytest.raises(ValueError, match=r"parameter 'B': expected data aligned to 4 bytes"):
        kernel(a, raw[start : start + 16].view(np.float32))
    read_only = np.zeros(4, np.float32)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match=r"parameter 'B': expected a writable array"):
        kernel(a, read_only)
    assert read_only.tolist() == [0.0] * 4


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_view_written_parameter_can_be_an_output(adapter: str) -> None:
    kernel = tl_jit.compile(_through_a_view(), out_idx=[-1], target="c", execution_backend=adapter)
    assert kernel(np.arange(4, dtype=np.float32)).tolist() == [0.0, 1.0, 2.0, 3.0]


def test_a_write_pointer_marks_its_buffer_written() -> None:
    from tl_backend_api.artifact import param_specs

    @T.prim_func
    def extern(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as _:
            T.call_extern("handle", "fill", T.access_ptr(B, "w"), T.access_ptr(A[1], "r"))

    assert [p.role for p in param_specs(extern)] == ["input", "inout"]


def test_an_output_the_kernel_never_writes_is_refused() -> None:
    # out_idx=[0] on a read-only A: A was allocated uninitialised, read and returned.
    @T.prim_func
    def copy(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(4):
                B[i] = A[i]

    with pytest.raises(ValueError, match=r"out_idx: parameter 0 \('A'\) is never written"):
        tl_jit.compile(copy, out_idx=[0], target="c")


def test_an_output_sized_by_a_scalar_is_refused_naming_it() -> None:
    # Was: ArtifactError "manifest out_idx param 'C': expected symbolic dims bound by an
    # input parameter, got ['n']" (n is a parameter; the manifest is nothing the user wrote).
    n = T.int32()

    @T.prim_func
    def fill(A: T.Tensor((4,), "float32"), n: T.int32, C: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(n):
                C[i] = A[0]

    with pytest.raises(ValueError, match=r"output 'C' .* 'n' is a scalar parameter, which cannot"):
        tl_jit.compile(fill, out_idx=[-1], target="c")
