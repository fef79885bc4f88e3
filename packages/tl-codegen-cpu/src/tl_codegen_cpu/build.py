"""Building a lowered module into a shared object for ``c`` or ``llvm``.

``c``: `generate_c_source` (TVM's C printer with vectorization off, since it
cannot print vector types and gcc vectorizes the lane loops itself; OpenMP
pragmas on the marked parallel loops), then ``gcc -O3 -march=native -fopenmp``
(TVM's own export uses -O2).

``llvm``: LLVM generates code for the real host CPU (``mcpu`` from LLVM's
host name: ``"native"`` silently falls back to generic in TVM 0.27), and the
system compiler links the object into a shared object.

Both return a `CpuBuildResult`; a failing compiler raises
``tl_backend_api.ToolchainError`` carrying its own message and the source path.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import tvm

from tl_backend_api import ToolchainError
from tl_backend_api.tvm_lowering import sound_lowering
from tl_codegen_cpu.c_headers import atomics_c_source, checked_c_source, print_c_source
from tl_codegen_cpu.c_source import check_prepared_for_c, generate_c_source
from tl_codegen_cpu.gcc import C_FLAGS, GccToolchain, tvm_ffi_library, tvm_include_dirs
from tl_codegen_cpu.lowering import host_cpu_name
from tl_codegen_cpu.module_info import check_module
from tl_passes.whole_tiles import keep_data_indexed_tiles_whole


@dataclass(frozen=True)
class CpuBuildResult:
    """A built CPU kernel library.

    Attributes:
        target_kind: ``"c"`` or ``"llvm"``.
        library_path: the shared object (exposes the packed entry).
        source: the C source (c) or LLVM IR (llvm) it was built from.
        source_path: where that source was written.
        entry_symbol: the packed-call symbol of the kernel (``__tvm_ffi_<name>``).
        function_names: every PrimFunc's global symbol in the module.
        toolchain_version: the versions of the tools that ran, one string.
    """

    target_kind: str
    library_path: Path
    source: str
    source_path: Path
    entry_symbol: str
    function_names: tuple[str, ...]
    toolchain_version: str


def llvm_host_target(mcpu: str | None = None) -> tvm.target.Target:
    """Return an ``llvm`` target for ``mcpu`` (default: the real host CPU name)."""
    return tvm.target.Target({"kind": "llvm", "mcpu": mcpu or host_cpu_name()})


def _output_dir(output_dir: str | os.PathLike[str], caller: str) -> Path:
    path = Path(output_dir)
    path.mkdir(parents=True, exist_ok=True)
    if not path.is_dir():
        raise ValueError(f"{caller} output_dir: expected a directory, got {path}")
    return path


def build_c(
    mod: tvm.IRModule,
    output_dir: str | os.PathLike[str],
    *,
    name: str = "kernel",
    toolchain: GccToolchain | None = None,
    extra_flags: Sequence[str] = (),
) -> CpuBuildResult:
    """Build ``mod`` for target ``c``: C source + ``gcc -O3 -march=native -fopenmp``.

    Args:
        mod: a lowered IRModule of PrimFuncs (tile ops already lowered).
        output_dir: where ``<name>.c`` and ``<name>.so`` are written (created).
        name: the files' base name.
        toolchain: the C compiler (default: gcc or ``$CC``).
        extra_flags: more compiler flags, appended after `C_FLAGS`.

    Returns:
        A `CpuBuildResult` whose entry symbol is ``__tvm_ffi_<first function>``.

    Raises:
        TypeError, ValueError: for a bad module or output directory.
        ToolchainError: TVM's code generation failed, the compiler is
            missing or failed (its message, the source path), or the library
            calls a function nothing defines (named; see
            `GccToolchain.check_symbols_resolve`).
    """
    names = check_module(mod, "build_c")
    check_prepared_for_c(mod, "build_c")
    out = _output_dir(output_dir, "build_c")
    tool = toolchain if toolchain is not None else GccToolchain()
    source = generate_c_source(mod)
    source_path = out / f"{name}.c"
    source_path.write_text(source)
    include_flags = [flag for d in tvm_include_dirs() for flag in ("-I", d)]
    library = tool.compile_shared_object(
        [source_path],
        out / f"{name}.so",
        options=[*C_FLAGS, *extra_flags, *include_flags],
    )
    tool.check_symbols_resolve(library, [tvm_ffi_library()], source_path=str(source_path))
    info = tool.discover()
    return CpuBuildResult(
        target_kind="c",
        library_path=library,
        source=source,
        source_path=source_path,
        entry_symbol=f"__tvm_ffi_{names[0]}",
        function_names=names,
        toolchain_version=f"tvm {tvm.__version__} C codegen; {info.version if info else '?'}",
    )


def build_llvm(
    mod: tvm.IRModule,
    output_dir: str | os.PathLike[str],
    *,
    name: str = "kernel",
    mcpu: str | None = None,
    toolchain: GccToolchain | None = None,
) -> CpuBuildResult:
    """Build ``mod`` for target ``llvm`` on the host CPU and link it into a shared object.

    Args:
        mod: a lowered IRModule of PrimFuncs.
        output_dir: where ``<name>.ll``, ``<name>.o`` and ``<name>.so`` are written.
        name: the files' base name.
        mcpu: the LLVM CPU name (default: the real host CPU, e.g. ``znver4``).
        toolchain: the linker driver (default: gcc or ``$CC``).

    Returns:
        A `CpuBuildResult` whose source is the LLVM IR.

    Raises:
        TypeError, ValueError: for a bad module or output directory.
        ToolchainError: LLVM code generation or the link failed, or the
            library calls a function nothing defines (named).
    """
    names = check_module(mod, "build_llvm")
    out = _output_dir(output_dir, "build_llvm")
    tool = toolchain if toolchain is not None else GccToolchain()
    target = llvm_host_target(mcpu)
    source_path = out / f"{name}.ll"
    try:
        with sound_lowering():
            lib = tvm.compile(keep_data_indexed_tiles_whole(mod), target=target)
    except Exception as error:  # TVM raises RuntimeError/ValueError/TypeError subclasses
        raise ToolchainError(
            f"TVM's LLVM code generation failed for mcpu={target.attrs['mcpu']}: "
            f"{type(error).__name__}",
            output=str(error),
        ) from error
    source = str(lib.mod.inspect_source("ll"))
    source_path.write_text(source)
    object_path = out / f"{name}.o"
    lib.mod.write_to_file(str(object_path))
    inputs = [object_path]
    options: list[str] = []
    if "tl_atomic_" in source:
        # LLVM calls the atomics as external functions: link their C definitions in.
        atomics_path = out / f"{name}_atomics.c"
        atomics_path.write_text(atomics_c_source('__attribute__((visibility("hidden")))'))
        inputs.append(atomics_path)
        options = ["-O2"]
    if "tl_rt_report_out_of_bounds" in source:
        # Checked mode: the report and its context slot, as C linked in (tl_checked.h).
        checked_path = out / f"{name}_checked.c"
        checked_path.write_text(checked_c_source('__attribute__((visibility("hidden")))'))
        inputs.append(checked_path)
        options = ["-O2"]
    if "tl_print_f64" in source:
        # T.print of a float: printf called as the variadic function it is (tl_print.h).
        print_path = out / f"{name}_print.c"
        print_path.write_text(print_c_source('__attribute__((visibility("hidden")))'))
        inputs.append(print_path)
        options = ["-O2"]
    library = tool.compile_shared_object(inputs, out / f"{name}.so", options=options)
    tool.check_symbols_resolve(library, [tvm_ffi_library()], source_path=str(source_path))
    info = tool.discover()
    llvm_version = int(tvm.target.codegen.llvm_version_major())
    return CpuBuildResult(
        target_kind="llvm",
        library_path=library,
        source=source,
        source_path=source_path,
        entry_symbol=f"__tvm_ffi_{names[0]}",
        function_names=names,
        toolchain_version=(
            f"tvm {tvm.__version__} LLVM {llvm_version} mcpu={target.attrs['mcpu']}; "
            f"linker {info.version if info else '?'}"
        ),
    )


def build(
    mod: tvm.IRModule,
    target: tvm.target.Target | str,
    output_dir: str | os.PathLike[str],
    *,
    name: str = "kernel",
) -> CpuBuildResult:
    """Build ``mod`` for a CPU target: `build_c` for kind ``c``, `build_llvm` for ``llvm``.

    Raises:
        ValueError: if the target's kind is neither ``c`` nor ``llvm``.
    """
    resolved = target if isinstance(target, tvm.target.Target) else tvm.target.Target(target)
    kind = resolved.kind.name
    if kind == "c":
        return build_c(mod, output_dir, name=name)
    if kind == "llvm":
        mcpu = str(resolved.attrs.get("mcpu", "") or "")
        return build_llvm(mod, output_dir, name=name, mcpu=None if mcpu in ("", "native") else mcpu)
    raise ValueError(f"build target: expected a target of kind 'c' or 'llvm', got kind {kind!r}")
