"""How many rows a laned GEMV walks at once (`thread_jam`) and which per-lane sums
become register-wide pieces (`thread_register_chunks`): both from the register count
and width of the target CPU's vector unit, not from fixed numbers."""

from __future__ import annotations

import re
from typing import Any

import pytest
import tvm

import tl_ir.language as T
from tl_codegen_cpu.lowering.thread_lanes import THREAD_PATH_KEY
from tl_codegen_cpu.lowering.thread_register_chunks import max_chunks
from tl_codegen_cpu.lowering.vector_isa import VectorISA, vector_isa_for_target
from tl_codegen_cpu.passes import CpuLowerLaunchPass
from tl_passes import PassContext

N, K = 64, 512
AVX2 = {"kind": "llvm", "mcpu": "znver2"}  # 16 registers of 256 bits
AVX512 = {"kind": "llvm", "mcpu": "skylake-avx512"}  # 32 registers of 512 bits


def split_k_gemv(rows: int, threads_k: int, chunk: int) -> Any:
    """C = B @ A: ``rows`` threads on rows, ``threads_k`` threads splitting each block of
    K (``chunk`` elements each), the threads' sums added into a shared row sum. In lock
    step one row's per-lane sums are ``threads_k * chunk`` floats."""
    block_k = threads_k * chunk

    @T.prim_func
    def main(
        A: T.Tensor((K,), "float32"), B: T.Tensor((N, K), "float32"), C: T.Tensor((N,), "float32")
    ):
        with T.Kernel(N // rows, threads=(rows, threads_k)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            a_regs = T.alloc_local((chunk,), "float32")
            b_regs = T.alloc_local((chunk,), "float32")
            row_sum = T.alloc_shared((rows,), "float32")
            acc = T.alloc_local((1,), "float32")
            if tk == 0:
                row_sum[tn] = 0
            T.clear(acc)
            for bk in T.serial(K // block_k):
                for k in T.serial(chunk):
                    a_regs[k] = A[bk * block_k + tk * chunk + k]
                    b_regs[k] = B[bn * rows + tn, bk * block_k + tk * chunk + k]
                for k in T.serial(chunk):
                    acc[0] += a_regs[k] * b_regs[k]
            T.atomic_add(row_sum[tn], acc[0])
            C[bn * rows + tn] = row_sum[tn]

    return main


def _lowered(func: Any, target: dict[str, str]) -> tuple[str, str]:
    """(the laned path of the GEMV's nest, the lowered script) on ``target``."""
    mod = tvm.IRModule({"main": func})
    text = CpuLowerLaunchPass().run(mod, PassContext(target=tvm.target.Target(target))).script()
    paths = re.findall(rf'"{re.escape(THREAD_PATH_KEY)}": "([^"]*)"', text)
    laned = [p for p in paths if p.startswith("lanes: threads")]
    assert len(laned) == 1, paths
    return laned[0], text


def test_the_targets_describe_their_vector_units() -> None:
    assert vector_isa_for_target(tvm.target.Target(AVX2)) == VectorISA(256, 16)
    assert vector_isa_for_target(tvm.target.Target(AVX512)) == VectorISA(512, 32)
    assert max_chunks(VectorISA(256, 16)) == 8
    assert max_chunks(VectorISA(512, 32)) == 16


def test_register_held_sums_limit_the_rows_in_flight() -> None:
    # 64 floats of sums per row: 8 registers at 256 bits (two rows fill 16), 4 at 512.
    func = split_k_gemv(rows=8, threads_k=8, chunk=8)
    avx2_path, avx2 = _lowered(func, AVX2)
    avx512_path, avx512 = _lowered(func, AVX512)
    assert avx2_path.endswith("; 2 threads interleaved"), avx2_path
    assert avx512_path.endswith("; 4 threads interleaved"), avx512_path
    # Held in registers: register-wide pieces, 8 lanes wide on AVX2, 16 on AVX-512.
    assert set(re.findall(r"for \w+_c\d+ in T.vectorized\((\d+)\)", avx2)) == {"8"}
    assert set(re.findall(r"for \w+_c\d+ in T.vectorized\((\d+)\)", avx512)) == {"16"}


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_sums_past_half_the_registers_stay_in_memory_and_rows_still_jam(
    target: dict[str, str],
) -> None:
    # TileLang's gemv_simt shape: 32 threads x 4 elements = 128 floats of sums per row,
    # 16 registers at 256 bits (more than half of 16: a loop over memory, which does not
    # limit the rows in flight), 8 at 512 bits (register-held; four rows fill 32).
    path, text = _lowered(split_k_gemv(rows=4, threads_k=32, chunk=4), target)
    assert path.endswith("; 4 threads interleaved"), path
    pieces = re.findall(r"for \w+_c\d+ in T.vectorized\((\d+)\)", text)
    if target is AVX2:
        assert pieces == [], pieces
    else:
        assert pieces and set(pieces) == {"16"}, pieces
