"""Device codegen of the CPU backend: TVM's C or LLVM code generator plus gcc.

`CpuDeviceCodegen("c")` generates C (OpenMP pragmas, micro-kernel prelude)
and builds it with ``gcc -O3 -march=native -fopenmp``; `CpuDeviceCodegen("llvm")`
generates LLVM IR for the host CPU and links the object with gcc. The entry
symbol is the kernel's global symbol (tl-runtime finds the packed function
under it).
"""

from __future__ import annotations

import platform
from pathlib import Path

import tvm
from tvm import IRModule
from tvm.target import Target

from tl_backend_api import DeviceBuildResult, KernelSources, ToolchainError
from tl_backend_api.tvm_lowering import sound_lowering
from tl_codegen_cpu.build import CpuBuildResult, build_c, build_llvm, llvm_host_target
from tl_codegen_cpu.c_source import generate_c_source
from tl_codegen_cpu.module_info import function_names
from tl_codegen_cpu.scratch import scratch_directory
from tl_passes.whole_tiles import keep_data_indexed_tiles_whole

#: The target kinds this codegen serves.
CPU_KINDS: tuple[str, ...] = ("c", "llvm")


def entry_function_name(mod: IRModule) -> str:
    """The global symbol of the module's first PrimFunc (the kernel's entry).

    Raises:
        ValueError: the module holds no PrimFunc.
    """
    names = function_names(mod)
    if not names:
        raise ValueError("mod: expected at least one PrimFunc, the module has none")
    return names[0]


def check_target_options(kind: str, target: Target) -> None:
    """Refuse target options the CPU build would not apply: it builds for the machine it
    runs on (``c``: ``gcc -march=native``; ``llvm``: LLVM for ``mcpu``, default the host
    CPU), so an option it ignored would be recorded in the artifact's manifest without
    being true of its library (an "aarch64" or "no AVX" artifact holding host x86 code).

    Raises:
        UnsupportedError: an option other than ``llvm``'s ``mcpu``, or an ``mtriple`` for
            another architecture than the host's; the message says what is honoured.
    """
    from tl_ir.errors import UnsupportedError

    options = {str(k): v for k, v in dict(target.attrs).items()}
    honoured = {"mcpu", "mtriple"} if kind == "llvm" else set()
    host_arch = platform.machine().replace("amd64", "x86_64").lower()
    triple = str(options.get("mtriple", "") or "")
    # feature.* flags are derived from the triple, which is judged on its own.
    foreign = [n for n in options if n not in honoured and not n.startswith("feature.")]
    if triple and triple.split("-")[0].lower() not in (host_arch, host_arch.replace("_", "-")):
        foreign.append("mtriple")
    if foreign:
        shown = ", ".join(f"{name}={options[name]!r}" for name in sorted(set(foreign)))
        what = (
            "only mcpu (LLVM's CPU name, default the host's) and the host's own mtriple"
            if kind == "llvm"
            else "no option: gcc builds for this machine's CPU (-march=native); for "
            "another CPU use target llvm with mcpu"
        )
        raise UnsupportedError(
            f"target {kind}: {shown} would not be applied (the CPU backend builds for "
            f"the {host_arch} machine it runs on); it honours {what}"
        )


def _mcpu(target: Target) -> str | None:
    mcpu = str(target.attrs.get("mcpu", "") or "")
    return None if mcpu in ("", "native") else mcpu


class CpuDeviceCodegen:
    """The `tl_backend_api.DeviceCodegen` for one CPU kind (``c`` or ``llvm``).

    Args:
        kind: ``"c"`` or ``"llvm"``.

    Raises:
        ValueError: another kind.
    """

    def __init__(self, kind: str) -> None:
        if kind not in CPU_KINDS:
            raise ValueError(f"CpuDeviceCodegen kind: expected one of {CPU_KINDS}, got {kind!r}")
        self.kind = kind

    def __repr__(self) -> str:
        return f"CpuDeviceCodegen({self.kind!r})"

    def emit_source(self, mod: IRModule, target: Target) -> KernelSources:
        """Generate the kernel's source (C, or LLVM IR); never runs a compiler.

        Raises:
            ToolchainError: TVM's code generation failed.
        """
        check_target_options(self.kind, target)
        name = entry_function_name(mod)
        if self.kind == "c":
            return KernelSources(
                language="c", files={"kernel.c": generate_c_source(mod)}, entry_symbol=name
            )
        llvm_target = llvm_host_target(_mcpu(target))
        try:
            with sound_lowering():
                lib = tvm.compile(keep_data_indexed_tiles_whole(mod), target=llvm_target)
        except Exception as error:  # TVM raises several exception types
            raise ToolchainError(
                f"TVM's LLVM code generation failed: {type(error).__name__}", output=str(error)
            ) from error
        source = str(lib.mod.inspect_source("ll"))
        return KernelSources(language="llvm-ir", files={"kernel.ll": source}, entry_symbol=name)

    def build_to(self, mod: IRModule, target: Target, directory: Path) -> CpuBuildResult:
        """Build ``mod`` into ``directory`` (``kernel.so`` and its source); see `build`."""
        check_target_options(self.kind, target)
        if self.kind == "c":
            return build_c(mod, directory)
        return build_llvm(mod, directory, mcpu=_mcpu(target))

    def build(self, mod: IRModule, target: Target) -> DeviceBuildResult:
        """Generate the source and compile it into a shared object (``kernel.so``).

        Raises:
            ToolchainError: code generation or the compiler failed (its message,
                the source path).
        """
        name = entry_function_name(mod)
        with scratch_directory() as tmp:
            result = self.build_to(mod, target, tmp)
            library = result.library_path.read_bytes()
        file_name = "kernel.c" if self.kind == "c" else "kernel.ll"
        sources = KernelSources(
            language="c" if self.kind == "c" else "llvm-ir",
            files={file_name: result.source},
            entry_symbol=name,
        )
        return DeviceBuildResult(
            sources=sources,
            binaries={"kernel.so": library},
            toolchain_versions={"toolchain": result.toolchain_version},
        )
