"""``T.alloc_global`` on the CPU targets: the workspace is host memory the kernel library
gets without libtvm_runtime (``c``: allocators defined in the library itself; ``llvm``:
the runtime's context helper), and the kernel computes what numpy does."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_ir.language as T
import tl_jit
from tl_codegen_cpu.c_patches import insert_workspace_allocator


def staged_through_workspace(n: int, block: int) -> Any:
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        W = T.alloc_global((n,), "float32")
        with T.Kernel(n // block, threads=block) as bx:
            for i in T.Parallel(block):
                W[bx * block + i] = A[bx * block + i] * 3.0
            for i in T.Parallel(block):
                B[bx * block + i] = W[bx * block + i] + 1.0

    return main


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_a_global_workspace_kernel_runs_and_matches_numpy(target: str) -> None:
    kernel = tl_jit.compile(staged_through_workspace(256, 64), out_idx=[1], target=target)
    a = np.random.default_rng(0).standard_normal(256).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a * 3 + 1, rtol=1e-6)


def test_workspace_calls_are_routed_to_the_librarys_own_allocators() -> None:
    source = (
        '#include "tvm/runtime/c_backend_api.h"\n'
        "int f(void) {\n"
        "  float* W = (float*)TVMBackendAllocWorkspace(1, 0, (uint64_t)64ULL, 2, 32);\n"
        "  return TVMBackendFreeWorkspace(1, 0, W);\n}\n"
    )
    patched = insert_workspace_allocator(source)
    assert "TVMBackend" not in patched.split("static int tl_c_free_workspace")[1]
    assert "tl_c_alloc_workspace(1, 0, (uint64_t)64ULL, 2, 32)" in patched
    assert patched.index("static void* tl_c_alloc_workspace") < patched.index("int f(void)")
    assert insert_workspace_allocator("int g(void) { return 0; }\n") == (
        "int g(void) { return 0; }\n"
    )
