"""From TileLang's ``examples/block_causal_attention/block_causal_attention.py`` (commit 22baf2e2c): ``_check_dllm_block``, ``_fwd_tile_allowed``, ``_fwd_template``,
verbatim except the imports."""

import torch
import tl_jit as tilelang
import tl_jit.language as T


def _check_dllm_block(dllm_block: int, block_size: int):
    assert dllm_block in _SUPPORTED_DLLM_BLOCKS, f"dllm_block must be one of {_SUPPORTED_DLLM_BLOCKS}, got {dllm_block}"
    assert block_size % dllm_block == 0, f"block ({block_size}) must be divisible by dllm_block ({dllm_block})"


def _fwd_tile_allowed(i, j, dllm_block: int, is_noisy_diag, q_is_noisy):
    """Mask for a single visited boundary forward tile.

    `i`/`j` are tile-local query/key rows. `is_noisy_diag` marks the noisy-noisy
    diagonal tile. Otherwise this is the clean boundary tile and `q_is_noisy`
    selects between offset_causal and block_causal masking.
    """
    q_blk = i // dllm_block
    k_blk = j // dllm_block
    noisy_allowed = T.if_then_else(q_blk == k_blk, 1, 0)
    clean_boundary = T.if_then_else(
        q_is_noisy,
        T.if_then_else(q_blk > k_blk, 1, 0),
        T.if_then_else(q_blk >= k_blk, 1, 0),
    )
    return T.if_then_else(is_noisy_diag == 1, noisy_allowed, clean_boundary)


@tilelang.jit(out_idx=[3, 4])
def _fwd_template(
    batch: int,
    heads: int,
    seq_len: int,
    dim: int,
    dllm_block: int,
    softmax_scale: float,
    block_size: int = 64,
    num_stages: int = 1,
    threads: int = 128,
    dtype: str = "bfloat16",
):
    assert seq_len % 2 == 0, "seq_len must be noisy|clean halves"
    half_len = seq_len // 2
    assert half_len % block_size == 0, "half_len must be divisible by block_size"
    _check_dllm_block(dllm_block, block_size)
    region_tiles = half_len // block_size

    scale_log2e = softmax_scale * LOG2_E
    accum_dtype = "float32"
    neg_inf = -1.0e6
    shape = [batch, seq_len, heads, dim]

    @T.prim_func
    def fwd(
        Q: T.Tensor(shape, dtype),
        K: T.Tensor(shape, dtype),
        V: T.Tensor(shape, dtype),
        Output: T.Tensor(shape, dtype),
        LSE: T.Tensor([batch, heads, seq_len], accum_dtype),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_size), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_size, dim], dtype)
            K_shared = T.alloc_shared([block_size, dim], dtype)
            V_shared = T.alloc_shared([block_size, dim], dtype)
            O_shared = T.alloc_shared([block_size, dim], dtype)
            acc_s = T.alloc_fragment([block_size, block_size], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_size, block_size], dtype)
            acc_o = T.alloc_fragment([block_size, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_size], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_size], accum_dtype)
            scores_scale = T.alloc_fragment([block_size], accum_dtype)
            scores_sum = T.alloc_fragment([block_size], accum_dtype)
            logsum = T.alloc_fragment([block_size], accum_dtype)

            T.copy(Q[bz, bx * block_size : (bx + 1) * block_size, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, neg_inf)

            q_is_noisy = bx < region_tiles
            last_clean_step = T.if_then_else(q_is_noisy, bx, bx - region_tiles)
            num_steps = T.if_then_else(q_is_noisy, bx + 2, (bx - region_tiles) + 1)

            for s in T.Pipelined(num_steps, num_stages=num_stages):
                is_noisy_diag = T.if_then_else(s > last_clean_step, 1, 0)
                if is_noisy_diag != 0:
                    T.copy(K[bz, bx * block_size : (bx + 1) * block_size, by, :], K_shared)
                else:
                    T.copy(K[bz, half_len + s * block_size : half_len + (s + 1) * block_size, by, :], K_shared)

                is_clean_diag = T.if_then_else(s == last_clean_step, 1, 0)
                needs_mask = is_noisy_diag + is_clean_diag
                if needs_mask != 0:
                    for i, j in T.Parallel(block_size, block_size):
                        allowed = _fwd_tile_allowed(i, j, dllm_block, is_noisy_diag, q_is_noisy)
                        acc_s[i, j] = T.if_then_else(allowed > 0, 0, neg_inf)
                else:
                    T.clear(acc_s)

                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, neg_inf)
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_size):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_size):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale_log2e - scores_max[i] * scale_log2e)
                for i, j in T.Parallel(block_size, block_size):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale_log2e - scores_max[i] * scale_log2e)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_size):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)

                for i, j in T.Parallel(block_size, dim):
                    acc_o[i, j] *= scores_scale[i]
                if is_noisy_diag != 0:
                    T.copy(V[bz, bx * block_size : (bx + 1) * block_size, by, :], V_shared)
                else:
                    T.copy(V[bz, half_len + s * block_size : half_len + (s + 1) * block_size, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

            for i, j in T.Parallel(block_size, dim):
                acc_o[i, j] /= logsum[i] + 1e-30
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, bx * block_size : (bx + 1) * block_size, by, :])
            for i in T.Parallel(block_size):
                logsum[i] = T.log2(logsum[i] + 1e-30) + scores_max[i] * scale_log2e
            T.copy(logsum, LSE[bz, by, bx * block_size : (bx + 1) * block_size])

    return fwd
