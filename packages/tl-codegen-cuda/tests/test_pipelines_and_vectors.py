"""cp.async rings, 128-bit copies and swizzled shared tiles in the CUDA the backend
generates: what nvcc makes of them (SASS, read with cuobjdump; skipped without the
tools) and their numbers under the CPU emulation (deferred cp.async groups)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import cuda_emulation as emu
import sass_facts

import tl_ir.language as T
from integration_tests.kernels.rms_norm import rms_norm
from integration_tests.kernels.softmax import softmax
from tl_ir.layout import make_linear_layout

CUOBJDUMP = sass_facts.find_tool("cuobjdump")
NVDISASM = sass_facts.find_tool("nvdisasm")
needs_sass = pytest.mark.skipif(
    shutil.which("nvcc") is None or CUOBJDUMP is None or NVDISASM is None,
    reason="needs nvcc, cuobjdump and nvdisasm (pip: nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm)",
)
needs_gxx = pytest.mark.skipif(not emu.gxx_available(), reason="needs g++ for the emulation")


def example_gemm(
    M: int = 4096,
    N: int = 4096,
    K: int = 4096,
    block_M: int = 128,
    block_N: int = 128,
    block_K: int = 32,
    num_stages: int = 3,
    dtype: str = "float16",
    accum: str = "float32",
    linear: bool = False,
    **schedule: Any,
) -> Any:
    """TileLang's examples/gemm/example_gemm.py (128 threads); ``linear``: the operand
    tiles annotated row-major (no swizzle)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum)
            if linear:
                T.annotate_layout(
                    {A_shared: make_linear_layout(A_shared), B_shared: make_linear_layout(B_shared)}
                )
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages, **schedule):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def sass_opcodes(func: Any, tmp_path: Path, arch: str = "sm_80") -> Counter[str]:
    """Opcode counts of the cubin nvcc builds from ``func``'s CUDA."""
    source = emu.lower_for_cuda(func, arch=arch).files["main.cu"]
    cu, cubin = tmp_path / "k.cu", tmp_path / "k.cubin"
    cu.write_text(source)
    subprocess.run(
        ["nvcc", "-cubin", f"-arch={arch}", "-O3", "-w", "-o", str(cubin), str(cu)],
        check=True,
        capture_output=True,
    )
    assert CUOBJDUMP is not None and NVDISASM is not None
    env = {**os.environ, "PATH": f"{Path(NVDISASM).parent}{os.pathsep}{os.environ['PATH']}"}
    sass = subprocess.run(
        [CUOBJDUMP, "-sass", str(cubin)], check=True, capture_output=True, text=True, env=env
    ).stdout
    return Counter(re.findall(r"^\s+/\*[0-9a-f]+\*/\s+([A-Z][A-Z0-9_.]*)", sass, re.M))


def count(opcodes: Counter[str], prefix: str) -> int:
    return sum(n for op, n in opcodes.items() if op.startswith(prefix))


@needs_sass
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_the_example_gemm_loads_through_a_num_stages_deep_cp_async_ring(
    stages: int, tmp_path: Path
) -> None:
    opcodes = sass_opcodes(example_gemm(num_stages=stages), tmp_path)
    # Per stage each thread copies 4 16-byte vectors of A (128x32 fp16) and 4 of B.
    if stages == 1:
        assert count(opcodes, "LDGSTS") == 0  # in order: synchronous 128-bit loads
        assert count(opcodes, "LDG.E.128") == 8
        return
    assert count(opcodes, "LDGSTS.E.BYPASS.128") == stages * 8  # k-1 prologue + 1 refill
    assert count(opcodes, "LDGDEPBAR") == stages  # one commit per stage
    assert count(opcodes, "DEPBAR") >= 1  # the waits
    assert count(opcodes, "LDG.E") == 0  # every global load is async
    assert count(opcodes, "BAR.SYNC") == 1  # the ring's one barrier per K step


