"""The GPU benchmark programs, at TileLang's example configurations, as plain PrimFuncs.

Shared by ``benchmarks/gpu_sass.py`` (their SASS), the SASS tests of tl-codegen-cuda
and ``scripts/gpu-check --prepare`` (the bundle's benchmark kernels):

* ``gemm``: integration_tests/kernels/gemm.py with TileLang's
  ``examples/gemm/example_gemm.py`` configuration: fp16 in, fp32 accumulate,
  128x128x32 blocks, ``num_stages=3``, 128 threads (4096^3 in the examples).
* ``flash_attention``: the compatibility corpus's flash attention forward
  (TileLang's ``examples/flash_attention`` MHA forward, ``[batch, seq, heads,
  dim]`` tensors; its ``bhsd`` twin differs only in the index order), at the
  example's configuration: 64x64 blocks (``block_M``, ``block_N``), one stage,
  128 threads; ``Output`` is returned.
* ``softmax`` and ``rms_norm``: integration_tests/kernels, fp32, one row per
  block (``block_M=1``; 8192^2 in the tables).

Each ``*_program`` returns ``(PrimFunc, out_idx, loop_tiles)``: ``loop_tiles`` is how
many iterations the main source loop runs (K tiles, KV tiles; `sass_facts.hot_loop`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GEMM_BLOCKS = {"block_M": 128, "block_N": 128, "block_K": 32}
ATTENTION_BLOCKS = {"block_M": 64, "block_N": 64, "num_stages": 1, "threads": 128}


def _ceildiv(a: int, b: int) -> int:
    return -(-a // b)


def gemm_program(m: int = 4096, n: int = 4096, k: int = 4096) -> tuple[Any, list[int], int]:
    """fp16 GEMM ``C = A @ B`` (fp32 accumulate) at TileLang's example configuration."""
    from integration_tests.kernels import load

    module = load("gemm")
    func = module.KERNEL(m, n, k, **GEMM_BLOCKS)
    return func, list(module.OUT_IDX), _ceildiv(k, GEMM_BLOCKS["block_K"])


def attention_program(
    batch: int = 4,
    heads: int = 16,
    seq_len: int = 2048,
    dim: int = 64,
    causal: bool = False,
    num_stages: int | None = None,
) -> tuple[Any, list[int], int]:
    """fp16 flash attention forward (Q, K, V, Output ``[batch, seq_len, heads, dim]``).

    ``num_stages`` overrides the example's 1 (the pipelined KV loop's depth).
    """
    from integration_tests.tilelang_compat.registry import ALL_CASES

    case = ALL_CASES["example_flash_attention.flashattn"]
    config = dict(ATTENTION_BLOCKS)
    if num_stages is not None:
        config["num_stages"] = num_stages
    func, out_idx = case.build(
        batch=batch, heads=heads, seq_len=seq_len, dim=dim, is_causal=causal, **config
    )
    return func, list(out_idx or [3]), _ceildiv(seq_len, config["block_N"])


def softmax_program(m: int = 8192, n: int = 8192) -> tuple[Any, list[int], int]:
    """fp32 row softmax, one row per block."""
    from integration_tests.kernels import load

    module = load("softmax")
    return module.KERNEL(m, n, 1), list(module.OUT_IDX), 1


def rms_norm_program(m: int = 8192, n: int = 8192) -> tuple[Any, list[int], int]:
    """fp32 RMS norm, one row per block."""
    from integration_tests.kernels import load

    module = load("rms_norm")
    return module.KERNEL(m, n, 1), list(module.OUT_IDX), 1
