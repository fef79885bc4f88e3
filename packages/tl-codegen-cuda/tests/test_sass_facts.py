"""What the SASS of CUDA kernels holds (no GPU): the SASS reader of benchmarks/sass_facts.py
on hand-written CUDA, then the structural facts of the generated GEMM, flash attention,
softmax and RMS norm (tensor-core instructions, async copies, no spills or local memory,
128-bit global accesses). Facts about code, not timings."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import gpu_programs
import sass_facts
from sass_facts import Instruction

from tl_codegen_cuda.codegen import tensor_core_header

TOOLS_MISSING = [t for t in ("nvcc", "cuobjdump") if sass_facts.find_tool(t) is None]
needs_tools = pytest.mark.skipif(
    bool(TOOLS_MISSING), reason=f"not installed here: {', '.join(TOOLS_MISSING)}"
)


# -- the reader on literal text (no tools) -----------------------------------------------

LISTING = """
	code for sm_80
		Function : two_loops
	.headerflags	@"EF_CUDA_SM80 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM80)"
        /*0000*/                   MOV R1, c[0x0][0x28] ;                 /* 0x00000a0000017a02 */
                                                                          /* 0x000fe40000000f00 */
        /*0010*/                   MOV R2, RZ ;
        /*0020*/                   IADD3 R2, R2, 0x1, RZ ;
        /*0030*/                   MOV R3, RZ ;
        /*0040*/                   IADD3 R3, R3, 0x2, RZ ;
        /*0050*/                   HMMA.16816.F32 R4, R8, R12, R4 ;
        /*0060*/                   ISETP.GE.AND P1, PT, R3, 0x10, PT ;
        /*0070*/              @!P1 BRA 0x40 ;
        /*0080*/                   LDG.E.128 R8, [R6.64] ;
        /*0090*/                   ISETP.GE.AND P0, PT, R2, c[0x0][0x170], PT ;
        /*00a0*/              @!P0 BRA 0x20 ;
        /*00b0*/                   STG.E.U16 [R6.64], R4 ;
        /*00c0*/                   STG.E.64 [R6.64], R4 ;
        /*00d0*/                   EXIT ;
        /*00e0*/                   BRA 0xe0;
        /*00f0*/                   NOP;
"""


def test_the_reader_takes_instructions_predicates_and_drops_the_padding() -> None:
    [(name, instructions)] = sass_facts.parse_sass(LISTING).items()
    assert name == "two_loops"
    assert [i.address for i in instructions] == list(range(0, 0xE0, 0x10))
    assert instructions[7] == Instruction(0x70, "@!P1", "BRA", "0x40")
    assert instructions[-1].base == "EXIT"


def test_loops_nest_and_inner_trip_counts_come_from_the_counter() -> None:
    instructions = sass_facts.parse_sass(LISTING)["two_loops"]
    [outer] = sass_facts.find_loops(instructions)
    assert (outer.start, outer.end, len(outer.body)) == (0x20, 0xA0, 9)
    [inner] = outer.inner
    assert (inner.start, inner.end, inner.trips) == (0x40, 0x70, 8)  # 0x10 / 2
    assert outer.trips is None  # compared with a kernel parameter
    # 9 of its own (the inner body once) + 7 more inner iterations of 4.
    assert outer.per_iteration() == (9 + 7 * 4, True)
    facts = sass_facts.count_facts("two_loops", instructions, sass_facts.Resources())
    assert facts.tensor_core == 1
    assert facts.global_loads == {128: 1}
    assert facts.global_stores == {16: 1, 64: 1}
    assert facts.hot_loop is not None and facts.hot_loop.per_tile == 37


def test_ptxas_and_resource_reports_are_read_per_function() -> None:
    report = """ptxas info    : Compiling entry function 'k' for 'sm_80'
ptxas info    : Function properties for k
    40 bytes stack frame, 36 bytes spill stores, 28 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 1024 bytes smem, 372 bytes cmem[0]
"""
    assert sass_facts.parse_ptxas_verbose(report) == {
        "k": sass_facts.Resources(
            registers=32, stack=40, shared=1024, spill_stores=36, spill_loads=28
        )
    }
    usage = """Resource usage:
 Common:
  GLOBAL:0
 Function k:
  REG:32 STACK:40 SHARED:1024 LOCAL:0 CONSTANT[0]:372 TEXTURE:0 SURFACE:0 SAMPLER:0