@needs_sass
@pytest.mark.parametrize(
    ("name", "func"),
    [("softmax", lambda: softmax(8192, 8192, 1)), ("rms_norm", lambda: rms_norm(8192, 8192, 1))],
)
def test_row_kernels_load_and_store_128_bits_at_a_time(
    name: str, func: Any, tmp_path: Path
) -> None:
    opcodes = sass_opcodes(func(), tmp_path)
    wide_loads = count(opcodes, "LDG.E.128")
    scalar_loads = sum(
        n for op, n in opcodes.items() if op in ("LDG.E", "LDG.E.CONSTANT", "LDG.E.64")
    )
    # 8192 fp32 per row over 128 threads: 16 float4 per thread each way.
    assert wide_loads >= 16 and scalar_loads == 0, opcodes
    assert opcodes["STG.E.128"] == 16 and count(opcodes, "STG") == 16, opcodes
    assert count(opcodes, "LDL") == count(opcodes, "STL") == 0


# ---- numbers under the emulation ------------------------------------------------------

CASES = [
    # (M, N, K, block_M, block_N, block_K): aligned; partial M/N/K tiles with 16-byte
    # vectors; K rows of 8 bytes (K=36) and of 4 bytes (K=34) only.
    (128, 128, 128, 64, 64, 32),
    (200, 136, 72, 64, 64, 32),
    (96, 80, 36, 32, 32, 16),
    (96, 80, 34, 32, 32, 16),
]


def _run_gemm(func: Any, M: int, N: int, K: int, dtype: str, seed: int) -> float:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    arrays = {"A": a, "B": b, "C": np.zeros((M, N), dtype)}
    emu.emulate(func, arrays)
    reference = a.astype(np.float64) @ b.astype(np.float64)
    return float(np.abs(arrays["C"].astype(np.float64) - reference).max())


@needs_gxx
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c)))
def test_pipelined_gemm_matches_numpy_swizzled(stages: int, case: tuple[int, ...]) -> None:
    M, N, K, bm, bn, bk = case
    func = example_gemm(M, N, K, bm, bn, bk, num_stages=stages)
    assert _run_gemm(func, M, N, K, "float16", stages) < 0.05


@needs_gxx
@pytest.mark.parametrize("stages", [1, 3])
@pytest.mark.parametrize(
    ("dtype", "linear"), [("float16", True), ("float32", False)], ids=["f16-linear", "f32"]
)
def test_pipelined_gemm_matches_numpy_without_swizzle(
    stages: int, dtype: str, linear: bool
) -> None:
    M, N, K, bm, bn, bk = 200, 136, 72, 64, 64, 32
    func = example_gemm(M, N, K, bm, bn, bk, num_stages=stages, dtype=dtype, linear=linear)
    source = emu.lower_for_cuda(func).files["main.cu"]
    kernel = source.split('extern "C"')[-1]  # the header defines every helper
    assert "^" not in kernel  # no XOR: row-major tiles
    assert ("tl_cp_async_16" in kernel) == (stages > 1)
    assert _run_gemm(func, M, N, K, dtype, stages) < (0.05 if dtype == "float16" else 1e-3)


@needs_gxx
@pytest.mark.parametrize(
    ("K", "stages", "schedule"),
    [
        (96, 0, {"order": [1, 2, 0], "stage": [0, 0, 2]}),  # refill after the gemm
        (96, 3, {"stage": [0, 2, 2]}),  # B's copy in order, A's in the ring
        (32, 4, {}),  # one K tile, a 4-deep ring: prologue stages past the end
        (64, 4, {}),  # two K tiles
    ],
)
def test_pipelined_gemm_schedules_and_short_loops_match_numpy(
    K: int, stages: int, schedule: dict[str, Any]
) -> None:
    func = example_gemm(96, 80, K, 32, 32, 32, num_stages=stages, **schedule)
    assert _run_gemm(func, 96, 80, K, "float16", K) < 0.05


@needs_gxx
@pytest.mark.parametrize("name", ["softmax", "rms_norm"])
def test_vectorized_row_kernels_match_numpy_on_partial_blocks(name: str) -> None:
    rng = np.random.default_rng(7)
    M, N = 37, 128
    x = rng.standard_normal((M, N)).astype(np.float32)
    if name == "softmax":
        arrays = {"X": x, "Y": np.zeros_like(x)}
        emu.emulate(softmax(M, N, 8), arrays)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        expected = e / e.sum(axis=1, keepdims=True)
    else:
        w = rng.standard_normal(N).astype(np.float32)
        arrays = {"X": x, "W": w, "Y": np.zeros_like(x)}
        emu.emulate(rms_norm(M, N, 8), arrays)
        expected = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(arrays["Y"], expected, rtol=1e-4, atol=1e-5)
