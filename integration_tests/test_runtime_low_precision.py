"""bfloat16 and float8 tensors as kernel parameters, inputs and outputs on the CPU targets.

Kernels written in tl-ir, compiled for ``c`` and ``llvm``, called through both CPU adapters
with ml_dtypes numpy arrays and torch tensors: copies and casts give what ml_dtypes
computes; the checks are the ones every dtype gets (a wrong dtype is refused by name).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_ir.language as T
import tl_jit
import tl_runtime

ml_dtypes = pytest.importorskip("ml_dtypes")

TARGETS = ("c", "llvm")
ADAPTERS = ("tvm_ffi", "cython")
VALUES = np.array([0.5, -1.25, 3.0, 224.0, 0.0, -0.0, 2.0, 1.5, -448.0, 0.015625], np.float32)


def _numpy_dtype(name: str) -> Any:
    return np.dtype(getattr(ml_dtypes, name)) if name != "float32" else np.dtype(np.float32)


def _cast(source: str, target: str) -> Any:
    N = T.symbolic("N")

    @T.prim_func
    def cast(A: T.Tensor((N,), source), B: T.Tensor((N,), target)):
        with T.Kernel(1, threads=1):
            for i in T.serial(N):
                B[i] = T.Cast(target, A[i])

    return cast


PAIRS = [
    ("bfloat16", "float32"),
    ("float32", "bfloat16"),
    ("bfloat16", "bfloat16"),
    ("float32", "float8_e4m3fn"),
    ("float32", "float8_e5m2"),
    ("float8_e4m3fn", "float8_e4m3fn"),
    ("float8_e5m2", "float8_e5m2"),
]


@pytest.fixture(scope="module")
def artifacts() -> dict[tuple[str, str, str], Path]:
    return {
        (source, target, kind): Path(
            tl_jit.compile(_cast(source, target), target=kind, out_idx=[1]).artifact_dir
        )
        for source, target in PAIRS
        for kind in TARGETS
    }


def _expected(source: str, target: str) -> Any:
    return VALUES.astype(_numpy_dtype(source)).astype(np.float32).astype(_numpy_dtype(target))


@pytest.mark.parametrize("kind", TARGETS)
@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize(("source", "target"), PAIRS)
def test_numpy_ml_dtypes_in_and_out(
    artifacts: dict[tuple[str, str, str], Path], kind: str, adapter: str, source: str, target: str
) -> None:
    kernel = tl_runtime.load(artifacts[(source, target, kind)], adapter=adapter)
    a = VALUES.astype(_numpy_dtype(source))
    out = kernel(a)
    assert isinstance(out, np.ndarray) and out.dtype == _numpy_dtype(target)
    # Compared bit for bit: -0.0 keeps its sign.
    np.testing.assert_array_equal(
        out.astype(np.float32).view(np.uint32),
        _expected(source, target).astype(np.float32).view(np.uint32),
    )
    # A misaligned or read-only input is copied like any other dtype's.
    a.flags.writeable = False
    np.testing.assert_array_equal(kernel(a).astype(np.float32), out.astype(np.float32))
    # The same checks as other dtypes: a float16 array is refused by name.
    with pytest.raises(TypeError, match=f"parameter 'A': expected dtype {source}, got float16"):
        kernel(VALUES.astype(np.float16))


@pytest.mark.parametrize("kind", TARGETS)
@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize(("source", "target"), PAIRS)
def test_torch_low_precision_in_and_out(
    artifacts: dict[tuple[str, str, str], Path], kind: str, adapter: str, source: str, target: str
) -> None:
    torch = pytest.importorskip("torch")
    kernel = tl_runtime.load(artifacts[(source, target, kind)], adapter=adapter)
    a = torch.from_numpy(VALUES).to(getattr(torch, source))
    out = kernel(a)
    assert isinstance(out, torch.Tensor) and out.dtype == getattr(torch, target)
    np.testing.assert_array_equal(out.float().numpy(), _expected(source, target).astype(np.float32))
    # An explicit output of the parameter's dtype, passed by the caller, is written in place.
    with pytest.raises(TypeError, match=f"parameter 'A': expected dtype {source}, got float64"):
        kernel(torch.zeros(4, dtype=torch.float64))


def test_the_tilelang_alias_float8_e4m3_names_float8_e4m3fn() -> None:
    spec = tl_runtime.ParamSpec(name="A", dtype="float8_e4m3", shape=(4,))
    manifest = tl_runtime.Manifest(
        name="k",
        entry_symbol="k",
        params=(spec,),
        target={"kind": "c"},
        execution_backend="tvm_ffi",
        adapter="tvm_ffi",
        library="k.so",
        files=(),
        versions={},
    )
    checker = tl_runtime.ArgumentChecker(manifest)
    assert checker.plan.params[0].dtype.name == "float8_e4m3fn"
    prepared = checker.prepare([np.zeros(4, ml_dtypes.float8_e4m3fn)])
    assert len(prepared.args) == 1


def test_get_kernel_source_with_a_bfloat16_array() -> None:
    @tl_jit.jit(target="c")
    def widen(A, B):  # type: ignore[no-untyped-def]
        N = T.const("N")
        A: T.Tensor[[N], T.bfloat16]
        B: T.Tensor[[N], T.float32]
        with T.Kernel(1, threads=1):
            for i in T.serial(N):
                B[i] = T.Cast("float32", A[i])

    a = VALUES.astype(ml_dtypes.bfloat16)
    b = np.zeros(len(VALUES), np.float32)
    assert "bfloat16" in widen.get_kernel_source(a, b) or "uint16_t" in widen.get_kernel_source(
        a, b
    )
    widen(a, b)
    np.testing.assert_array_equal(b, a.astype(np.float32))


@pytest.mark.parametrize("kind", TARGETS)
def test_float8_e4m3fn_widening_cast(kind: str) -> None:
    kernel = tl_runtime.load(
        Path(
            tl_jit.compile(_cast("float8_e4m3fn", "float32"), target=kind, out_idx=[1]).artifact_dir
        )
    )
    a = VALUES.astype(ml_dtypes.float8_e4m3fn)
    np.testing.assert_array_equal(kernel(a).view(np.uint32), a.astype(np.float32).view(np.uint32))
