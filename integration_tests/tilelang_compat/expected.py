"""Failures the corpus expects today (written by survey.py; do not edit by hand)."""

from __future__ import annotations

import tl_backend_api
import tl_ir

EXPECTED_FAILURES: dict[tuple[str, str], tuple[type[BaseException], str]] = {
    ("language_chain_equal.chain_equal", "c"): (
        tl_ir.KernelSyntaxError,
        "language_chain_equal.py:21: cannot parse this kernel statement: Consequential assignments like 'a = b = c' are not supported.",
    ),
    ("language_chain_equal.chain_equal", "llvm"): (
        tl_ir.KernelSyntaxError,
        "language_chain_equal.py:21: cannot parse this kernel statement: Consequential assignments like 'a = b = c' are not supported.",
    ),
    ("language_chain_equal.chain_equal", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "language_chain_equal.py:21: cannot parse this kernel statement: Consequential assignments like 'a = b = c' are not supported.",
    ),
}
