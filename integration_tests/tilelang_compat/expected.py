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
    ("language_atomic.atomic_addx2_program", "c"): (
        tl_ir.UnsupportedError,
        "language_atomic.py:46: T.atomic_addx2: this atomic is not supported yet (T.atomic_add/max/min are)",
    ),
    ("language_atomic.atomic_addx2_program", "llvm"): (
        tl_ir.UnsupportedError,
        "language_atomic.py:46: T.atomic_addx2: this atomic is not supported yet (T.atomic_add/max/min are)",
    ),
    ("language_atomic.atomic_addx2_program", "cuda-nvcc"): (
        tl_ir.UnsupportedError,
        "language_atomic.py:46: T.atomic_addx2: this atomic is not supported yet (T.atomic_add/max/min are)",
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
