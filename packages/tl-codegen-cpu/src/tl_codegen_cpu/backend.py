"""``BACKEND``: the CPU backend, published under the ``tl.backends`` entry points ``c`` and ``llvm``.

Both entry points name this one object. Execution backends, in ``auto``
order: ``cython`` (tl-runtime's Cython launcher) then ``tvm_ffi`` (its
tvm-ffi adapter); each probes tl-runtime's adapter for availability.
"""

from __future__ import annotations

from tl_backend_api import Backend, Capabilities, ExecutionBackendSpec
from tl_codegen_cpu.codegen import CpuDeviceCodegen
from tl_codegen_cpu.gcc import GccToolchain
from tl_codegen_cpu.pipeline import C_PIPELINE, LLVM_PIPELINE


def _adapter_available(key: str) -> bool:
    import tl_runtime

    return bool(tl_runtime.adapter_availability(key))


def tvm_ffi_available() -> bool:
    """Whether tl-runtime's ``tvm_ffi`` adapter can run here (its own probe)."""
    return _adapter_available("tvm_ffi")


def cython_available() -> bool:
    """Whether tl-runtime's ``cython`` adapter can run here (Cython and a C compiler)."""
    return _adapter_available("cython")


# The kernel library is the same whichever adapter loads it: building needs gcc or
# clang for target c (TL_CC picks one) and nothing more for llvm (TVM's LLVM).
_CPU_BUILD_HINT = "target c: a C compiler (gcc or clang); target llvm: nothing"


BACKEND = Backend(
    name="cpu",
    target_kinds=("c", "llvm"),
    pipelines={"c": C_PIPELINE, "llvm": LLVM_PIPELINE},
    device_codegens={"c": CpuDeviceCodegen("c"), "llvm": CpuDeviceCodegen("llvm")},
    # `cython` first: its calls cost about half of `tvm_ffi`'s, and loading a kernel
    # never imports tvm-ffi's Python package (which imports torch wherever torch is
    # installed, about a second in a fresh process). `tvm_ffi` serves where the launcher
    # cannot run (an editable install without Cython or a C compiler).
    execution_backends=(
        ExecutionBackendSpec(
            "cython",
            is_available=cython_available,
            enable_device_compile=True,
            install_hint="Cython and a C compiler (pip install cython; apt install gcc)",
            build_hint=_CPU_BUILD_HINT,
        ),
        ExecutionBackendSpec(
            "tvm_ffi",
            is_available=tvm_ffi_available,
            enable_device_compile=True,
            install_hint="apache-tvm-ffi (pip install apache-tvm-ffi)",
            build_hint=_CPU_BUILD_HINT,
        ),
    ),
    toolchains={"gcc": GccToolchain()},
    # Kernels run on the host CPU: no host_kind, host arrays only, and "auto"
    # falls back here when no device backend's probe finds its device. `c`
    # rather than `llvm`: it needs only a C compiler and can carry OpenMP pragmas.
    auto_kind="c",
    auto_priority=0,
    # Checked mode (tl_jit debug=True): cpu-check-bounds guards every access on both kinds.
    capabilities=Capabilities(checked_mode=True),
)
