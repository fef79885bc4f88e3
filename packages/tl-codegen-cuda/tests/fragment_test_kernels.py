"""Hand-written CUDA test kernels that call the helpers of tl_tensor_core.h, compiled
with the CPU emulation (tests only; `test_emulated_fragments` and
`test_emulated_cp_async` drive them). They are not generated code, so the lowering
and the emulator cannot share a mistake."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

from tl_backend_api import KernelArgument, KernelLaunch
from tl_codegen_cuda.codegen import tensor_core_header

MMA_FORMS = [
    "tl_mma_m16n8k16_f32_f16_f16",
    "tl_mma_m16n8k16_f32_bf16_bf16",
    "tl_mma_m16n8k16_f16_f16_f16",
    "tl_mma_m16n8k32_s32_s8_s8",
    "tl_mma_m16n8k32_s32_u8_u8",
    "tl_mma_m16n8k32_f32_e4m3_e4m3",
    "tl_mma_m16n8k32_f32_e5m2_e5m2",
]
LDMATRIX_FORMS = [
    (1, False), (2, False), (4, False), (1, True), (2, True), (4, True),
]  # fmt: skip

_KERNELS = (
    r"""
extern "C" __global__ void mma_batch(const unsigned* a, const unsigned* b, unsigned* c,
                                     int cases, int form) {
  unsigned lane = threadIdx.x;
  for (int t = 0; t < cases; ++t) {
    unsigned ra[4], rb[2], rc[4];
    for (int i = 0; i < 4; ++i) ra[i] = a[(t * 32 + lane) * 4 + i];
    for (int i = 0; i < 2; ++i) rb[i] = b[(t * 32 + lane) * 2 + i];
    for (int i = 0; i < 4; ++i) rc[i] = c[(t * 32 + lane) * 4 + i];
    switch (form) {
"""
    + "".join(f"      case {i}: {name}(rc, ra, rb); break;\n" for i, name in enumerate(MMA_FORMS))
    + r"""    }
    for (int i = 0; i < 4; ++i) c[(t * 32 + lane) * 4 + i] = rc[i];
  }
}

extern "C" __global__ void ldmatrix_rows(const int* row_of_lane, unsigned* out, int form) {
  __shared__ __align__(16) unsigned short tile[32][16];
  unsigned lane = threadIdx.x;
  for (int col = 0; col < 16; ++col) tile[lane][col] = col < 8 ? lane * 8 + col : 0xffff;
  __syncthreads();
  int row = row_of_lane[lane];
  // A negative row: this lane's address is one the ISA ignores; make it unusable.
  const void* address = row >= 0 ? (const void*)&tile[row][0]
                                 : (const void*)((const char*)&tile[0][0] + 1);
  unsigned regs[4] = {0, 0, 0, 0};
  switch (form) {
    case 0: tl_ldmatrix_x1(regs, address); break;
    case 1: tl_ldmatrix_x2(regs, address); break;
    case 2: tl_ldmatrix_x4(regs, address); break;
    case 3: tl_ldmatrix_x1_trans(regs, address); break;
    case 4: tl_ldmatrix_x2_trans(regs, address); break;
    case 5: tl_ldmatrix_x4_trans(regs, address); break;
  }
  for (int i = 0; i < 4; ++i) out[lane * 4 + i] = regs[i];
}

// Only lanes 0-15 reach the ldmatrix: a divergent warp collective.
extern "C" __global__ void divergent_ldmatrix(unsigned* out) {
  __shared__ __align__(16) unsigned short tile[8][8];
  unsigned regs[1] = {0};
  if (threadIdx.x < 16) tl_ldmatrix_x1(regs, &tile[threadIdx.x % 8][0]);
  out[threadIdx.x] = regs[0];
}

