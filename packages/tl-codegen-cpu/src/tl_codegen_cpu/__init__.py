"""tl_codegen_cpu: the CPU backend (target kinds ``c`` and ``llvm``).

``BACKEND`` is the descriptor both ``tl.backends`` entry points name. The
pieces are importable on their own: ``passes`` (the CPU passes), ``pipeline``
(their order per kind), ``c_source`` (C generation), ``c_patches`` (textual
fixes of TVM's C), ``gcc`` (the compiler), ``build`` (module -> shared object)
and ``codegen`` (the backend's `DeviceCodegen`).
"""

from tl_codegen_cpu.backend import BACKEND, cython_available, tvm_ffi_available
from tl_codegen_cpu.build import CpuBuildResult, build, build_c, build_llvm, llvm_host_target
from tl_codegen_cpu.c_patches import (
    HALF_TYPEDEF,
    insert_atomics_prelude,
    insert_half_typedef,
    insert_microkernel_prelude,
    insert_openmp_pragmas,
    insert_special_float_constants,
    patch_c_source,
)
from tl_codegen_cpu.c_source import check_prepared_for_c, generate_c_source
from tl_codegen_cpu.codegen import CpuDeviceCodegen, entry_function_name
from tl_codegen_cpu.gcc import C_FLAGS, GccToolchain, c_compiler, tvm_include_dirs
from tl_codegen_cpu.pipeline import (
    C_PASSES,
    C_PIPELINE,
    C_PREPARATION_PASSES,
    LLVM_PASSES,
    LLVM_PIPELINE,
    PIPELINES,
    prepare_for_c,
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
    "check_prepared_for_c",
    "cython_available",
    "entry_function_name",
    "generate_c_source",
    "insert_atomics_prelude",
    "insert_half_typedef",
    "insert_microkernel_prelude",
    "insert_openmp_pragmas",
    "insert_special_float_constants",
    "llvm_host_target",
    "patch_c_source",
    "prepare_for_c",
    "tvm_ffi_available",
    "tvm_include_dirs",
]
