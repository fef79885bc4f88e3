"""``T.import_source`` on CUDA: the CUDA C device helpers come before the kernel that calls
them with ``T.call_extern``, and nvcc compiles the result; a backend whose descriptor names
no imported-source language (the CPU targets) refuses the kernel with `UnsupportedError`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tvm.target import Target

import tl_ir.language as T
from tl_backend_api import imported_sources
from tl_backend_api.artifact import kernel_module
from tl_codegen_cuda.backend import BACKEND
from tl_codegen_cuda.codegen import CudaDeviceCodegen
from tl_ir.errors import KernelTypeError, ScopeError, UnsupportedError

# A TileLang-style decoder: eight unsigned 4-bit codes (four bytes) to eight halves.
DECODER = """
template <typename T1, typename T2>
__device__ void decode_u4_to_f16(T1 *_i4s, T2 *B_local_decode) {
  for (int i = 0; i < 8; ++i) {
    B_local_decode[i] = __int2half_rn((_i4s[i / 2] >> (4 * (i % 2))) & 0xF);
  }
}
"""


def decoding_kernel(source: Any) -> Any:
    @T.prim_func
    def main(B: T.Tensor((4,), "int8"), C: T.Tensor((8,), "float16")):
        with T.Kernel(1, threads=32) as _bx:
            packed = T.alloc_local((4,), "int8")
            decoded = T.alloc_local((8,), "float16")
            T.import_source(source)
            for i in T.serial(4):
                packed[i] = B[i]
            T.call_extern(
                "void",
                "decode_u4_to_f16",
                T.access_ptr(packed, "r"),
                T.access_ptr(decoded, "w"),
            )
            for i in T.serial(8):
                C[i] = decoded[i]

    return main


def cuda_source(func: Any) -> str:
    target = Target({"kind": "cuda", "arch": "sm_80"}, host=Target("llvm"))
    mod = BACKEND.pipelines["cuda"].run(kernel_module(func, "decode"), target)
    return CudaDeviceCodegen().emit_source(mod, target).files["decode.cu"]


def test_imported_source_comes_before_the_kernel() -> None:
    source = cuda_source(decoding_kernel(DECODER))
    helper = source.index("__device__ void decode_u4_to_f16")
    kernel = source.index('extern "C" __global__')
    assert helper < kernel
    assert "decode_u4_to_f16(" in source[kernel:]
    assert source.count("__device__ void decode_u4_to_f16") == 1


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_nvcc_compiles_a_kernel_with_imported_source(tmp_path: Path) -> None:
    path = tmp_path / "decode.cu"
    path.write_text(cuda_source(decoding_kernel(DECODER)))
    done = subprocess.run(
        ["nvcc", "-cubin", "-arch=sm_80", "-o", str(tmp_path / "decode.cubin"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_the_text_is_recorded_once_in_order() -> None:
    @T.prim_func
    def main(C: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=1) as _bx:
            T.import_source("// first")
            T.import_source("// second")
            T.import_source("// first")
            C[0] = T.float32(1)

    assert imported_sources(kernel_module(main, "main")) == ["// first", "// second"]


def test_none_is_a_no_op_and_other_values_are_refused() -> None:
    assert imported_sources(kernel_module(decoding_kernel(None), "decode")) == []
    with pytest.raises(KernelTypeError, match=r"T.import_source\(source\): expected a string"):
        decoding_kernel(42)
    with pytest.raises(ScopeError, match=r"T\.import_source"):
        T.import_source(DECODER)


def test_a_backend_without_an_imported_source_language_refuses_the_kernel() -> None:
    import tl_jit

    with pytest.raises(UnsupportedError, match=r"imports device source with T\.import_source"):
        tl_jit.compile(decoding_kernel(DECODER), target="c")
    assert BACKEND.imported_source_language == "cuda"


def test_access_ptr_takes_a_tile_or_an_element_and_an_access_kind() -> None:
    @T.prim_func
    def offsets(B: T.Tensor((4, 8), "int8"), C: T.Tensor((8,), "float16")):
        with T.Kernel(1, threads=32) as _bx:
            T.import_source(DECODER)
            T.call_extern(
                "void", "decode_u4_to_f16", T.access_ptr(B[2, 4], "r"), T.access_ptr(C, "w")
            )

    source = cuda_source(offsets)
    call = source[source.index("decode_u4_to_f16((") :].split(";")[0]
    assert "20" in call  # B[2, 4] is element 2 * 8 + 4 of the row-major tile
    with pytest.raises(KernelTypeError, match=r"T\.access_ptr\(access_type\)"):

        @T.prim_func
        def bad_kind(B: T.Tensor((8,), "int8")):
            with T.Kernel(1, threads=32) as _bx:
                T.call_extern("void", "f", T.access_ptr(B, "x"))

    with pytest.raises(KernelTypeError, match=r"T\.access_ptr\(base\)"):

        @T.prim_func
        def not_a_tile(B: T.Tensor((8,), "int8")):
            with T.Kernel(1, threads=32) as _bx:
                T.call_extern("void", "f", T.access_ptr(3, "r"))
