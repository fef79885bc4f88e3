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
    cases_streamk,
    cases_thread_indexed,
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
        *cases_streamk.CASES,
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
    "example_seer_block_sparse_attn.blocksparse_flashattn": (
        "CUDA: the tile loop's body runs under `if block_mask[k] != 0` on a fragment, which "
        "TVM's barrier planner treats as thread-dependent; c and llvm run it."
    ),
    "example_seer_block_sparse_attn.blocksparse_flashattn-causal": "As the non-causal case.",
    "example_block_sparse_attn.blocksparse_flashattn": "As the SeerAttention case.",
    "example_block_sparse_attn.blocksparse_flashattn-causal": "As the SeerAttention case.",
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
