"""Every case of the corpus, and the failures expected today per target.

`EXPECTED_FAILURES` (expected.py, written by survey.py) is what the README table
says: ``(case name, target) -> (exception type, reason)``. The corpus test marks those cases
``xfail(strict=True, raises=...)``, so a fix shows up as XPASS and the entry
(and the README row) must then be removed.
"""

from __future__ import annotations

from integration_tests.tilelang_compat import (
    cases_attention,
    cases_eager,
    cases_examples,
    cases_gemm,
    cases_language,
    cases_linear,
    cases_more,
    cases_quant,
    cases_streamk,
    cases_thread_indexed,
    cases_topk_selector,
)
from integration_tests.tilelang_compat.expected import EXPECTED_FAILURES
from integration_tests.tilelang_compat.harness import Case

TARGETS = ("c", "llvm", "cuda-nvcc")
"""The columns: run on the C and LLVM CPU targets, lowered for CUDA and compiled by nvcc."""

ALL_CASES: dict[str, Case] = {
    case.name: case
    for case in (
        *cases_gemm.CASES,
        *cases_language.CASES,
        *cases_examples.CASES,
        *cases_thread_indexed.CASES,
        *cases_eager.CASES,
        *cases_attention.CASES,
        *cases_linear.CASES,
        *cases_quant.CASES,
        *cases_more.CASES,
        *cases_streamk.CASES,
        *cases_topk_selector.CASES,
    )
}

NOTES: dict[str, str] = {
    "cpu_reduce._make_kernel_2d-sum-dim1": (
        "Silent wrong result: the kernel calls T.reduce_* through a Python helper "
        "(_emit_reduce); tl_ir drops a tile op issued from a helper's body, so the output "
        "is never written on any target (nvcc compiles the same incomplete kernel)."
    ),
    "cpu_reduce._make_kernel_2d-max-dim0": "Same silent wrong result as the sum case.",
    "example_mamba_chunk_state.chunk_state_fwd": (
        "@autotune over an eager-style @jit function is refused when the module is imported "
        "(tuning eager kernels is another change in progress); the kernel itself is "
        "reached through the autotuner's jit_function once that lands."
    ),
    "example_linear_attn_bwd.tl_fused_chunk_bwd_kernel": (
        "CUDA: the float32 and float16 shared tiles share TVM's merged dynamic shared "
        "allocation, and TVM's LowerIntrin then checks each ldmatrix access pointer against "
        "the first tile declared on that allocation (a float32 one); c and llvm run it."
    ),
    "example_dequant_gemv_fp16xint4.dequantize_gemv-fast-decoding": (
        "The fast-decoding path imports TileLang's lop3 CUDA C decoders (T.import_source) "
        "and calls them with T.call_extern: CUDA compiles them; the CPU backend refuses the "
        "kernel, as the non-fast path computes the same in the kernel language."
    ),
}
"""What the README says about a case beyond the error it raises."""


def runnable_cases(target: str) -> list[Case]:
    """The cases expected to run correctly on ``target`` today (benchmarks time these).

    Raises:
        ValueError: ``target`` is not one of `TARGETS`.
    """
    if target not in TARGETS:
        raise ValueError(f"target: expected one of {TARGETS}, got {target!r}")
    return [case for name, case in ALL_CASES.items() if (name, target) not in EXPECTED_FAILURES]


__all__ = ["ALL_CASES", "EXPECTED_FAILURES", "NOTES", "TARGETS", "runnable_cases"]
