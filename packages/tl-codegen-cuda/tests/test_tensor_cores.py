"""T.gemm on tensor cores (mma.sync + ldmatrix) and the fragments around it (issue 19,
points 1 and 4): the CUDA fragment maps against the PTX ISA's tables, which GEMMs the
lowering puts on mma per dtype and arch, the layouts flash attention gets, the SASS
nvcc makes of TileLang's example GEMM and flash attention, and flash attention's
numbers under the CPU emulation."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tvm.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import cuda_emulation as emu
import emulated_programs as programs
import ptx_fragment_tables as ptx
import sass_facts

import tl_ir.language as T
from tl_codegen_cuda.tensor_cores import CUDA_MATRIX_INSTRUCTIONS
from tl_codegen_cuda.traits import CUDA_TRAITS
from tl_passes.gpu import infer_fragment_layouts
from tl_passes.gpu.launches import kernel_functions


def _instruction(function: str) -> Any:
    (found,) = [i for i in CUDA_MATRIX_INSTRUCTIONS if i.function == function]
    return found


@pytest.mark.parametrize(
    ("function", "operand", "table"),
    [
        ("tl_mma_m16n8k16_f32_f16_f16", "a", ptx.MMA_K16_A),
        ("tl_mma_m16n8k16_f32_f16_f16", "b", ptx.MMA_K16_B),
        ("tl_mma_m16n8k16_f32_f16_f16", "c", ptx.MMA_C),
        ("tl_mma_m16n8k16_f16_f16_f16", "c", ptx.MMA_C),
        ("tl_mma_m16n8k32_s32_s8_s8", "a", ptx.MMA_K32_A),
        ("tl_mma_m16n8k32_s32_s8_s8", "b", ptx.MMA_K32_B),
        ("tl_mma_m16n8k32_f32_e4m3_e4m3", "a", ptx.MMA_K32_A),
    ],
)
def test_fragment_maps_match_the_ptx_tables(function: str, operand: str, table: list[Any]) -> None:
    fragment = getattr(_instruction(function), f"{operand}_map")
    for lane, element, row, col in table:
        assert fragment(lane, element) == (row, col), (lane, element)


def _gemm(dtype: str, acc: str, trans_b: bool = False) -> Any:
    return programs.gemm(128, 128, 64, 64, 64, 32, dtype, acc, trans_B=trans_b)


def _layouts(func: Any, arch: str) -> dict[str, str]:
    target = Target({"kind": "cuda", "arch": arch})
    described: dict[str, str] = {}
    for _, kernel in kernel_functions(func):
        layouts = infer_fragment_layouts(kernel, 128, CUDA_TRAITS, target)
        described.update((name, layout.kind) for name, layout in layouts.items())
    return described


@pytest.mark.parametrize(
    ("dtype", "acc", "arch", "function"),
    [
        ("float16", "float32", "sm_80", "tl_mma_m16n8k16_f32_f16_f16"),
        ("float16", "float16", "sm_80", "tl_mma_m16n8k16_f16_f16_f16"),
        ("bfloat16", "float32", "sm_90", "tl_mma_m16n8k16_f32_bf16_bf16"),
        ("int8", "int32", "sm_80", "tl_mma_m16n8k32_s32_s8_s8"),
        ("float8_e4m3fn", "float32", "sm_89", "tl_mma_m16n8k32_f32_e4m3_e4m3"),
        ("float8_e5m2", "float32", "sm_90", "tl_mma_m16n8k32_f32_e5m2_e5m2"),
        ("float16", "float32", "sm_75", None),
        ("float8_e4m3fn", "float32", "sm_80", None),
        ("float32", "float32", "sm_90", None),
        ("float64", "float64", "sm_90", None),
    ],
)
def test_lowering_picks_mma_where_the_arch_has_it(
    dtype: str, acc: str, arch: str, function: str | None
) -> None:
    if function is None:
        assert _layouts(_gemm(dtype, acc), arch)["C_local"] == "partitioned"
        if not dtype.startswith("float8"):  # fp8 tiles on sm_80 do not lower either way
            source = emu.lower_for_cuda(_gemm(dtype, acc), arch=arch).files["main.cu"]
            assert "tl_mma_" not in source.split('extern "C" __global__')[-1]
    else:
        source = emu.lower_for_cuda(_gemm(dtype, acc), arch=arch).files["main.cu"]
        calls = set(re.findall(r"\b(tl_mma_\w+)\(\(", source))
        assert calls == {function}
        assert "tl_ldmatrix_x4" in source
        assert _layouts(_gemm(dtype, acc), arch)["C_local"] == "mma"


def test_8bit_b_not_contiguous_along_k_is_loaded_element_by_element() -> None:
    nn = emu.lower_for_cuda(_gemm("int8", "int32")).files["main.cu"]
    nt = emu.lower_for_cuda(_gemm("int8", "int32", trans_b=True)).files["main.cu"]
    # ldmatrix.trans moves 16-bit elements only: an 8-bit B in [k, n] takes plain loads.
    assert "tl_ldmatrix_x4_trans((" not in nn and "tl_ldmatrix_x4((" in nn
    assert nt.count("tl_ldmatrix_x4((") > nn.count("tl_ldmatrix_x4((")


def test_flash_attention_fragments_are_not_replicated() -> None:
    func = programs.flash_attention_bhsd(1, 1, 128, 128, 64, True)
    kinds = _layouts(func, "sm_80")
    for name in ("acc_s", "acc_s_cast", "acc_o"):
        assert kinds[name] == "mma", name
    for name in ("scores_max", "scores_max_prev", "scores_scale", "scores_sum", "logsum"):
        assert kinds[name] == "rows", name
    source = emu.lower_for_cuda(func).files["main.cu"]
    # P (acc_s_cast) feeds the second mma straight from its registers.
    assert re.search(
        r"tl_mma_m16n8k16_f32_f16_f16\(\(&\(acc_o_regs\w*\[\d+\]\)\), \(&\(acc_s_cast", source
    )


def test_targets_without_matrix_instructions_keep_the_fma_path() -> None:
    from tl_passes.gpu import PORTABLE_TRAITS

    func = programs.flash_attention_bhsd(1, 1, 128, 128, 64, False)
    (kernel,) = [k for _, k in kernel_functions(func)]
    layouts = infer_fragment_layouts(kernel, 128, PORTABLE_TRAITS, None)
    assert {layouts[n].kind for n in ("acc_s", "acc_o", "scores_max")} <= {
        "partitioned",
        "replicated",
    }


# ---- SASS (nvcc, no GPU) -------------------------------------------------------------
needs_nvcc = pytest.mark.skipif(
    shutil.which("nvcc") is None or sass_facts.find_tool("cuobjdump") is None,
    reason="nvcc or cuobjdump missing",
)


def _sass_facts(func: Any, tmp_path: Path, arch: str = "sm_80") -> dict[str, Any]:
    source = emu.lower_for_cuda(func, arch=arch).files["main.cu"]
    cu, cubin = tmp_path / "k.cu", tmp_path / "k.cubin"
    cu.write_text(source)
    built = subprocess.run(
        ["nvcc", "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", "-o", str(cubin), str(cu)],
        capture_output=True,
        text=True,
        check=True,
    )
    cuobjdump = sass_facts.find_tool("cuobjdump")
    assert cuobjdump is not None
    sass = subprocess.run(
        [cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True
    ).stdout
    instructions = [
        (int(m.group(1), 16), m.group(2))
        for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", sass)
    ]
    hot = 0
    for address, text in instructions:
        branch = re.search(r"BRA\s+(0x[0-9a-f]+)", text)
        if branch and int(branch.group(1), 16) < address:
            body = [t for a, t in instructions if int(branch.group(1), 16) <= a <= address]
            if any("MMA" in t for t in body):
                hot = max(hot, len(body))
    stack = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores", built.stderr)
    assert stack is not None, built.stderr
    return {
        "hmma": sum("HMMA" in t for _, t in instructions),
        "ldsm": sum("LDSM" in t for _, t in instructions),
        "local": sum(re.search(r"\b(LDL|STL)\b", t) is not None for _, t in instructions),
        "stack": int(stack.group(1)),
        "spills": int(stack.group(2)),
        "hot_loop": hot,
    }


@needs_nvcc
def test_example_gemm_sass_has_tensor_cores_and_no_local_memory(tmp_path: Path) -> None:
    # TileLang's example GEMM: fp16 in, fp32 accumulate, 4096^3, 128x128x32, 128 threads.
    func = programs.gemm(4096, 4096, 4096, 128, 128, 32, "float16", "float32", num_stages=3)
    facts = _sass_facts(func, tmp_path)
    assert facts["hmma"] >= 64 and facts["ldsm"] >= 16
    assert facts["stack"] == 0 and facts["spills"] == 0 and facts["local"] == 0
    # Issue 19's bound: at most 1.3 x TileLang's 143 instructions per K tile per warp.
    assert 0 < facts["hot_loop"] <= 1.3 * 143


@needs_nvcc
def test_flash_attention_sass_has_tensor_cores_and_no_local_memory(tmp_path: Path) -> None:
    func = programs.flash_attention_bhsd(1, 1, 256, 256, 64, False)
    facts = _sass_facts(func, tmp_path)
    assert facts["hmma"] >= 64 and facts["ldsm"] >= 16
    assert facts["stack"] == 0 and facts["spills"] == 0 and facts["local"] == 0
    assert 0 < facts["hot_loop"] <= 1.3 * 364


# ---- numbers under the CPU emulation --------------------------------------------------
needs_gxx = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


@needs_gxx
@pytest.mark.parametrize("is_causal", [False, True])
def test_flash_attention_forward_on_mma_matches_numpy(is_causal: bool) -> None:
    batch, heads, seq_q, seq_kv, dim = 1, 2, 128, 192, 64
    rng = np.random.default_rng(3)
    q = rng.standard_normal((batch, heads, seq_q, dim)).astype(np.float16)
    k = rng.standard_normal((batch, heads, seq_kv, dim)).astype(np.float16)
    v = rng.standard_normal((batch, heads, seq_kv, dim)).astype(np.float16)
    arrays = {"Q": q, "K": k, "V": v, "Output": np.zeros_like(q)}
    func = programs.flash_attention_bhsd(batch, heads, seq_q, seq_kv, dim, is_causal)
    sources = emu.emulate(func, arrays)
    assert "tl_mma_m16n8k16_f32_f16_f16((" in sources.files["main.cu"]
    expected = programs.attention_reference(q, k, v, is_causal)
    np.testing.assert_allclose(arrays["Output"].astype(np.float64), expected, atol=2e-3)


def _row_softmax_gemm(policy: Any, threads: int) -> Any:
    """C = A @ B on mma, then each row scaled by its max over the row (T.reduce_max
    along dim 1 into a ROWS fragment) and written out: with Square over 4 warps the
    warps split N, so the row max crosses warps through shared memory."""

    @T.prim_func
    def main(
        A: T.Tensor((64, 32), "float16"),
        B: T.Tensor((32, 64), "float16"),
        C: T.Tensor((64, 64), "float32"),
        R: T.Tensor((64,), "float32"),
    ):
        with T.Kernel(1, threads=threads):
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            row_max = T.alloc_fragment((64,), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, acc, clear_accum=True, policy=policy)
            T.reduce_absmax(acc, row_max, dim=1)
            for i, j in T.Parallel(64, 64):
                acc[i, j] = acc[i, j] / row_max[i]
            T.copy(acc, C)
            T.copy(row_max, R)

    return main


@needs_gxx
@pytest.mark.parametrize(
    ("policy", "threads"),
    [
        (T.GemmWarpPolicy.Square, 128),
        (T.GemmWarpPolicy.FullCol, 128),
        (T.GemmWarpPolicy.FullRow, 64),
    ],
)
def test_row_reduction_of_an_accumulator_matches_numpy(policy: Any, threads: int) -> None:
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b = rng.standard_normal((32, 64)).astype(np.float16)
    arrays = {"A": a, "B": b, "C": np.zeros((64, 64), np.float32), "R": np.zeros(64, np.float32)}
    func = _row_softmax_gemm(policy, threads)
    kinds = _layouts_for(func, threads)
    assert (kinds["acc"], kinds["row_max"]) == ("mma", "rows")
    emu.emulate(func, arrays)
    product = a.astype(np.float64) @ b.astype(np.float64)
    row_max = np.abs(product).max(axis=1)
    np.testing.assert_allclose(arrays["R"], row_max, rtol=1e-5)
    np.testing.assert_allclose(arrays["C"], product / row_max[:, None], rtol=1e-5, atol=1e-6)


def _layouts_for(func: Any, threads: int) -> dict[str, str]:
    target = Target({"kind": "cuda", "arch": "sm_80"})
    (kernel,) = [k for _, k in kernel_functions(func)]
    return {
        n: lay.kind
        for n, lay in infer_fragment_layouts(kernel, threads, CUDA_TRAITS, target).items()
    }


@needs_gxx
@pytest.mark.parametrize("is_causal", [False, True])
def test_grouped_query_flash_attention_on_mma_matches_numpy(is_causal: bool) -> None:
    batch, seq, heads, dim, groups = 1, 128, 4, 64, 2
    rng = np.random.default_rng(4)
    q = rng.standard_normal((batch, seq, heads, dim)).astype(np.float16)
    k = rng.standard_normal((batch, seq, heads // groups, dim)).astype(np.float16)
    v = rng.standard_normal((batch, seq, heads // groups, dim)).astype(np.float16)
    arrays = {"Q": q, "K": k, "V": v, "Output": np.zeros_like(q)}
    func = programs.flash_attention_gqa_bshd(batch, heads, seq, dim, is_causal, groups)
    sources = emu.emulate(func, arrays)
    assert "tl_mma_m16n8k16_f32_f16_f16((" in sources.files["main.cu"]

    def heads_first(x: np.ndarray) -> np.ndarray:
        return np.repeat(x.transpose(0, 2, 1, 3), heads // x.shape[2], axis=1)

    expected = programs.attention_reference(
        heads_first(q), heads_first(k), heads_first(v), is_causal
    )
    np.testing.assert_allclose(
        arrays["Output"].astype(np.float64), expected.transpose(0, 2, 1, 3), atol=2e-3
    )


@needs_gxx
def test_a_fragment_that_cannot_feed_registers_falls_back_correctly() -> None:
    # Square splits the second gemm's N over warps, so P cannot be its register A: P is
    # replicated, that gemm is an FMA loop, the first stays on mma. Same numbers.
    @T.prim_func
    def main(
        A: T.Tensor((64, 32), "float16"),
        B: T.Tensor((32, 64), "float16"),
        V: T.Tensor((64, 64), "float16"),
        Out: T.Tensor((64, 64), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            V_s = T.alloc_shared((64, 64), "float16")
            s = T.alloc_fragment((64, 64), "float32")
            p = T.alloc_fragment((64, 64), "float16")
            o = T.alloc_fragment((64, 64), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.copy(V, V_s)
            T.gemm(A_s, B_s, s, clear_accum=True)
            T.copy(s, p)
            T.gemm(p, V_s, o, clear_accum=True)
            T.copy(o, Out)

    kinds = _layouts_for(main, 128)
    assert (kinds["s"], kinds["p"]) == ("mma", "replicated")
    rng = np.random.default_rng(6)
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b = rng.standard_normal((32, 64)).astype(np.float16)
    v = rng.standard_normal((64, 64)).astype(np.float16)
    arrays = {"A": a, "B": b, "V": v, "Out": np.zeros((64, 64), np.float32)}
    emu.emulate(main, arrays)
    p16 = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    np.testing.assert_allclose(arrays["Out"], p16.astype(np.float64) @ v, rtol=1e-3, atol=1e-2)
