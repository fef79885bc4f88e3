"""Every program of the TileLang compatibility corpus (integration_tests/tilelang_compat)
whose CUDA lowers, run under the CPU emulation against the corpus's numpy reference
(issue 19, point 6).

The corpus itself checks these kernels on the CPU targets and that nvcc compiles
their CUDA; here the CUDA's numbers are checked. The default run takes the cases in
`DEFAULT_CASES` (one per distinct feature the GEMM and attention sweeps do not
already cover); all the others run under ``-m slow``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

_REPOSITORY = Path(__file__).resolve().parents[3]
if str(_REPOSITORY) not in sys.path:
    sys.path.insert(0, str(_REPOSITORY))

from integration_tests.tilelang_compat.harness import Case, compare  # noqa: E402
from integration_tests.tilelang_compat.registry import ALL_CASES, runnable_cases  # noqa: E402

pytestmark = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")

DEFAULT_CASES = {
    "kernel_gemm_batched.matmul_batched",
    "language_pipeline.matmul-order-stage",
    "language_pipeline.blocksparse_matmul",
    "language_scan.cumsum_fragment_test-dim1-reverse",
    "language_copy.tilelang_copy_oob_safe_value",
    "language_mask_op.tilelang_copy_mask_parallel",
    "language_alloc.alloc_global",
    "language_atomic.atomic_add_program",
    "language_atomic.atomic_addx2_program",
    "language_reshape.reduce_after_reshape_test",
    "language_vectorize.vectorize_test",
    "example_gemv.splitk_gemv_vectorized",
    "example_online_softmax.softmax_kernel",
}
"""Cases the default run takes; every other lowering case is ``slow``."""

KNOWN_EMULATION_FAILURES: dict[str, str] = {}
"""Cases whose CUDA lowers but computes wrong numbers (or faults) under emulation today:
case name -> what goes wrong. Strict xfails, so a fix shows up."""

BEYOND_EMULATION: dict[str, str] = {
    "example_per_token_cast_to_fp8.per_token_cast_to_fp8": (
        "the vectorized fp8 conversion in the CUDA tests a ushort4 in an `if`, which the "
        "emulation's vector types do not convert to bool (g++ refuses it)"
    ),
    "example_group_per_split_token_cast_to_fp8.group_per_split_token_cast_to_fp8": (
        "as example_per_token_cast_to_fp8.per_token_cast_to_fp8"
    ),
    "example_dequant_gemv_fp16xint4.dequantize_gemv-fast-decoding": (
        "the imported decoders are inline PTX (lop3.b32, sub.f16x2), which only a GPU runs"
    ),
}
"""Cases the emulation cannot compile at all: case name -> why (skipped, not failed)."""


def _name(param: Any) -> str:
    return str(param.name)


def run_case_emulated(case: Case, arch: str = "sm_80") -> None:
    """Lower the case's PrimFunc for CUDA (for ``arch``, or the case's ``cuda_arch``), run
    every launch under the emulation on the case's inputs (outputs the kernel allocates are allocated here), and compare with
    the case's numpy reference.

    Raises:
        AssertionError: wrong numbers; any lowering or emulation error as it comes.
    """
    func, out_idx = case.build()
    inputs = case.make_inputs()
    want = case.expected(inputs)
    params = list(func.params)
    outputs = sorted(i % len(params) for i in (out_idx or []))
    arrays: dict[str, Any] = {}
    views: dict[str, Any] = {}  # what the case passed, to read in-place outputs back
    given = iter(inputs)
    for position, param in enumerate(params):
        if position not in outputs:
            value = next(given)
            views[_name(param)] = value
            arrays[_name(param)] = _memory_of(value, param)
    bindings = _symbol_bindings(func, arrays)
    for position in outputs:
        buffer = params[position].ty
        shape = [
            int(d.value) if hasattr(d, "value") else bindings[str(d.name)] for d in buffer.shape
        ]
        arrays[_name(params[position])] = np.zeros(shape, _numpy_dtype(str(buffer.dtype)))
    emu.emulate(func, arrays, arch=case.cuda_arch or arch)
    # Returned outputs first, then the arrays written in place (the corpus harness's order).
    non_outputs = [p for i, p in enumerate(params) if i not in outputs]
    got = [arrays[_name(params[p])] for p in outputs]
    got += [views[_name(non_outputs[i])] for i in case.inplace]
    compare(case, got, want)


def _memory_of(value: Any, param: Any) -> Any:
    """The array the emulated kernel gets for ``value``: itself when C-contiguous; for a
    strided view (a `T.StridedTensor` parameter) the contiguous array it views, from
    the same first element, since the kernel addresses memory through its own strides."""
    if not isinstance(value, np.ndarray) or value.flags.c_contiguous:
        return value
    root = value
    while isinstance(root.base, np.ndarray):
        root = root.base
    static = all(hasattr(d, "value") for d in getattr(param.ty, "shape", ()))
    if not (root.flags.c_contiguous and root.ctypes.data == value.ctypes.data and static):
        raise NotImplementedError(
            f"emulation: parameter {_name(param)!r} is a strided view the launcher cannot pass"
        )
    return root


def _symbol_bindings(func: Any, arrays: dict[str, Any]) -> dict[str, int]:
    bindings: dict[str, int] = {}
    for param in func.params:
        value = arrays.get(_name(param))
        if not isinstance(value, np.ndarray):
            continue
        for dim, size in zip(getattr(param.ty, "shape", ()), value.shape, strict=False):
            if not hasattr(dim, "value"):
                bindings[str(dim.name)] = int(size)
    return bindings


def _numpy_dtype(dtype: str) -> Any:
    import emulated_programs

    return emulated_programs.NUMPY_DTYPES.get(dtype, dtype)


def _params() -> list[Any]:
    lowering = {case.name for case in runnable_cases("cuda-nvcc")}
    params = []
    for name in ALL_CASES:
        if name not in lowering:
            continue
        marks: list[pytest.MarkDecorator] = []
        if name not in DEFAULT_CASES or "slow" in ALL_CASES[name].tags:
            marks.append(pytest.mark.slow)
        if name in BEYOND_EMULATION:
            marks.append(pytest.mark.skip(reason=BEYOND_EMULATION[name]))
        if name in KNOWN_EMULATION_FAILURES:
            reason = KNOWN_EMULATION_FAILURES[name]
            marks.append(pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


def test_every_default_case_is_a_lowering_corpus_case() -> None:
    lowering = {case.name for case in runnable_cases("cuda-nvcc")}
    assert lowering >= DEFAULT_CASES, DEFAULT_CASES - lowering
    assert set(KNOWN_EMULATION_FAILURES) <= lowering
    assert set(BEYOND_EMULATION) <= lowering


@pytest.mark.parametrize("name", _params())
def test_corpus_program_under_emulation(name: str) -> None:
    run_case_emulated(ALL_CASES[name])
