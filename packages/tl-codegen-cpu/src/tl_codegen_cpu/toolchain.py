"""The CPU toolchain: build a lowered TIR module into a shared object for ``c`` or ``llvm``.

``c``: TVM's C codegen prints the kernel grid's parallel loop as a serial
``for`` and cannot print vector types as C; the module is built with
vectorization off (gcc vectorizes the lane loops itself), a marker call before
each outermost parallel loop becomes ``#pragma omp parallel for``, and gcc
compiles it with ``-O3 -march=native -fopenmp`` (TVM's own export uses -O2).

``llvm``: LLVM generates code for the real host CPU (``mcpu`` from LLVM's
host name: ``"native"`` silently falls back to generic in TVM 0.27), and the
system compiler links the object into a shared object.

Both return a `CpuBuildResult`; a failing compiler raises
``tl_backend_api.ToolchainError`` carrying its own message and the source path.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import tvm
import tvm_ffi
from tvm import tirx

from tl_backend_api import ToolchainError, ToolchainInfo
from tl_codegen_cpu.passes import (
    C_ATOMICS_PRELUDE,
    C_MICROKERNEL_PRELUDE,
    PARALLEL_FOR_MARKER,
    atomics_c_source,
    host_cpu_name,
)

#: Flags for the C path (before include paths, sources and output). The two
#: after -fPIC bound gcc's complete unrolling: on the micro-kernel's many
#: 16-lane loops, plain -O3 spends 10 s in register allocation (docs/cpu.md).
#: -fno-trapping-math lets gcc if-convert float selects (`a < b ? a : b`), which
#: the branch-free exp of `cpu-vectorize-exp` needs to vectorize; it changes no
#: value (only whether floating-point exception flags may be raised speculatively).
C_FLAGS: tuple[str, ...] = (
    "-O3",
    "-march=native",
    "-fopenmp",
    "-shared",
    "-fPIC",
    "--param=max-completely-peeled-insns=0",
    "-fno-tree-loop-distribution",
    "-fno-trapping-math",
)

#: Environment variable naming the C compiler (default: ``gcc``).
CC_ENV = "CC"

_MARKER_BEFORE_LOOP = re.compile(
    rf"^(?P<indent>[ \t]*){PARALLEL_FOR_MARKER}\(\);\n(?P=indent)for \(", re.MULTILINE
)
_LEFTOVER_MARKER = re.compile(rf"^[ \t]*{PARALLEL_FOR_MARKER}\(\);\n", re.MULTILINE)
_MARKER_DECLARATION = re.compile(rf"^.*\b{PARALLEL_FOR_MARKER}\(\);\n", re.MULTILINE)
_MICROKERNEL_DECLARATION = re.compile(r"^TVM_DLL int32_t tl_gemm_f32x\d+\(.*\);\n", re.MULTILINE)
_ATOMIC_DECLARATION = re.compile(r"^TVM_DLL int32_t tl_atomic_\w+\(.*\);\n", re.MULTILINE)
_PRINTF_DECLARATION = re.compile(r"^TVM_DLL int32_t (printf|fflush)\(.*\);\n", re.MULTILINE)
_LAST_INCLUDE = re.compile(r"^#include .*\n(?!#include)", re.MULTILINE)


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


def c_compiler() -> str:
    """Return the C compiler command: ``$CC`` when set, else ``gcc``."""
    return os.environ.get(CC_ENV) or "gcc"


@functools.lru_cache(maxsize=16)
def _tool_version(executable: str) -> str:
    try:
        completed = subprocess.run(
            [executable, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    first_line = (completed.stdout or completed.stderr).strip().splitlines()
    return first_line[0] if first_line else "unknown"


def tvm_include_dirs() -> tuple[str, ...]:
    """The include directories TVM-generated C needs (TVM's and tvm-ffi's headers)."""
    dirs = [
        Path(tvm.__file__).parent / "include",
        Path(tvm_ffi.__file__).parent / "include",
    ]
    return tuple(str(d) for d in dirs if d.is_dir())


@dataclass(frozen=True)
class GccToolchain:
    """The system C compiler used for both CPU paths (gcc or ``$CC``).

    Args:
        executable: the compiler command; ``None`` means `c_compiler()`.
    """

    executable: str | None = None

    @property
    def name(self) -> str:
        """The tool's name (the command's base name)."""
        return Path(self.command).name

    @property
    def command(self) -> str:
        """The compiler command that runs."""
        return self.executable or c_compiler()

    def discover(self) -> ToolchainInfo | None:
        """Find the compiler on PATH; ``None`` when it is not installed."""
        found = shutil.which(self.command)
        if found is None:
            return None
        return ToolchainInfo(name=self.name, executable=found, version=_tool_version(found))

    def compile_shared_object(
        self,
        sources: Sequence[Path],
        output: Path,
        *,
        options: Sequence[str] = (),
    ) -> Path:
        """Compile or link ``sources`` (C files or objects) into the shared object ``output``.

        Args:
            sources: the input files.
            output: the shared object to write.
            options: compiler flags placed before the inputs (``-shared -fPIC``
                are always added).

        Returns:
            ``output``.

        Raises:
            ToolchainError: the compiler is missing or failed; carries the
                compiler's own message, the command and the first source's path.
        """
        source_paths = [Path(s) for s in sources]
        first_source = str(source_paths[0]) if source_paths else None
        info = self.discover()
        if info is None:
            raise ToolchainError(
                f"C compiler {self.command!r} not found on PATH; install gcc or set "
                f"${CC_ENV} to a C compiler",
                source_path=first_source,
            )
        flags = list(options)
        for required in ("-shared", "-fPIC"):
            if required not in flags:
                flags.append(required)
        command = (info.executable, *flags, *(str(s) for s in source_paths), "-o", str(output))
        try:
            completed = subprocess.run(
                command, capture_output=True, text=True, timeout=600, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise ToolchainError(
                f"{self.name} could not run: {error}", command=command, source_path=first_source
            ) from error
        if completed.returncode != 0:
            raise ToolchainError(
                f"{self.name} failed with exit code {completed.returncode}",
                command=command,
                output=(completed.stderr + completed.stdout),
                source_path=first_source,
            )
        return Path(output)


def llvm_host_target(mcpu: str | None = None) -> tvm.target.Target:
    """Return an ``llvm`` target for ``mcpu`` (default: the real host CPU name)."""
    return tvm.target.Target({"kind": "llvm", "mcpu": mcpu or host_cpu_name()})


def _function_names(mod: tvm.IRModule) -> tuple[str, ...]:
    names = []
    for global_var, func in mod.functions.items():
        if isinstance(func, tirx.PrimFunc):
            symbol = func.attrs.get("global_symbol") if func.attrs is not None else None
            names.append(str(symbol) if symbol is not None else str(global_var.name_hint))
    return tuple(names)


def _check_module(mod: object, caller: str) -> tuple[str, ...]:
    if not isinstance(mod, tvm.IRModule):
        raise TypeError(f"{caller} mod: expected a tvm.IRModule, got {type(mod).__name__}")
    names = _function_names(mod)
    if not names:
        raise ValueError(f"{caller} mod: expected at least one PrimFunc, the module has none")
    return names


def _output_dir(output_dir: str | os.PathLike[str], caller: str) -> Path:
    path = Path(output_dir)
    path.mkdir(parents=True, exist_ok=True)
    if not path.is_dir():
        raise ValueError(f"{caller} output_dir: expected a directory, got {path}")
    return path


def insert_openmp_pragmas(source: str) -> tuple[str, int]:
    """Replace each ``MARKER();`` line before a ``for`` with ``#pragma omp parallel for``.

    Markers whose loop was simplified away (a grid of one block) are dropped, and
    so is the marker's extern declaration.

    Returns:
        The rewritten source and the number of pragmas inserted.
    """
    rewritten, count = _MARKER_BEFORE_LOOP.subn(
        lambda match: f"{match['indent']}#pragma omp parallel for\n{match['indent']}for (",
        source,
    )
    rewritten = _LEFTOVER_MARKER.sub("", rewritten)
    rewritten = _MARKER_DECLARATION.sub("", rewritten)
    return rewritten, count


_HALF_TYPE = re.compile(r"\bhalf\b")

#: TVM's C printer names fp16 ``half`` (a CUDA/OpenCL type); gcc >= 12 offers
#: IEEE binary16 on x86-64 as ``_Float16``.
HALF_TYPEDEF = "typedef _Float16 half;\n"


def _after_includes(source: str, text: str) -> str:
    includes = list(_LAST_INCLUDE.finditer(source))
    at = includes[-1].end() if includes else 0
    return source[:at] + text + source[at:]


def insert_half_typedef(source: str) -> str:
    """Define TVM's ``half`` as gcc's ``_Float16`` when ``source`` uses it."""
    if not _HALF_TYPE.search(source):
        return source
    return _after_includes(source, HALF_TYPEDEF)


#: TVM's C printer writes IEEE special values as the bare names ``inff``/``nanf``
#: (float) and ``inf``/``nan`` (double), which C does not declare.
_SPECIAL_FLOAT_DEFINITIONS = {
    "inff": "#define inff __builtin_inff()\n",
    "nanf": '#define nanf __builtin_nanf("")\n',
    "inf": "#define inf __builtin_inf()\n",
    "nan": '#define nan __builtin_nan("")\n',
}


def insert_special_float_constants(source: str) -> str:
    """Define the special float names (``inff``, ``nanf``, ``inf``, ``nan``) ``source`` uses."""
    used = [
        definition
        for name, definition in _SPECIAL_FLOAT_DEFINITIONS.items()
        if re.search(rf"(?<![\w.]){name}(?![\w(])", source)
    ]
    if not used:
        return source
    return _after_includes(source, "".join(used))


def insert_microkernel_prelude(source: str) -> str:
    """Add the C GEMM micro-kernel definitions when ``source`` calls them.

    TVM declares every extern it calls as an exported ``TVM_DLL`` function;
    those declarations of ``tl_gemm_f32x*`` are removed and the static inline
    definitions (`tl_codegen_cpu.passes.C_MICROKERNEL_PRELUDE`) go after the includes.
    """
    if "tl_gemm_f32x" not in source:
        return source
    source = _MICROKERNEL_DECLARATION.sub("", source)
    return _after_includes(source, C_MICROKERNEL_PRELUDE)


def insert_atomics_prelude(source: str) -> str:
    """Add the ``tl_atomic_*`` definitions (and drop TVM's declarations) when ``source`` uses them."""
    if "tl_atomic_" not in source:
        return source
    source = _ATOMIC_DECLARATION.sub("", source)
    return _after_includes(source, C_ATOMICS_PRELUDE)


def insert_stdio(source: str) -> str:
    """Use ``<stdio.h>``'s ``printf``/``fflush`` (T.print) instead of TVM's extern declarations."""
    if not _PRINTF_DECLARATION.search(source):
        return source
    source = _PRINTF_DECLARATION.sub("", source)
    return _after_includes(source, "#include <stdio.h>\n")


def unmarked_parallel_loops(mod: tvm.IRModule) -> list[str]:
    """Describe each parallel loop of ``mod`` not preceded by its ``PARALLEL_FOR_MARKER`` call.

    Such a loop would be printed as a serial ``for``: the module did not go
    through the ``c`` pipeline's `mark-parallel-loops` stage.
    """
    found: list[str] = []
    for global_var, func in mod.functions.items():
        if isinstance(func, tirx.PrimFunc):
            found += [f"{loop} in {global_var.name_hint}" for loop in _unmarked_loops(func.body)]
    return found


def _unmarked_loops(body: tirx.Stmt) -> list[str]:
    marked: list[tirx.For] = []
    unmarked: list[str] = []

    def collect(seq: tirx.SeqStmt) -> None:
        items = list(seq.seq)
        for before, after in itertools.pairwise(items):
            if isinstance(after, tirx.For) and _is_marker_call(before):
                marked.append(after)

    def check(loop: tirx.For) -> None:
        if loop.kind == tirx.ForKind.PARALLEL and not any(loop.same_as(m) for m in marked):
            unmarked.append(f"loop over {loop.loop_var.name}")

    tvm_ffi.structural_walk(body, (tirx.SeqStmt, collect), order="pre")
    tvm_ffi.structural_walk(body, (tirx.For, check), order="pre")
    return unmarked


def _is_marker_call(stmt: tirx.Stmt) -> bool:
    return (
        isinstance(stmt, tirx.Evaluate)
        and isinstance(stmt.value, tvm.ir.Call)
        and len(stmt.value.args) == 1
        and isinstance(stmt.value.args[0], tvm.ir.StringImm)
        and str(stmt.value.args[0].value) == PARALLEL_FOR_MARKER
    )


def check_prepared_for_c(mod: tvm.IRModule, caller: str) -> None:
    """Raise ValueError when ``mod`` has a parallel loop the C path would print serially.

    Raises:
        ValueError: naming the loops and how to prepare the module.
    """
    loops = unmarked_parallel_loops(mod)
    if loops:
        raise ValueError(
            f"{caller} mod: expected a module prepared for C (parallel loops marked), "
            f"got unmarked parallel {', '.join(loops)}; lower it with "
            "tl_codegen_cpu.C_PIPELINE or call tl_codegen_cpu.prepare_for_c(mod) first"
        )


def generate_c_source(mod: tvm.IRModule) -> str:
    """Return the C source of ``mod`` with OpenMP pragmas on its outermost parallel loops.

    ``mod`` must be lowered by `C_PIPELINE`, whose last stages prepare it for
    the C printer (`prepare_for_c` runs only those on a hand-built module).
    Never invokes a C compiler.

    Raises:
        TypeError, ValueError: for a module that is not an IRModule of
            PrimFuncs, or one whose parallel loops are not marked.
        ToolchainError: TVM's C code generation failed (its message as ``output``).
    """
    _check_module(mod, "generate_c_source")
    check_prepared_for_c(mod, "generate_c_source")
    # TVM's C printer emits OpenCL-style vector types, so vectorization is off (gcc
    # vectorizes the scalar lane loops); StorageRewrite would merge the stack arrays
    # into new allocations without their disable_lower_builtin annotation.
    config = {"tirx.disable_vectorize": True, "tirx.disable_storage_rewrite": True}
    try:
        with tvm.transform.PassContext(opt_level=3, config=config):
            lib = tvm.compile(mod, target="c")
    except Exception as error:  # TVM raises RuntimeError/ValueError/TypeError subclasses
        raise ToolchainError(
            f"TVM's C code generation failed: {type(error).__name__}", output=str(error)
        ) from error
    source, _ = insert_openmp_pragmas(str(lib.mod.inspect_source()))
    source = insert_stdio(insert_atomics_prelude(insert_microkernel_prelude(source)))
    return insert_special_float_constants(insert_half_typedef(source))


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
        ToolchainError: TVM's code generation failed, or the compiler is
            missing or failed (its message, the source path).
    """
    names = _check_module(mod, "build_c")
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
        ToolchainError: LLVM code generation or the link failed.
    """
    names = _check_module(mod, "build_llvm")
    out = _output_dir(output_dir, "build_llvm")
    tool = toolchain if toolchain is not None else GccToolchain()
    target = llvm_host_target(mcpu)
    source_path = out / f"{name}.ll"
    try:
        lib = tvm.compile(mod, target=target)
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
    library = tool.compile_shared_object(inputs, out / f"{name}.so", options=options)
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
