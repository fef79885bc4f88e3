"""Tile programs of the emulated correctness sweep, written as TileLang users write them
(the T.* calls of TileLang's GEMM, split-k and flash-attention examples), with float64
numpy references. Tests only: `test_emulated_gemm_sweep` and
`test_emulated_attention_and_rows` run them under the CPU emulation."""

from __future__ import annotations

from typing import Any

import numpy as np

import tl_ir.language as T

# numpy dtype per kernel dtype (ml_dtypes for bf16 and fp8, which numpy lacks).
try:
    import ml_dtypes

    NUMPY_DTYPES: dict[str, Any] = {
        "bfloat16": ml_dtypes.bfloat16,
        "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
        "float8_e5m2": ml_dtypes.float8_e5m2,
    }
except ImportError:  # pragma: no cover - ml_dtypes comes with tvm
    NUMPY_DTYPES = {}
NUMPY_DTYPES.update(
    {"float16": np.float16, "float32": np.float32, "int8": np.int8, "int32": np.int32}
)


def gemm(
    M: Any,
    N: Any,
    K: Any,
    block_M: int,
    block_N: int,
    block_K: int,
    in_dtype: str,
    accum_dtype: str,
    *,
    trans_A: bool = False,
    trans_B: bool = False,
    num_stages: int = 2,
    threads: int = 128,
    policy: Any = T.GemmWarpPolicy.Square,
) -> Any:
    """``C = op(A) @ op(B)``: A and B tiles copied global -> shared in a pipelined K
    loop, `T.gemm` into an accumulator fragment, the fragment copied out (C in the
    accumulator's dtype). ``M``/``N``/``K`` may be symbolic (`T.dynamic`)."""
    a_shape = (K, M) if trans_A else (M, K)
    b_shape = (N, K) if trans_B else (K, N)
    a_tile = (block_K, block_M) if trans_A else (block_M, block_K)
    b_tile = (block_N, block_K) if trans_B else (block_K, block_N)

    @T.prim_func
    def main(
        A: T.Tensor(a_shape, in_dtype),
        B: T.Tensor(b_shape, in_dtype),
        C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (
            bx,
            by,
        ):
            A_shared = T.alloc_shared(a_tile, in_dtype)
            B_shared = T.alloc_shared(b_tile, in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if trans_A:
                    T.copy(A[ko * block_K, by * block_M], A_shared)
                else:
                    T.copy(A[by * block_M, ko * block_K], A_shared)
                if trans_B:
                    T.copy(B[bx * block_N, ko * block_K], B_shared)
                else:
                    T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, trans_A, trans_B, policy=policy)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def gemm_split_k(
    M: int, N: int, K: int, block_M: int, block_N: int, block_K: int, split_k: int
) -> Any:
    """Split-k GEMM as TileLang's ``examples/gemm_splitk``: each of ``split_k`` blocks
    along z reduces its slice of K and atomically adds its partial tile into C (f16
    in, f32 accumulate and out)."""
    splits = K // split_k

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=128) as (
            bx,
            by,
            bz,
        ):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_shared = T.alloc_shared((block_M, block_N), "float32")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(splits, block_K), num_stages=2):
                T.copy(A[by * block_M, bz * splits + ko * block_K], A_shared)
                T.copy(B[bz * splits + ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C_shared)
            for i, j in T.Parallel(block_M, block_N):
                T.atomic_add(C[by * block_M + i, bx * block_N + j], C_shared[i, j])

    return main


def flash_attention_bhsd(
    batch: int,
    heads: int,
    seq_q: int,
    seq_kv: int,
    dim: int,
    is_causal: bool,
    block_M: int = 64,
    block_N: int = 64,
    num_stages: int = 1,
    threads: int = 128,
) -> Any:
    """Flash attention forward, MHA, [batch, heads, seq, dim] (TileLang's
    ``example_mha_fwd_bhsd``): online softmax in exp2, P cast to f16 for the second
    gemm; causal masks with the KV cache offset ``seq_kv - seq_q``."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    past_len = seq_kv - seq_q
    q_shape = [batch, heads, seq_q, dim]
    kv_shape = [batch, heads, seq_kv, dim]

    @T.prim_func
    def main(
        Q: T.Tensor(q_shape, "float16"),
        K: T.Tensor(kv_shape, "float16"),
        V: T.Tensor(kv_shape, "float16"),
        Output: T.Tensor(q_shape, "float16"),
    ):
        with T.Kernel(T.ceildiv(seq_q, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], "float16")
            K_shared = T.alloc_shared([block_N, dim], "float16")
            V_shared = T.alloc_shared([block_N, dim], "float16")
            O_shared = T.alloc_shared([block_M, dim], "float16")
            acc_s = T.alloc_fragment([block_M, block_N], "float32")
            acc_s_cast = T.alloc_fragment([block_M, block_N], "float16")
            acc_o = T.alloc_fragment([block_M, dim], "float32")
            scores_max = T.alloc_fragment([block_M], "float32")
            scores_max_prev = T.alloc_fragment([block_M], "float32")
            scores_scale = T.alloc_fragment([block_M], "float32")
            scores_sum = T.alloc_fragment([block_M], "float32")
            logsum = T.alloc_fragment([block_M], "float32")

            T.copy(Q[bz, by, bx * block_M : (bx + 1) * block_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity("float32"))
            loop_range = (
                T.min(T.ceildiv(seq_kv, block_N), T.ceildiv((bx + 1) * block_M + past_len, block_N))
                if is_causal
                else T.ceildiv(seq_kv, block_N)
            )
            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[bz, by, k * block_N : (k + 1) * block_N, :], K_shared)
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(
                            bx * block_M + i + past_len >= k * block_N + j,
                            0,
                            -T.infinity("float32"),
                        )
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(
                            k * block_N + j >= seq_kv, -T.infinity("float32"), 0
                        )
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity("float32"))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, by, k * block_N : (k + 1) * block_N, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, by, bx * block_M : (bx + 1) * block_M, :])

    return main


def flash_attention_gqa_bshd(
    batch: int,
    heads: int,
    seq_len: int,
    dim: int,
    is_causal: bool,
    groups: int,
    block_M: int = 64,
    block_N: int = 64,
    num_stages: int = 1,
    threads: int = 128,
) -> Any:
    """Flash attention forward, GQA, [batch, seq, heads, dim] (TileLang's
    ``example_gqa_fwd_bshd``): ``groups`` query heads share one K/V head."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    head_kv = heads // groups
    q_shape = [batch, seq_len, heads, dim]
    kv_shape = [batch, seq_len, head_kv, dim]

    @T.prim_func
    def main(
        Q: T.Tensor(q_shape, "float16"),
        K: T.Tensor(kv_shape, "float16"),
        V: T.Tensor(kv_shape, "float16"),
        Output: T.Tensor(q_shape, "float16"),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], "float16")
            K_shared = T.alloc_shared([block_N, dim], "float16")
            V_shared = T.alloc_shared([block_N, dim], "float16")
            O_shared = T.alloc_shared([block_M, dim], "float16")
            acc_s = T.alloc_fragment([block_M, block_N], "float32")
            acc_s_cast = T.alloc_fragment([block_M, block_N], "float16")
            acc_o = T.alloc_fragment([block_M, dim], "float32")
            scores_max = T.alloc_fragment([block_M], "float32")
            scores_max_prev = T.alloc_fragment([block_M], "float32")
            scores_scale = T.alloc_fragment([block_M], "float32")
            scores_sum = T.alloc_fragment([block_M], "float32")
            logsum = T.alloc_fragment([block_M], "float32")

            T.copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity("float32"))
            loop_range = (
                T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                if is_causal
                else T.ceildiv(seq_len, block_N)
            )
            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[bz, k * block_N : (k + 1) * block_N, by // groups, :], K_shared)
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(
                            bx * block_M + i >= k * block_N + j, 0, -T.infinity("float32")
                        )
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(
                            k * block_N + j >= seq_len, -T.infinity("float32"), 0
                        )
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity("float32"))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, k * block_N : (k + 1) * block_N, by // groups, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, bx * block_M : (bx + 1) * block_M, by, :])

    return main