// out[snapshot][thread][buffer][word]: what thread t sees of its own 16-byte slots.
extern "C" __global__ void cp_async_groups(const unsigned* src, unsigned* out, int scenario) {
  __shared__ __align__(16) unsigned stage[4][32][4];
  unsigned t = threadIdx.x;
  for (int b = 0; b < 4; ++b)
    for (int i = 0; i < 4; ++i) stage[b][t][i] = 0xdead0000u + b * 16 + i;
  int shot = 0;
  auto snapshot = [&]() {
    for (int b = 0; b < 4; ++b)
      for (int i = 0; i < 4; ++i) out[((shot * 32 + t) * 4 + b) * 4 + i] = stage[b][t][i];
    ++shot;
  };
  const unsigned* mine = src + t * 16;  // 64 source bytes per thread
  if (scenario == 0) {  // a read before the wait sees the old data
    tl_cp_async_16(stage[0][t], mine);
    tl_cp_async_commit();
    snapshot();
    tl_cp_async_wait(0);
    snapshot();
  } else if (scenario == 1) {  // three groups retire oldest first
    tl_cp_async_16(stage[0][t], mine);
    tl_cp_async_commit();
    tl_cp_async_8(stage[1][t], mine + 4);
    tl_cp_async_8(&stage[1][t][2], mine + 6);
    tl_cp_async_commit();
    tl_cp_async_4(stage[2][t], mine + 8);
    tl_cp_async_commit();
    tl_cp_async_wait(2);
    snapshot();
    tl_cp_async_wait(1);
    snapshot();
    tl_cp_async_wait(0);
    snapshot();
  } else if (scenario == 2) {  // zero-fill reads nothing (the source is not an address)
    tl_cp_async_16_zfill(stage[0][t], (const void*)0x1, 0);
    tl_cp_async_8_zfill(stage[1][t], (const void*)0x3, 0);
    tl_cp_async_4_zfill(stage[2][t], mine, 1);
    tl_cp_async_16_zfill(stage[3][t], mine + 12, 1);
    tl_cp_async_commit();
    snapshot();
    tl_cp_async_wait(0);
    snapshot();
  } else if (scenario == 3) {  // wait_group retires committed groups only
    tl_cp_async_4(stage[0][t], mine);
    tl_cp_async_wait(0);
    snapshot();
    tl_cp_async_commit();
    tl_cp_async_wait(0);
    snapshot();
  } else if (scenario == 4) {  // a misaligned 16-byte copy is a fault
    tl_cp_async_16(stage[0][t], mine + 1);
    tl_cp_async_commit();
    tl_cp_async_wait(0);
  }
}
"""
)

_SIGNATURES = {
    "mma_batch": [("a", "buffer"), ("b", "buffer"), ("c", "buffer"), ("cases", "int32"),
                  ("form", "int32")],
    "ldmatrix_rows": [("row_of_lane", "buffer"), ("out", "buffer"), ("form", "int32")],
    "cp_async_groups": [("src", "buffer"), ("out", "buffer"), ("scenario", "int32")],
    "divergent_ldmatrix": [("out", "buffer")],
}  # fmt: skip


def _description(symbol: str) -> KernelLaunch:
    arguments = tuple(
        KernelArgument("buffer", n, "uint32")
        if kind == "buffer"
        else KernelArgument("scalar", n, kind)
        for n, kind in _SIGNATURES[symbol]
    )
    return KernelLaunch(kernel_name=symbol, grid=(1,), block=(32,), arguments=arguments)


def source() -> str:
    """The test kernels' CUDA C, the real tl_tensor_core.h first."""
    # The real header first: under TL_CUDA_EMULATION it must vanish, leaving the
    # emulation's stand-ins as the only definitions.
    return tensor_core_header() + _KERNELS


@functools.cache
def _library(symbol: str) -> Any:
    return emu.compile_emulation(source(), _description(symbol), _workdir())


@functools.cache
def _workdir() -> Path:
    return emu.scratch_dir()


def run(symbol: str, params: dict[str, Any]) -> None:
    """Launch test kernel ``symbol`` on one warp (32 threads) with ``params`` by name."""
    emu.run_emulated(_library(symbol), _description(symbol), (1,), (32,), params)
