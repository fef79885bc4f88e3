"""Kernels of TileLang's builtins shared by the c/llvm tests and the CUDA tests (which
lower the same kernels and run them under the CPU emulation): the Philox block function,
TileLang's random-number example and its cuRAND reference, the legacy-reducer GEMV."""

from __future__ import annotations

from typing import Any

import numpy as np

import tl_ir.language as T
from integration_tests.philox_reference import curand_stream, curand_uniform
from tl_ir.language._random import philox4x32_10 as emit_philox


def philox_blocks() -> Any:
    """One Philox4x32-10 block per row of C and K, by the generator's own IR."""

    @T.prim_func
    def main(
        C: T.Tensor((3, 4), "uint32"),
        K: T.Tensor((3, 2), "uint32"),
        Out: T.Tensor((3, 4), "uint32"),
    ):
        with T.Kernel(3, threads=1) as b:
            work = T.alloc_local((12,), "uint32")
            emit_philox(work, 8, [C[b, 0], C[b, 1], C[b, 2], C[b, 3]], [K[b, 0], K[b, 1]], work, 0)
            for i in T.serial(4):
                Out[b, i] = work[8 + i]

    return main


def tilelang_rand_1d(M: int, seed: int) -> Any:
    """TileLang's examples/rand (one thread per block draws 128 numbers in order), with a
    float32 uniform and a float32/float64 normal draw after the words."""
    num_per_thread = 128
    threads = 1
    blk_M = num_per_thread * threads

    @T.prim_func
    def main(
        A: T.Tensor((M,), "uint32"),
        B: T.Tensor((M,), "float32"),
        D: T.Tensor((M,), "float32"),
        E: T.Tensor((M,), "float64"),
    ):
        with T.Kernel(T.ceildiv(M, threads * num_per_thread), threads=threads) as bx:
            tx = T.get_thread_binding()
            T.rng_init(seed, 0, bx * blk_M + tx * num_per_thread)
            for i, j in T.Parallel(threads, num_per_thread):
                offsets = (bx * threads + i) * num_per_thread
                idx = offsets + j
                if idx < M:
                    A[idx] = T.rng_rand()
            for i, j in T.Parallel(threads, num_per_thread):
                offsets = (bx * threads + i) * num_per_thread
                idx = offsets + j
                if idx < M:
                    B[idx] = T.rng_rand_float()
            for i, j in T.Parallel(threads, num_per_thread):
                offsets = (bx * threads + i) * num_per_thread
                idx = offsets + j
                if idx < M:
                    D[idx] = T.rng_rand_float(dist="normal")
            for i, j in T.Parallel(threads, num_per_thread):
                offsets = (bx * threads + i) * num_per_thread
                idx = offsets + j
                if idx < M:
                    E[idx] = T.rng_rand_float(bit=64, dist="normal")

    return main


