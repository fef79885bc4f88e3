"""Helpers shared by the CPU pass tests (unique module name: the suite uses importlib mode)."""

from __future__ import annotations

from typing import Any

import numpy as np
import tvm
from tvm import tirx

from tl_codegen_cpu import CpuBuildResult, build_c, prepare_for_c
from tl_codegen_cpu.lowering import GemmOperand, RegisterTile, emit_gemm_microkernel, host_cpu_name
from tl_codegen_cpu.passes import CPU_PASS_REGISTRY
from tl_passes import Pass
from tl_passes.registry import create_pass

HOST_TARGET = tvm.target.Target({"kind": "llvm", "mcpu": host_cpu_name()})

#: Padding around each operand's tile inside its buffer, so offsets are exercised.
PAD = (1, 2)


def microkernel_func(
    m: int,
    n: int,
    k: int,
    *,
    transpose_a: bool = False,
    transpose_b: bool = False,
    dtype: str = "float32",
    accum_dtype: str = "float32",
    register_tile: RegisterTile | None = None,
) -> tirx.PrimFunc:
    """A PrimFunc ``(A, B, C)`` running only the micro-kernel on padded buffers."""
    a_rows, a_cols = (k, m) if transpose_a else (m, k)
    b_rows, b_cols = (n, k) if transpose_b else (k, n)
    a = tirx.decl_buffer((a_rows + 2 * PAD[0], a_cols + 2 * PAD[1]), dtype, name="A")
    b = tirx.decl_buffer((b_rows + 2 * PAD[0], b_cols + 2 * PAD[1]), dtype, name="B")
    c = tirx.decl_buffer((m + 2 * PAD[0], n + 2 * PAD[1]), accum_dtype, name="C")
    body = emit_gemm_microkernel(
        GemmOperand(a, PAD),
        GemmOperand(b, PAD),
        GemmOperand(c, PAD),
        m,
        n,
        k,
        transpose_a=transpose_a,
        transpose_b=transpose_b,
        register_tile=register_tile,
    )
    func = tirx.PrimFunc([a, b, c], body)
    return func.with_attrs({"global_symbol": "main", "tir.noalias": True})


def run_on_host(func: tirx.PrimFunc, *arrays: np.ndarray) -> list[np.ndarray]:
    """Compile ``func`` for the host and run it on copies of ``arrays``; return them after."""
    lib = tvm.compile(func, target=HOST_TARGET)
    tensors = [tvm.runtime.tensor(np.ascontiguousarray(x)) for x in arrays]
    lib["main"](*tensors)
    return [t.numpy() for t in tensors]


def random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    """Small-valued random data of ``dtype`` (exact in low precision for small k)."""
    if dtype.startswith(("int", "uint")):
        low = 0 if dtype.startswith("uint") else -8
        return rng.integers(low, 8, size=shape).astype(dtype)
    return rng.integers(-4, 5, size=shape).astype(dtype) / 4


def make_pass(name: str, **options: Any) -> Pass:
    """The pass ``name`` from the CPU backend's registry, else from tl_passes' own."""
    if name in CPU_PASS_REGISTRY:
        return CPU_PASS_REGISTRY.create(name, **options)
    return create_pass(name, **options)


def build_prepared_c(mod: tvm.IRModule, output_dir: Any, **options: Any) -> CpuBuildResult:
    """`build_c` of a hand-built module after the C pipeline's preparation stages."""
    return build_c(prepare_for_c(mod), output_dir, **options)
