"""Failures the corpus expects today (written by survey.py; do not edit by hand)."""

from __future__ import annotations

import tl_ir

EXPECTED_FAILURES: dict[tuple[str, str], tuple[type[BaseException], str]] = {
    ("example_dequant_gemv_fp16xint4.dequantize_gemv-fast-decoding", "c"): (
        tl_ir.UnsupportedError,
        "kernel main imports device source with T.import_source, which backend 'cpu' (target 'c') cannot compile: source written for a GPU (CUDA C device helpers) does n",
    ),
    ("example_dequant_gemv_fp16xint4.dequantize_gemv-fast-decoding", "llvm"): (
        tl_ir.UnsupportedError,
        "kernel main imports device source with T.import_source, which backend 'cpu' (target 'llvm') cannot compile: source written for a GPU (CUDA C device helpers) doe",
    ),
}