def expected_rand_1d(M: int, seed: int) -> dict[str, np.ndarray]:
    """What cuRAND gives TileLang's example: per block, words 0..127 of its stream at
    offset 128 * bx, then 128 uniforms, then Box-Muller normals (pairs of words, the
    second value of each pair used by the next element; float64 from four words)."""
    a, b, d, e = (np.zeros(M, t) for t in (np.uint32, np.float32, np.float32, np.float64))
    for block in range(M // 128):
        words = curand_stream(seed, 0, 128 * block, 128 * 2 + 128 + 2 * 128)
        rows = slice(128 * block, 128 * (block + 1))
        a[rows], b[rows] = words[:128], curand_uniform(words[128:256])
        pairs = words[256:384].reshape(-1, 2).astype(np.float64)
        u = pairs[:, 0] * 2.0**-32 + 2.0**-33
        v = pairs[:, 1] * 2.0**-32 * 2 * np.pi + 2.0**-32 * np.pi
        radius = np.sqrt(-2 * np.log(u))
        d[rows] = np.stack([radius * np.sin(v), radius * np.cos(v)], axis=1).reshape(-1)
        quads = words[384:640].reshape(-1, 4).astype(np.uint64)
        u53 = (quads[:, 0] ^ (quads[:, 1] << np.uint64(21))).astype(np.float64)
        v53 = (quads[:, 2] ^ (quads[:, 3] << np.uint64(21))).astype(np.float64)
        radius = np.sqrt(-2 * np.log(u53 * 2.0**-53 + 2.0**-54))
        angle = (v53 * 2.0**-53 + 2.0**-54) * 2 * np.pi
        e[rows] = np.stack([radius * np.sin(angle), radius * np.cos(angle)], axis=1).reshape(-1)
    return {"A": a, "B": b, "D": d, "E": e}


def gemv_alloc_reducer(
    M: int, N: int, block_M: int = 32, block_N: int = 32, replication: str = "all"
) -> Any:
    """TileLang's ``gemv_alloc_reducer`` (examples/gemv), its body verbatim, as a
    prim_func of fixed sizes."""
    dtype, accum_dtype = "float16", "float"

    @T.prim_func
    def main(a: T.Tensor((M, N), dtype), x: T.Tensor((N,), dtype), o: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=64) as i0_m:
            o_reducer = T.alloc_reducer(block_M, accum_dtype, replication=replication)
            T.clear(o_reducer)
            for i0_n in T.Pipelined(T.ceildiv(N, block_N), num_stages=2):
                a_smem = T.alloc_shared((block_M, block_N), dtype)
                T.copy(a[i0_m * block_M, i0_n * block_N], a_smem)
                a_frag = T.alloc_fragment((block_M, block_N), dtype)
                T.copy(a_smem, a_frag)
                x_frag = T.alloc_fragment(block_N, dtype)
                T.copy(x[i0_n * block_N], x_frag)
                for i1_m, i1_n in T.Parallel(block_M, block_N):
                    o_reducer[i1_m] += a_frag[i1_m, i1_n] * x_frag[i1_n]
            T.finalize_reducer(o_reducer)
            T.copy(o_reducer, o[i0_m * block_M])

    return main


def im2col_tiles(
    N: int, H: int, W: int, C: int, K: int, S: int, D: int, P: int, block_M: int, block_K: int
) -> Any:
    """Every (block_M, block_K) tile of the image's im2col matrix through T.im2col, copied
    out to a (rows, cols) matrix padded to whole tiles."""
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
    tiles_m = (N * OH * OW + block_M - 1) // block_M
    tiles_k = (K * K * C + block_K - 1) // block_K

    @T.prim_func
    def main(
        data: T.Tensor((N, H, W, C), "float32"),
        cols: T.Tensor((tiles_m * block_M, tiles_k * block_K), "float32"),
    ):
        with T.Kernel(tiles_k, tiles_m, threads=64) as (bx, by):
            tile = T.alloc_shared((block_M, block_K), "float32")
            T.im2col(data, tile, by, bx, K, S, D, P)
            T.copy(tile, cols[by * block_M, bx * block_K])

    return main


def numpy_im2col(data: np.ndarray, K: int, S: int, D: int, P: int) -> np.ndarray:
    """The im2col matrix of an NHWC image: rows (n, oh, ow), columns (kh, kw, c)."""
    N, H, W, C = data.shape
    padded = np.pad(data, ((0, 0), (P, P), (P, P), (0, 0)))
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
    out = np.zeros((N, OH, OW, K, K, C), data.dtype)
    for kh in range(K):
        for kw in range(K):
            rows = padded[:, kh * D : kh * D + S * (OH - 1) + 1 : S]
            out[:, :, :, kh, kw] = rows[:, :, kw * D : kw * D + S * (OW - 1) + 1 : S]
    return out.reshape(N * OH * OW, K * K * C)


def convolution(
    N: int,
    C: int,
    H: int,
    W: int,
    F: int,
    K: int,
    S: int,
    D: int,
    P: int,
    block_M: int,
    block_N: int,
    block_K: int,
    num_stages: int,
    threads: int,
) -> Any:
    """TileLang's examples/convolution kernel (NHWC image, HWCF filter), its body
    verbatim, as a prim_func of fixed sizes."""
    KH, KW = K, K
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
    dtype = T.float16
    accum_dtype = T.float32

    @T.prim_func
    def main(
        data: T.Tensor((N, H, W, C), dtype),
        kernel: T.Tensor((KH, KW, C, F), dtype),
        out: T.Tensor((N, OH, OW, F), dtype),
    ):
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M), threads=threads) as (
            bx,
            by,
        ):
            data_shared = T.alloc_shared((block_M, block_K), dtype)
            kernel_shared = T.alloc_shared((block_K, block_N), dtype)
            out_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            out_shared = T.alloc_shared((block_M, block_N), dtype)

            kernel_flat = T.Tensor((KH * KW * C, F), dtype, kernel.data)
            out_flat = T.Tensor((N * OH * OW, F), dtype, out.data)

            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, block_K), num_stages=num_stages):
                T.im2col(data, data_shared, by, k_iter, KH, S, D, P)
                T.copy(kernel_flat[k_iter * block_K, bx * block_N], kernel_shared)
                T.gemm(data_shared, kernel_shared, out_local)

            T.copy(out_local, out_shared)
            T.copy(out_shared, out_flat[by * block_M, bx * block_N])

    return main
