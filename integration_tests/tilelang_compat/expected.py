"""Failures the corpus expects today (written by survey.py; do not edit by hand)."""

from __future__ import annotations

import tl_backend_api

EXPECTED_FAILURES: dict[tuple[str, str], tuple[type[BaseException], str]] = {
    ("example_seer_block_sparse_attn.blocksparse_flashattn", "cuda-nvcc"): (
        tl_backend_api.ToolchainError,
        "TVM device codegen for cuda failed: Check failed: condition_counter() == 0 (1 vs. 0) : Cannot insert syncs inside condition",
    ),
    ("example_seer_block_sparse_attn.blocksparse_flashattn-causal", "cuda-nvcc"): (
        tl_backend_api.ToolchainError,
        "TVM device codegen for cuda failed: Check failed: condition_counter() == 0 (1 vs. 0) : Cannot insert syncs inside condition",
    ),
    ("example_block_sparse_attn.blocksparse_flashattn-causal", "cuda-nvcc"): (
        tl_backend_api.ToolchainError,
        "TVM device codegen for cuda failed: Check failed: condition_counter() == 0 (1 vs. 0) : Cannot insert syncs inside condition",
    ),
    ("example_block_sparse_attn.blocksparse_flashattn", "cuda-nvcc"): (
        tl_backend_api.ToolchainError,
        "TVM device codegen for cuda failed: Check failed: condition_counter() == 0 (1 vs. 0) : Cannot insert syncs inside condition",
    ),
}