def attention_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, is_causal: bool) -> np.ndarray:
    """softmax(q k^T / sqrt(d)) v in float64 over [batch, heads, seq, dim] arrays (the
    causal mask aligned to the end of the KV sequence, as with a KV cache)."""
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    scores = np.einsum("bhqd,bhkd->bhqk", q64, k64) / np.sqrt(q.shape[-1])
    if is_causal:
        seq_q, seq_kv = q.shape[2], k.shape[2]
        keep = np.tril(np.ones((seq_q, seq_kv), bool), seq_kv - seq_q)
        scores = np.where(keep, scores, -np.inf)
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("bhqk,bhkd->bhqd", weights, v64)


def softmax_rows(M: int, N: int, block_M: int) -> Any:
    """Row softmax of an f32 [M, N] matrix, ``block_M`` rows per block: a fragment of
    the rows, `T.reduce_max`, exp2 of the shifted values, `T.reduce_sum`, divide."""
    scale = 1.44269504  # log2(e)

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            X_shared = T.alloc_shared((block_M, N), "float32")
            x = T.alloc_fragment((block_M, N), "float32")
            row_max = T.alloc_fragment((block_M,), "float32")
            row_sum = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], X_shared)
            T.copy(X_shared, x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.exp2(x[i, j] * scale - row_max[i] * scale)
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * block_M, 0])

    return main


def rms_norm(M: int, N: int, block_M: int, dtype: str = "float32") -> Any:
    """RMS norm of each row (TileLang's ``examples/norm/rms_norm.py``: the row block in
    shared memory and a fragment, squares reduced with `T.reduce_sum`, ``rsqrt``)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            A_shared = T.alloc_shared((block_M, N), dtype)
            A_pow_local = T.alloc_fragment((block_M, N), "float32")
            A_local = T.alloc_fragment((block_M, N), "float32")
            A_powsum = T.alloc_fragment((block_M,), "float32")
            T.copy(A[bx * block_M : (bx + 1) * block_M, :], A_shared)
            T.copy(A_shared, A_local)
            for i, j in T.Parallel(block_M, N):
                A_pow_local[i, j] = A_local[i, j] * A_local[i, j]
            T.reduce_sum(A_pow_local, A_powsum, dim=1)
            for i in T.Parallel(block_M):
                A_powsum[i] = T.rsqrt(A_powsum[i] / N + 1e-12)
            for i, j in T.Parallel(block_M, N):
                A_local[i, j] *= A_powsum[i]
            T.copy(A_local, B[bx * block_M : (bx + 1) * block_M, :])

    return main
