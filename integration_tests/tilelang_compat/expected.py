"""Failures the corpus expects today (written by survey.py; do not edit by hand)."""

from __future__ import annotations

import tl_backend_api
import tl_ir

EXPECTED_FAILURES: dict[tuple[str, str], tuple[type[BaseException], str]] = {
    ("language_parallel.parallel_elementwise_dynamic", "c"): (
        tl_ir.KernelTypeError,
        "language_parallel.py:34: T.Parallel(*extents): extent 0 must be a compile-time constant (the loop is distributed over a tile), got the run-time value span; use ",
    ),
    ("language_parallel.parallel_elementwise_dynamic", "llvm"): (
        tl_ir.KernelTypeError,
        "language_parallel.py:34: T.Parallel(*extents): extent 0 must be a compile-time constant (the loop is distributed over a tile), got the run-time value span; use ",
    ),
    ("language_parallel.parallel_elementwise_dynamic", "cuda-nvcc"): (
        tl_ir.KernelTypeError,
        "language_parallel.py:34: T.Parallel(*extents): extent 0 must be a compile-time constant (the loop is distributed over a tile), got the run-time value span; use ",
    ),
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
