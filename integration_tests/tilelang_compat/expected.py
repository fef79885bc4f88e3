"""Failures the corpus expects today (written by survey.py; do not edit by hand)."""

from __future__ import annotations

import tl_backend_api
import tl_ir

EXPECTED_FAILURES: dict[tuple[str, str], tuple[type[BaseException], str]] = {
    ("language_parallel.parallel_elementwise_dynamic", "c"): (
        tl_ir.KernelTypeError,
        "language_parallel.py:34: T.Parallel(*extents): extent 0 must be a compile-time constant (the loop is distributed over a tile), got the run-time value span; use ",
    ),
    ("language_parallel.parallel_elementwise_dynamic", "llvm"): (
        tl_ir.KernelTypeError,
        "language_parallel.py:34: T.Parallel(*extents): extent 0 must be a compile-time constant (the loop is distributed over a tile), got the run-time value span; use ",
    ),
    ("language_parallel.parallel_elementwise_dynamic", "cuda-nvcc"): (
        tl_ir.KernelTypeError,
        "language_parallel.py:34: T.Parallel(*extents): extent 0 must be a compile-time constant (the loop is distributed over a tile), got the run-time value span; use ",
    ),
    ("language_alloc.alloc_global", "c"): (
        tl_backend_api.ToolchainError,
        "the kernel library kernel.so calls TVMBackendAllocWorkspace, TVMBackendFreeWorkspace, which nothing defines (not the kernel, tvm-ffi, libc, libm or OpenMP): is ",
    ),
    ("language_alloc.alloc_global", "cuda-nvcc"): (
        tl_backend_api.ToolchainError,
        "device parameter C_ptr: expected a data pointer of a kernel buffer parameter (['A', 'B'])",
    ),
    ("language_atomic.atomic_addx2_program", "c"): (
        tl_ir.UnsupportedError,
        "language_atomic.py:46: T.atomic_addx2: this atomic is not supported yet (T.atomic_add/max/min are)",
    ),
    ("language_atomic.atomic_addx2_program", "llvm"): (
        tl_ir.UnsupportedError,
        "language_atomic.py:46: T.atomic_addx2: this atomic is not supported yet (T.atomic_add/max/min are)",
    ),
    ("language_atomic.atomic_addx2_program", "cuda-nvcc"): (
        tl_ir.UnsupportedError,
        "language_atomic.py:46: T.atomic_addx2: this atomic is not supported yet (T.atomic_add/max/min are)",
    ),
    ("language_reshape.reshape_fragment_test", "cuda-nvcc"): (
        tl_backend_api.ToolchainError,
        "TVM device codegen for cuda failed: Check failed: (it != flat_map_.end()) is false: Buffer A_local is used before its definition (AllocBuffer/DeclBuffer/PrimFun",
    ),
    ("language_reshape.reduce_after_reshape_test", "cuda-nvcc"): (
        tl_backend_api.ToolchainError,
        "TVM device codegen for cuda failed: Check failed: (it != flat_map_.end()) is false: Buffer A_local is used before its definition (AllocBuffer/DeclBuffer/PrimFun",
    ),
    ("language_chain_equal.chain_equal", "c"): (
        tl_ir.KernelSyntaxError,
        "language_chain_equal.py:21: cannot parse this kernel statement: Consequential assignments like 'a = b = c' are not supported.",
    ),
    ("language_chain_equal.chain_equal", "llvm"): (
        tl_ir.KernelSyntaxError,
        "language_chain_equal.py:21: cannot parse this kernel statement: Consequential assignments like 'a = b = c' are not supported.",
    ),
    ("language_chain_equal.chain_equal", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "language_chain_equal.py:21: cannot parse this kernel statement: Consequential assignments like 'a = b = c' are not supported.",
    ),
    ("example_fusedmoe.moe_forward_tilelang_shared", "cuda-nvcc"): (
        tl_ir.UnsupportedError,
        "this prim_func has 2 T.Kernel launches that run one after the other; this target's lowering supports one T.Kernel per prim_func (split the kernels into separate",
    ),
}
