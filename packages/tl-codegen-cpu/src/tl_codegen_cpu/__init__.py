"""tl_codegen_cpu: the CPU backend (target kinds ``c`` and ``llvm``); so far its toolchain."""

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
    "C_FLAGS",
    "HALF_TYPEDEF",
    "CpuBuildResult",
    "GccToolchain",
    "build",
    "build_c",
    "build_llvm",
    "c_compiler",
    "generate_c_source",
    "insert_atomics_prelude",
    "insert_half_typedef",
    "insert_microkernel_prelude",
    "insert_openmp_pragmas",
    "llvm_host_target",
    "tvm_include_dirs",
]