"""
    assert sass_facts.parse_resource_usage(usage) == {
        "k": sass_facts.Resources(registers=32, stack=40, shared=1024)
    }


# -- the reader on hand-written CUDA ------------------------------------------------------

TENSOR_CORE_KERNEL = r"""
#include <cuda_fp16.h>
%(header)s
extern "C" __global__ void __launch_bounds__(32) tc(const half* __restrict__ a,
                                                    float* __restrict__ c, int n) {
  __shared__ __align__(16) half s[16 * 16 * 2];
  float acc[4] = {0, 0, 0, 0};
  int lane = threadIdx.x;
#pragma unroll 1
  for (int t = 0; t < n; ++t) {
    tl_cp_async_16(&s[lane * 8], a + t * 256 + lane * 8);
    tl_cp_async_commit();
    tl_cp_async_wait(0);
    __syncthreads();
    unsigned ra[4], rb[2];
    tl_ldmatrix_x4(ra, &s[(lane %% 16) * 16 + (lane / 16) * 8]);
    tl_ldmatrix_x2_trans(rb, &s[(lane %% 16) * 16]);
    tl_mma_m16n8k16_f32_f16_f16(acc, ra, rb);
    __syncthreads();
  }
  reinterpret_cast<float4*>(c)[lane] = make_float4(acc[0], acc[1], acc[2], acc[3]);
}
"""

WIDTHS_KERNEL = r"""
#include <cuda_fp16.h>
extern "C" __global__ void widths(const float4* a, const float2* b, const float* c,
                                  const __half* d, const unsigned char* e, float4* o4,
                                  float2* o2, float* o1, __half* oh, unsigned char* ob) {
  int i = threadIdx.x;
  o4[i] = a[i];
  o2[i] = b[i];
  o1[i] = c[i];
  oh[i] = d[i];
  ob[i] = e[i];
}
"""

# 48 values live at once; with -maxrregcount=24 ptxas must spill some of them.
SPILL_KERNEL = r"""
extern "C" __global__ void spill(const float* __restrict__ a, float* __restrict__ o) {
  float v[48];
#pragma unroll
  for (int i = 0; i < 48; ++i) v[i] = a[threadIdx.x * 48 + i];
  float s = 0;
#pragma unroll
  for (int i = 0; i < 48; ++i) s += v[i] * v[47 - i];
#pragma unroll
  for (int i = 0; i < 48; ++i) o[threadIdx.x * 48 + i] = v[i] * s;
}
"""


def _facts(tmp_path: Path, source: str, name: str, *options: str) -> Any:
    path = tmp_path / f"{name}.cu"
    path.write_text(source)
    cubin, report = sass_facts.compile_cubin(path, tmp_path / f"{name}.cubin", "sm_80", options)
    [facts] = sass_facts.cubin_facts(cubin, report)
    return facts, report


@needs_tools
def test_hand_written_mma_ldmatrix_and_cp_async_are_counted_exactly(tmp_path: Path) -> None:
    source = TENSOR_CORE_KERNEL % {"header": tensor_core_header()}
    facts, _ = _facts(tmp_path, source, "tc")
    assert facts.tensor_core == 1  # one m16n8k16: one HMMA.16816 on sm_80
    assert facts.async_copies == 1
    assert facts.ldsm == 2
    assert facts.global_loads == {}  # the only global read is the cp.async
    assert facts.global_stores == {128: 1}
    assert (facts.local_loads, facts.local_stores, facts.spills) == (0, 0, 0)
    loop = facts.hot_loop
    assert loop is not None and loop.exact and loop.tiles_per_iteration == 1
    # The loop is the run-time-bounded t loop: it holds all three instructions.
    body = [
        line
        for line in _sass(tmp_path / "tc.cubin")
        if loop.start <= int(re.match(r"\s*/\*([0-9a-f]+)\*/", line).group(1), 16) <= loop.end
    ]
    assert sum("HMMA" in line for line in body) == 1
    assert sum("LDGSTS" in line for line in body) == 1
    assert sum("LDSM" in line for line in body) == 2
    assert loop.per_iteration == len(body)


def _sass(cubin: Path) -> list[str]:
    import subprocess

    tool = sass_facts.find_tool("cuobjdump")
    assert tool is not None
    text = subprocess.run([tool, "-sass", str(cubin)], capture_output=True, text=True).stdout
    return [line for line in text.splitlines() if re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+\S", line)]


@needs_tools
def test_global_access_widths_are_counted_per_width(tmp_path: Path) -> None:
    facts, _ = _facts(tmp_path, WIDTHS_KERNEL, "widths")
    assert facts.global_loads == {8: 1, 16: 1, 32: 1, 64: 1, 128: 1}
    assert facts.global_stores == {8: 1, 16: 1, 32: 1, 64: 1, 128: 1}
    assert facts.hot_loop is None


@needs_tools
def test_a_forced_spill_shows_as_spill_bytes_and_local_memory(tmp_path: Path) -> None:
    facts, report = _facts(tmp_path, SPILL_KERNEL, "spill", "-maxrregcount=24")
    stores, loads = (
        int(v)
        for v in re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report).groups()
    )
    assert stores > 0 and loads > 0
    assert (facts.resources.spill_stores, facts.resources.spill_loads) == (stores, loads)
    assert facts.resources.registers <= 24
    assert facts.local_stores > 0 and facts.local_loads > 0
    assert facts.resources.stack > 0  # the spill slots live in the stack frame
    unforced, _ = _facts(tmp_path, SPILL_KERNEL, "nospill")
    assert (unforced.spills, unforced.local_loads, unforced.local_stores) == (0, 0, 0)


# -- the generated code ---------------------------------------------------------------------

_BUILT: dict[tuple[str, str], Any] = {}


def generated(name: str, arch: str = "sm_80") -> Any:
    """`KernelFacts` of the generated kernel ``name`` (one build per name and arch)."""
    import tempfile

    import tl_jit

    key = (name, arch)
    if key not in _BUILT:
        func, _out_idx, tiles = PROGRAMS[name]()
        sources = tl_jit.lower(
            func, target={"kind": "cuda", "arch": arch}, execution_backend="source"
        )
        [cu] = [f for f in sources.files if f.endswith(".cu")]
        text = sources.files[cu]
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "main.cu"
            path.write_bytes(text if isinstance(text, bytes) else text.encode())
            cubin, report = sass_facts.compile_cubin(path, Path(scratch) / "main.cubin", arch)
            [facts] = sass_facts.cubin_facts(cubin, report, tiles)
        _BUILT[key] = facts
    return _BUILT[key]


PROGRAMS = {
    "gemm": gpu_programs.gemm_program,
    "flash_attention": lambda: gpu_programs.attention_program(dim=64),
    "flash_attention_2_stages": lambda: gpu_programs.attention_program(dim=64, num_stages=2),
    "softmax": gpu_programs.softmax_program,
    "rms_norm": gpu_programs.rms_norm_program,
}


@needs_tools
@pytest.mark.parametrize(
    ("name", "arch"),
    [
        ("gemm", "sm_80"),
        ("flash_attention", "sm_80"),
        ("gemm", "sm_90"),
        ("flash_attention", "sm_90"),
    ],
)
def test_gemm_and_flash_attention_run_on_tensor_cores(name: str, arch: str) -> None:
    facts = generated(name, arch)
    assert facts.tensor_core > 0, f"{name} ({arch}): no tensor-core instruction in its SASS"


@needs_tools
@pytest.mark.parametrize("name", ["gemm", "flash_attention_2_stages"])
def test_pipelined_loops_with_stages_use_async_copies(name: str) -> None:
    facts = generated(name)
    assert facts.async_copies > 0, f"{name}: num_stages > 1 but no cp.async (LDGSTS)"


@needs_tools
@pytest.mark.parametrize("name", ["gemm", "flash_attention"])
def test_gemm_and_flash_attention_neither_spill_nor_use_local_memory(name: str) -> None:
    facts = generated(name)
    local = (facts.spills, facts.resources.stack, facts.local_loads, facts.local_stores)
    assert local == (0, 0, 0, 0), (
        f"{name}: spill bytes, stack frame, LDL, STL = {local} (expected none)"
    )


@needs_tools
@pytest.mark.parametrize("name", ["softmax", "rms_norm"])
def test_row_kernels_load_and_store_128_bits_at_a_time(name: str) -> None:
    facts = generated(name)
    assert set(facts.global_loads) == {128}, f"{name}: global loads by width {facts.global_loads}"
    assert set(facts.global_stores) == {128}, (
        f"{name}: global stores by width {facts.global_stores}"
    )


#: TileLang 0.1.15's hot loops on sm_80 (instructions per K tile / KV tile per warp, as
#: benchmarks/gpu_sass.py counts them; its flash attention built with --use_fast_math).
TILELANG_HOT_LOOPS = {"gemm": 143, "flash_attention": 364}


@needs_tools
@pytest.mark.parametrize("name", sorted(TILELANG_HOT_LOOPS))
def test_hot_loops_stay_within_1_3x_of_tilelang(name: str) -> None:
    facts = generated(name)
    assert facts.hot_loop is not None, f"{name}: no loop found in its SASS"
    bound = 1.3 * TILELANG_HOT_LOOPS[name]
    assert facts.hot_loop.per_tile <= bound, (
        f"{name}: {facts.hot_loop.describe()} instructions per tile per warp, "
        f"above 1.3x TileLang's {TILELANG_HOT_LOOPS[name]}"
    )
