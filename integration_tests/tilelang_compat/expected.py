"""Failures the corpus expects today (written by survey.py; do not edit by hand)."""

from __future__ import annotations

import tl_ir

EXPECTED_FAILURES: dict[tuple[str, str], tuple[type[BaseException], str]] = {
    ("kernel_gemm_batched.matmul_batched", "c"): (
        tl_ir.KernelSyntaxError,
        "kernel_gemm_batched.py:38: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'disable_warp_group_reg_alloc'",
    ),
    ("kernel_gemm_batched.matmul_batched", "llvm"): (
        tl_ir.KernelSyntaxError,
        "kernel_gemm_batched.py:38: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'disable_warp_group_reg_alloc'",
    ),
    ("kernel_gemm_batched.matmul_batched", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "kernel_gemm_batched.py:38: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'disable_warp_group_reg_alloc'",
    ),
    ("kernel_gemv_simt.gemv_simt", "c"): (
        tl_ir.UnsupportedError,
        "cpu-lower-launch (main): on CPU targets a kernel that uses its thread index (T.get_thread_binding / threadIdx) cannot also contain tile ops (T.copy, T.gemm, T.r",
    ),
    ("kernel_gemv_simt.gemv_simt", "llvm"): (
        tl_ir.UnsupportedError,
        "cpu-lower-launch (main): on CPU targets a kernel that uses its thread index (T.get_thread_binding / threadIdx) cannot also contain tile ops (T.copy, T.gemm, T.r",
    ),
    ("language_pipeline.matmul-order-stage", "c"): (
        tl_ir.UnsupportedError,
        "language_pipeline.py:40: T.Pipelined(order=...) is not supported",
    ),
    ("language_pipeline.matmul-order-stage", "llvm"): (
        tl_ir.UnsupportedError,
        "language_pipeline.py:40: T.Pipelined(order=...) is not supported",
    ),
    ("language_pipeline.matmul-order-stage", "cuda-nvcc"): (
        tl_ir.UnsupportedError,
        "language_pipeline.py:40: T.Pipelined(order=...) is not supported",
    ),
    ("language_all_of.blocksparse_matmul_global", "c"): (
        tl_ir.KernelSyntaxError,
        "language_all_of.py:40: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'all_of'",
    ),
    ("language_all_of.blocksparse_matmul_global", "llvm"): (
        tl_ir.KernelSyntaxError,
        "language_all_of.py:40: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'all_of'",
    ),
    ("language_all_of.blocksparse_matmul_global", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "language_all_of.py:40: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'all_of'",
    ),
    ("language_scan.cummax_smem_test", "c"): (
        tl_ir.KernelSyntaxError,
        "language_scan.py:97: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'cummax'",
    ),
    ("language_scan.cummax_smem_test", "llvm"): (
        tl_ir.KernelSyntaxError,
        "language_scan.py:97: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'cummax'",
    ),
    ("language_scan.cummax_smem_test", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "language_scan.py:97: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'cummax'",
    ),
    ("language_scan.cummax_fragment_test", "c"): (
        tl_ir.KernelSyntaxError,
        "language_scan.py:115: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'cummax'",
    ),
    ("language_scan.cummax_fragment_test", "llvm"): (
        tl_ir.KernelSyntaxError,
        "language_scan.py:115: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'cummax'",
    ),
    ("language_scan.cummax_fragment_test", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "language_scan.py:115: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'cummax'",
    ),
    ("language_copy.tilelang_copy_oob_safe_value", "c"): (
        tl_ir.KernelSyntaxError,
        "language_copy.py:41: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'annotate_safe_value'",
    ),
    ("language_copy.tilelang_copy_oob_safe_value", "llvm"): (
        tl_ir.KernelSyntaxError,
        "language_copy.py:41: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'annotate_safe_value'",
    ),
    ("language_copy.tilelang_copy_oob_safe_value", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "language_copy.py:41: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'annotate_safe_value'",
    ),
    ("language_copy.tilelang_elementwise_copy_oob_safe_value", "c"): (
        tl_ir.KernelSyntaxError,
        "language_copy.py:57: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'annotate_safe_value'",
    ),
    ("language_copy.tilelang_elementwise_copy_oob_safe_value", "llvm"): (
        tl_ir.KernelSyntaxError,
        "language_copy.py:57: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'annotate_safe_value'",
    ),
    ("language_copy.tilelang_elementwise_copy_oob_safe_value", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "language_copy.py:57: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'annotate_safe_value'",
    ),
    ("language_mask_op.tilelang_copy_mask_parallel", "c"): (
        tl_ir.UnsupportedError,
        "cpu-lower-launch (main): on CPU targets a kernel that uses its thread index (T.get_thread_binding / threadIdx) cannot also contain tile ops (T.copy, T.gemm, T.r",
    ),
    ("language_mask_op.tilelang_copy_mask_parallel", "llvm"): (
        tl_ir.UnsupportedError,
        "cpu-lower-launch (main): on CPU targets a kernel that uses its thread index (T.get_thread_binding / threadIdx) cannot also contain tile ops (T.copy, T.gemm, T.r",
    ),
    ("language_mask_op.tilelang_copy_mask_copy", "c"): (
        tl_ir.UnsupportedError,
        "cpu-lower-launch (main): on CPU targets a kernel that uses its thread index (T.get_thread_binding / threadIdx) cannot also contain tile ops (T.copy, T.gemm, T.r",
    ),
    ("language_mask_op.tilelang_copy_mask_copy", "llvm"): (
        tl_ir.UnsupportedError,
        "cpu-lower-launch (main): on CPU targets a kernel that uses its thread index (T.get_thread_binding / threadIdx) cannot also contain tile ops (T.copy, T.gemm, T.r",
    ),
    ("language_clamp.clamp_within_bounds", "c"): (
        tl_ir.KernelTypeError,
        "language_clamp.py:25: invalid operand: clamp() got an unexpected keyword argument 'min_val'",
    ),
    ("language_clamp.clamp_within_bounds", "llvm"): (
        tl_ir.KernelTypeError,
        "language_clamp.py:25: invalid operand: clamp() got an unexpected keyword argument 'min_val'",
    ),
    ("language_clamp.clamp_within_bounds", "cuda-nvcc"): (
        tl_ir.KernelTypeError,
        "language_clamp.py:25: invalid operand: clamp() got an unexpected keyword argument 'min_val'",
    ),
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
    ("language_transpose.tilelang_transpose", "c"): (
        tl_ir.KernelSyntaxError,
        "language_transpose.py:33: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'transpose'",
    ),
    ("language_transpose.tilelang_transpose", "llvm"): (
        tl_ir.KernelSyntaxError,
        "language_transpose.py:33: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'transpose'",
    ),
    ("language_transpose.tilelang_transpose", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "language_transpose.py:33: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'transpose'",
    ),
    ("language_alloc.alloc_global", "c"): (
        tl_ir.KernelSyntaxError,
        "language_alloc.py:105: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'alloc_global'",
    ),
    ("language_alloc.alloc_global", "llvm"): (
        tl_ir.KernelSyntaxError,
        "language_alloc.py:105: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'alloc_global'",
    ),
    ("language_alloc.alloc_global", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "language_alloc.py:105: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'alloc_global'",
    ),
    ("language_atomic.atomic_addx2_program", "c"): (
        tl_ir.KernelSyntaxError,
        "language_atomic.py:46: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'atomic_addx2'",
    ),
    ("language_atomic.atomic_addx2_program", "llvm"): (
        tl_ir.KernelSyntaxError,
        "language_atomic.py:46: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'atomic_addx2'",
    ),
    ("language_atomic.atomic_addx2_program", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "language_atomic.py:46: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'atomic_addx2'",
    ),
    ("language_reshape.reshape_test", "c"): (
        tl_ir.KernelSyntaxError,
        "language_reshape.py:14: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'reshape'",
    ),
    ("language_reshape.reshape_test", "llvm"): (
        tl_ir.KernelSyntaxError,
        "language_reshape.py:14: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'reshape'",
    ),
    ("language_reshape.reshape_test", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "language_reshape.py:14: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'reshape'",
    ),
    ("language_reshape.reshape_fragment_test", "c"): (
        tl_ir.KernelSyntaxError,
        "language_reshape.py:33: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'reshape'",
    ),
    ("language_reshape.reshape_fragment_test", "llvm"): (
        tl_ir.KernelSyntaxError,
        "language_reshape.py:33: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'reshape'",
    ),
    ("language_reshape.reshape_fragment_test", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "language_reshape.py:33: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'reshape'",
    ),
    ("language_reshape.reduce_after_reshape_test", "c"): (
        tl_ir.KernelSyntaxError,
        "language_reshape.py:53: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'reshape'",
    ),
    ("language_reshape.reduce_after_reshape_test", "llvm"): (
        tl_ir.KernelSyntaxError,
        "language_reshape.py:53: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'reshape'",
    ),
    ("language_reshape.reduce_after_reshape_test", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "language_reshape.py:53: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'reshape'",
    ),
    ("language_view.view_test", "c"): (
        tl_ir.KernelSyntaxError,
        "language_view.py:25: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'view'",
    ),
    ("language_view.view_test", "llvm"): (
        tl_ir.KernelSyntaxError,
        "language_view.py:25: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'view'",
    ),
    ("language_view.view_test", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "language_view.py:25: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'view'",
    ),
    ("language_vectorize.vectorize_test", "c"): (
        AttributeError,
        "module 'tl_jit.language' has no attribute 'StridedTensor'",
    ),
    ("language_vectorize.vectorize_test", "llvm"): (
        AttributeError,
        "module 'tl_jit.language' has no attribute 'StridedTensor'",
    ),
    ("language_vectorize.vectorize_test", "cuda-nvcc"): (
        AttributeError,
        "module 'tl_jit.language' has no attribute 'StridedTensor'",
    ),
    ("language_let.bind_kernel", "c"): (
        NotImplementedError,
        "bind_kernel: TileLang's eager-style @jit (kernel parameters annotated with T.Tensor: A, B) is not supported; write a function of compile-time arguments that ret",
    ),
    ("language_let.bind_kernel", "llvm"): (
        NotImplementedError,
        "bind_kernel: TileLang's eager-style @jit (kernel parameters annotated with T.Tensor: A, B) is not supported; write a function of compile-time arguments that ret",
    ),
    ("language_let.bind_kernel", "cuda-nvcc"): (
        NotImplementedError,
        "bind_kernel: TileLang's eager-style @jit (kernel parameters annotated with T.Tensor: A, B) is not supported; write a function of compile-time arguments that ret",
    ),
    ("language_ceildiv._align_up_kernel", "c"): (
        tl_ir.KernelSyntaxError,
        "language_ceildiv.py:23: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'align_up'",
    ),
    ("language_ceildiv._align_up_kernel", "llvm"): (
        tl_ir.KernelSyntaxError,
        "language_ceildiv.py:23: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'align_up'",
    ),
    ("language_ceildiv._align_up_kernel", "cuda-nvcc"): (
        tl_ir.KernelSyntaxError,
        "language_ceildiv.py:23: unknown attribute in kernel: module 'tl_jit.language' has no attribute 'align_up'",
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
    ("cpu_reduce._make_kernel_2d-sum-dim1", "c"): (
        AssertionError,
        "wrong numbers: Not equal to tolerance rtol=0.0001, atol=0.0001 cpu_reduce._make_kernel_2d-sum-dim1: output 0 Mismatched elements: 32 / 32 (100%)",
    ),
    ("cpu_reduce._make_kernel_2d-sum-dim1", "llvm"): (
        AssertionError,
        "wrong numbers: Not equal to tolerance rtol=0.0001, atol=0.0001 cpu_reduce._make_kernel_2d-sum-dim1: output 0 Mismatched elements: 32 / 32 (100%)",
    ),
    ("cpu_reduce._make_kernel_2d-max-dim0", "c"): (
        AssertionError,
        "wrong numbers: Not equal to tolerance rtol=1e-05, atol=1e-05 cpu_reduce._make_kernel_2d-max-dim0: output 0 Mismatched elements: 64 / 64 (100%)",
    ),
    ("cpu_reduce._make_kernel_2d-max-dim0", "llvm"): (
        AssertionError,
        "wrong numbers: Not equal to tolerance rtol=1e-05, atol=1e-05 cpu_reduce._make_kernel_2d-max-dim0: output 0 Mismatched elements: 64 / 64 (100%)",
    ),
    ("example_gemv.naive_gemv", "c"): (
        tl_ir.UnsupportedError,
        "cpu-lower-launch (main): on CPU targets a kernel that uses its thread index (T.get_thread_binding / threadIdx) cannot also contain tile ops (T.copy, T.gemm, T.r",
    ),
    ("example_gemv.naive_gemv", "llvm"): (
        tl_ir.UnsupportedError,
        "cpu-lower-launch (main): on CPU targets a kernel that uses its thread index (T.get_thread_binding / threadIdx) cannot also contain tile ops (T.copy, T.gemm, T.r",
    ),
    ("example_gemv.naive_splitk_gemv", "c"): (
        tl_ir.UnsupportedError,
        "cpu-lower-launch (main): on CPU targets a kernel that uses its thread index (T.get_thread_binding / threadIdx) cannot also contain tile ops (T.copy, T.gemm, T.r",
    ),
    ("example_gemv.naive_splitk_gemv", "llvm"): (
        tl_ir.UnsupportedError,
        "cpu-lower-launch (main): on CPU targets a kernel that uses its thread index (T.get_thread_binding / threadIdx) cannot also contain tile ops (T.copy, T.gemm, T.r",
    ),
    ("example_gemv.splitk_gemv", "c"): (
        tl_ir.UnsupportedError,
        "cpu-lower-launch (main): on CPU targets a kernel that uses its thread index (T.get_thread_binding / threadIdx) cannot also contain tile ops (T.copy, T.gemm, T.r",
    ),
    ("example_gemv.splitk_gemv", "llvm"): (
        tl_ir.UnsupportedError,
        "cpu-lower-launch (main): on CPU targets a kernel that uses its thread index (T.get_thread_binding / threadIdx) cannot also contain tile ops (T.copy, T.gemm, T.r",
    ),
    ("example_gemv.splitk_gemv_vectorized", "c"): (
        tl_ir.UnsupportedError,
        "cpu-lower-launch (main): on CPU targets a kernel that uses its thread index (T.get_thread_binding / threadIdx) cannot also contain tile ops (T.copy, T.gemm, T.r",
    ),
    ("example_gemv.splitk_gemv_vectorized", "llvm"): (
        tl_ir.UnsupportedError,
        "cpu-lower-launch (main): on CPU targets a kernel that uses its thread index (T.get_thread_binding / threadIdx) cannot also contain tile ops (T.copy, T.gemm, T.r",
    ),
    ("example_fusedmoe.moe_forward_tilelang_shared", "cuda-nvcc"): (
        tl_ir.UnsupportedError,
        "this prim_func has 2 T.Kernel launches that run one after the other; this target's lowering supports one T.Kernel per prim_func (split the kernels into separate",
    ),
}
