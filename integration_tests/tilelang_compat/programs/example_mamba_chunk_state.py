"""From TileLang's ``examples/linear_attention/example_mamba_chunk_state.py`` (commit b9a5907a2): ``get_configs``, ``chunk_state_fwd``,
verbatim except the imports."""

import itertools
import torch
from tl_jit.autotuner import *
import tl_jit as tilelang
import tl_jit.language as T


def get_configs():
    iter_params = dict(block_M=[64, 128], block_N=[32, 64, 128], block_K=[32, 64], num_stages=[1, 2, 3, 4, 5])
    return [dict(zip(iter_params, values)) for values in itertools.product(*iter_params.values())]


@autotune(configs=get_configs(), warmup=10, rep=10)
@tilelang.jit
def chunk_state_fwd(B, x, dt, dA_cumsum, block_M=64, block_N=64, block_K=64, num_stages=2, threads=128):
    batch, seqlen, chunk_size, ngroups, nheads, headdim, dstate = T.const("batch, seqlen, chunk_size, ngroups, nheads, headdim, dstate")
    dtype = T.float16
    accum_dtype = T.float32
    nchunks = T.ceildiv(seqlen, chunk_size)
    p = 1.44269504

    B: T.Tensor((batch, seqlen, ngroups, dstate), dtype)
    x: T.Tensor((batch, seqlen, nheads, headdim), dtype)
    dt: T.Tensor((batch, nheads, nchunks, chunk_size), dtype)
    dA_cumsum: T.Tensor((batch, nheads, nchunks, chunk_size), dtype)
    Output = T.empty((batch, nchunks, nheads, headdim, dstate), dtype)

    with T.Kernel(nheads, T.ceildiv(headdim, block_M) * T.ceildiv(dstate, block_N), batch * nchunks, threads=threads) as (bz, bx, by):
        x_shared = T.alloc_shared((block_K, block_M), dtype)
        x_local = T.alloc_fragment((block_K, block_M), dtype)
        xt_local = T.alloc_fragment((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        dt_shared = T.alloc_shared((block_K), dtype)
        dA_cumsum_shared = T.alloc_shared((block_K), dtype)
        acc_o = T.alloc_fragment((block_M, block_N), accum_dtype)
        acc_o_shared = T.alloc_shared((block_M, block_N), dtype)
        scale = T.alloc_fragment((block_K), accum_dtype)
        dA_cs_last = T.alloc_fragment((1), accum_dtype)
        dA_cumsum_local = T.alloc_fragment((block_K), accum_dtype)
        dt_local = T.alloc_fragment((block_K), accum_dtype)

        loop_range = T.ceildiv(chunk_size, block_K)

        batch_idx = by % batch
        chunk_idx = by // batch
        m_idx = bx // T.ceildiv(dstate, block_N)
        n_idx = bx % T.ceildiv(dstate, block_N)

        T.annotate_layout({x_shared: tilelang.layout.make_swizzled_layout(x_shared)})

        dA_cs_last[0] = dA_cumsum[batch_idx, bz, chunk_idx, chunk_size - 1]
        T.clear(acc_o)
        for k in T.Pipelined(loop_range, num_stages=num_stages):
            T.copy(
                x[
                    batch_idx,
                    chunk_idx * chunk_size + k * block_K : chunk_idx * chunk_size + (k + 1) * block_K,
                    bz,
                    m_idx * block_M : (m_idx + 1) * block_M,
                ],
                x_shared,
            )
            T.copy(dA_cumsum[batch_idx, bz, chunk_idx, k * block_K : (k + 1) * block_K], dA_cumsum_shared)
            T.copy(dt[batch_idx, bz, chunk_idx, k * block_K : (k + 1) * block_K], dt_shared)
            T.copy(dA_cumsum_shared, dA_cumsum_local)
            T.copy(dt_shared, dt_local)
            for i in T.Parallel(block_K):
                scale[i] = T.exp2(dA_cs_last[0] * p - dA_cumsum_local[i] * p) * dt_local[i]
            T.copy(x_shared, x_local)
            for i, j in T.Parallel(block_M, block_K):
                xt_local[i, j] = x_local[j, i] * scale[j]
            T.copy(
                B[
                    batch_idx,
                    chunk_idx * chunk_size + k * block_K : chunk_idx * chunk_size + (k + 1) * block_K,
                    bz // (nheads // ngroups),
                    n_idx * block_N : (n_idx + 1) * block_N,
                ],
                B_shared,
            )
            T.gemm(xt_local, B_shared, acc_o)
        T.copy(acc_o, acc_o_shared)
        T.copy(
            acc_o_shared,
            Output[batch_idx, chunk_idx, bz, m_idx * block_M : (m_idx + 1) * block_M, n_idx * block_N : (n_idx + 1) * block_N],
        )

    return Output
