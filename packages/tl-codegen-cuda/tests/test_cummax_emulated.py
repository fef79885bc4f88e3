"""T.cummax lowered for CUDA and run under the CPU emulation: the cooperative (shared
tile) and per-thread (fragment) scan paths, forward and reverse."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from tvm.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T
from tl_backend_api.artifact import kernel_module
from tl_codegen_cuda.backend import BACKEND
from tl_codegen_cuda.codegen import CudaDeviceCodegen

needs_gxx = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


def _kernel(dim: int, reverse: bool, fragment: bool):  # type: ignore[no-untyped-def]
    @T.prim_func
    def main(A: T.Tensor((16, 24), "float32"), B: T.Tensor((16, 24), "float32")):
        with T.Kernel(1, threads=64) as _bx:
            tile = T.alloc_shared((16, 24), "float32")
            T.copy(A, tile)
            if fragment:
                frag = T.alloc_fragment((16, 24), "float32")
                T.copy(tile, frag)
                T.cummax(frag, dim=dim, reverse=reverse)
                T.copy(frag, B)
            else:
                T.cummax(tile, dim=dim, reverse=reverse)
                T.copy(tile, B)

    return main


@needs_gxx
@pytest.mark.parametrize(("dim", "reverse"), [(0, False), (1, True)])
@pytest.mark.parametrize("fragment", [False, True])
def test_cummax_runs_correctly_under_emulation(dim: int, reverse: bool, fragment: bool) -> None:
    target = Target({"kind": "cuda", "arch": "sm_80"}, host=Target("llvm"))
    mod = BACKEND.pipelines["cuda"].run(
        kernel_module(_kernel(dim, reverse, fragment), "scan"), target
    )
    sources = CudaDeviceCodegen().emit_source(mod, target)
    text = sources.files["scan.cu"]
    assert "tl.cummax" not in text
    library = emu.compile_emulation(text, sources.launches[0], emu.scratch_dir())
    a = np.random.default_rng(dim).standard_normal((16, 24)).astype(np.float32)
    a[:, 0] = -np.inf
    b = np.zeros_like(a)
    emu.run_emulated(library, sources.launches[0], (1,), (64,), {"A": a, "B": b})
    if reverse:
        expected = np.flip(np.maximum.accumulate(np.flip(a, dim), axis=dim), dim)
    else:
        expected = np.maximum.accumulate(a, axis=dim)
    np.testing.assert_array_equal(b, expected)
