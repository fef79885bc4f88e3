"""Every case of the corpus, and the failures expected today per target.

`EXPECTED_FAILURES` (expected.py, written by survey.py) is what the README table
says: ``(case name, target) -> (exception type, reason)``. The corpus test marks those cases
``xfail(strict=True, raises=...)``, so a fix shows up as XPASS and the entry
(and the README row) must then be removed.
"""

from __future__ import annotations

from types import ModuleType

from integration_tests.tilelang_compat import (
    cases_act_quant,
    cases_attention,
    cases_backward,
    cases_decode,
    cases_eager,
    cases_examples,
    cases_gemm,
    cases_language,
    cases_linear,
    cases_more,
    cases_quant,
    cases_recurrent,
    cases_streamk,
    cases_thread_indexed,
    cases_topk_selector,
)
from integration_tests.tilelang_compat.expected import EXPECTED_FAILURES
from integration_tests.tilelang_compat.harness import Case

TARGETS = ("c", "llvm", "cuda-nvcc")
"""The columns: run on the C and LLVM CPU targets, lowered for CUDA and compiled by nvcc."""

CASE_MODULES = (
    cases_gemm,
    cases_language,
    cases_examples,
    cases_thread_indexed,
    cases_eager,
    cases_attention,
    cases_linear,
    cases_quant,
    cases_more,
    cases_streamk,
    cases_recurrent,
    cases_backward,
    cases_act_quant,
    cases_decode,
    cases_topk_selector,
)
"""The ``cases_*`` modules, in the order of the README table; each has ``CASES``."""


def _by_name(modules: tuple[ModuleType, ...]) -> dict[str, Case]:
    """Every case of ``modules`` by its name.

    Raises:
        ValueError: two cases share a name (a dict would keep only the last silently).
    """
    cases: dict[str, Case] = {}
    where: dict[str, str] = {}
    for module in modules:
        module_name = module.__name__
        for case in module.CASES:
            if case.name in cases:
                raise ValueError(
                    f"corpus case name {case.name!r}: expected unique names, got it in "
                    f"{where[case.name]} and in {module_name}"
                )
            cases[case.name] = case
            where[case.name] = module_name
    return cases


ALL_CASES: dict[str, Case] = _by_name(CASE_MODULES)

NOTES: dict[str, str] = {
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


__all__ = ["ALL_CASES", "CASE_MODULES", "EXPECTED_FAILURES", "NOTES", "TARGETS", "runnable_cases"]
