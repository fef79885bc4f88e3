"""tl_codegen_cpu: the CPU backend (target kinds ``c`` and ``llvm``).

``BACKEND`` is the descriptor both ``tl.backends`` entry points name; the
pipelines, device codegen and toolchain are importable on their own.
"""

from tl_codegen_cpu.backend import BACKEND, cython_available, tvm_ffi_available
from tl_codegen_cpu.codegen import CpuDeviceCodegen, entry_function_name
from tl_codegen_cpu.pipeline import (
    C_PASSES,
    C_PIPELINE,
    C_PREPARATION_PASSES,
    LLVM_PASSES,
    LLVM_PIPELINE,
    PIPELINES,
    prepare_for_c,
)
from tl_codegen_cpu.toolchain import (
    C_FLAGS,
    HALF_TYPEDEF,
    CpuBuildResult,
    GccToolchain,
    build,
    build_c,
    build_llvm,
    c_compiler,
    generate_c_source,
    insert_atomics_prelude,
    insert_half_typedef,
    insert_microkernel_prelude,
    insert_openmp_pragmas,
    llvm_host_target,
    tvm_include_dirs,
)

__all__ = [
    "BACKEND",
    "C_FLAGS",
    "C_PASSES",
    "C_PIPELINE",
    "C_PREPARATION_PASSES",
    "HALF_TYPEDEF",
    "LLVM_PASSES",
    "LLVM_PIPELINE",
    "PIPELINES",
    "CpuBuildResult",
    "CpuDeviceCodegen",
    "GccToolchain",
    "build",
    "build_c",
    "build_llvm",
    "c_compiler",
    "cython_available",
    "entry_function_name",
    "generate_c_source",
    "insert_atomics_prelude",
    "insert_half_typedef",
    "insert_microkernel_prelude",
    "insert_openmp_pragmas",
    "llvm_host_target",
    "prepare_for_c",
    "tvm_ffi_available",
    "tvm_include_dirs",
]
