"""Textual fixes of the C that TVM's C printer writes, so gcc compiles it as intended.

Each function takes and returns the C source; `patch_c_source` applies them
all in order. TVM prints a parallel loop as a serial ``for`` after the marker
call `cpu-mark-parallel-loops` put before it (the marker line becomes
``#pragma omp parallel for``), declares every extern it calls (the micro-kernel,
atomics and ``printf`` declarations are replaced by their definitions or
headers), names fp16 ``half``, prints special float values as bare names and
rounds float constants to seven digits (`cpu-exact-float-constants` marks those,
replaced here by exact hexadecimal literals).
"""

from __future__ import annotations

import re

from tl_codegen_cpu.c_headers import (
    atomics_c_source,
    checked_c_source,
    half_prelude,
    microkernel_prelude,
    print_c_source,
    workspace_prelude,
)
from tl_codegen_cpu.passes import (
    EXACT_FLOAT_PREFIX,
    INDEPENDENT_LOOP_MARKER,
    PARALLEL_FOR_MARKER,
)
from tl_codegen_cpu.passes.exact_float_constants import hex_float_literal

_MARKER_BEFORE_LOOP = re.compile(
    rf"^(?P<indent>[ \t]*){PARALLEL_FOR_MARKER}\(\);\n(?P=indent)for \(", re.MULTILINE
)
_LEFTOVER_MARKER = re.compile(rf"^[ \t]*{PARALLEL_FOR_MARKER}\(\);\n", re.MULTILINE)
_MARKER_DECLARATION = re.compile(rf"^.*\b{PARALLEL_FOR_MARKER}\(\);\n", re.MULTILINE)
_IVDEP_BEFORE_LOOP = re.compile(
    rf"^(?P<indent>[ \t]*){INDEPENDENT_LOOP_MARKER}\(\);\n(?P=indent)for \(", re.MULTILINE
)
_LEFTOVER_IVDEP = re.compile(rf"^[ \t]*{INDEPENDENT_LOOP_MARKER}\(\);\n", re.MULTILINE)
_IVDEP_DECLARATION = re.compile(rf"^.*\b{INDEPENDENT_LOOP_MARKER}\(\);\n", re.MULTILINE)
_MICROKERNEL_DECLARATION = re.compile(
    r"^TVM_DLL int32_t tl_(?:gemm_(?:f16r?_)?f32x\d+|cvt_\w+|transpose_f32)\(.*\);\n",
    re.MULTILINE,
)
_HALF_CALL = re.compile(
    r"\btl_(?:gemm_f16r?_f32x\d+|cvt_f16_to_f32(?:_t)?|cvt_f32_to_f16|transpose_f32)\("
)
_ATOMIC_DECLARATION = re.compile(
    r'^(?:#ifdef __cplusplus\nextern "C"\n#endif\n)?'
    r"TVM_DLL (?:u?int32_t|u?int64_t|float|double) tl_atomic_\w+\(.*\);\n",
    re.MULTILINE,
)
_PRINTF_DECLARATION = re.compile(
    r'^(?:#ifdef __cplusplus\nextern "C"\n#endif\n)?TVM_DLL int32_t (printf|fflush|tl_print_f64)\(.*\);\n',
    re.MULTILINE,
)
_EXACT_FLOAT_CALL = re.compile(
    rf"\b{EXACT_FLOAT_PREFIX}f(?:32_[0-9a-f]{{8}}|64_[0-9a-f]{{16}})\(\)"
)
_EXACT_FLOAT_DECLARATION = re.compile(
    r'^(?:#ifdef __cplusplus\nextern "C"\n#endif\n)?'
    rf"TVM_DLL (?:float|double) {EXACT_FLOAT_PREFIX}f(?:32|64)_[0-9a-f]+\(\);\n",
    re.MULTILINE,
)
_LAST_INCLUDE = re.compile(r"^#include .*\n(?!#include)", re.MULTILINE)


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


def insert_ivdep_pragmas(source: str) -> tuple[str, int]:
    """Replace each independent-loop marker line before a ``for`` with ``#pragma GCC ivdep``.

    Markers whose loop the printer did not write as a ``for`` are dropped, and so is
    the marker's extern declaration.

    Returns:
        The rewritten source and the number of pragmas inserted.
    """
    rewritten, count = _IVDEP_BEFORE_LOOP.subn(
        lambda match: f"{match['indent']}#pragma GCC ivdep\n{match['indent']}for (", source
    )
    rewritten = _LEFTOVER_IVDEP.sub("", rewritten)
    rewritten = _IVDEP_DECLARATION.sub("", rewritten)
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
    """Add the C GEMM micro-kernel (and fp16 conversion) definitions when ``source`` calls them.

    TVM declares every extern it calls as an exported ``TVM_DLL`` function;
    those declarations of ``tl_gemm_f32x*`` are removed and the static inline
    definitions (``include/tl_gemm_f32.h``, and ``include/tl_half.h`` when it calls a
    half-input kernel or conversion) go after the includes.
    """
    if not any(name in source for name in ("tl_gemm_", "tl_cvt_", "tl_transpose_")):
        return source
    source = _MICROKERNEL_DECLARATION.sub("", source)
    prelude = microkernel_prelude()
    if _HALF_CALL.search(source):
        prelude += half_prelude()
    return _after_includes(source, prelude)


def insert_atomics_prelude(source: str) -> str:
    """Add the ``tl_atomic_*`` definitions (and drop TVM's declarations) when ``source`` uses them."""
    if "tl_atomic_" not in source:
        return source
    source = _ATOMIC_DECLARATION.sub("", source)
    return _after_includes(source, atomics_c_source())


def insert_stdio(source: str) -> str:
    """Use ``<stdio.h>``'s ``printf``/``fflush`` and ``tl_print.h``'s ``tl_print_f64``
    (T.print) instead of TVM's extern declarations."""
    if not _PRINTF_DECLARATION.search(source):
        return source
    source = _PRINTF_DECLARATION.sub("", source)
    prelude = "#include <stdio.h>\n"
    if "tl_print_f64" in source:
        prelude += print_c_source()
    return _after_includes(source, prelude)


_WORKSPACE_CALL = re.compile(r"\bTVMBackend(Alloc|Free)Workspace\(")


def insert_workspace_allocator(source: str) -> str:
    """Route TVM's workspace calls (``T.alloc_global`` buffers) to static host allocators
    defined in the library itself (``include/tl_workspace.h``), so it needs no libtvm_runtime.

    TVM's C printer calls libtvm_runtime's ``TVMBackendAllocWorkspace``/
    ``TVMBackendFreeWorkspace``, which a deployment without apache-tvm lacks; a ``c``
    kernel's workspace is host memory (64-byte aligned, as the runtime's context helper
    allocates for ``llvm``).
    """
    if not _WORKSPACE_CALL.search(source):
        return source
    source = _WORKSPACE_CALL.sub(lambda match: f"tl_c_{match[1].lower()}_workspace(", source)
    return _after_includes(source, workspace_prelude())


_CHECKED_DECLARATION = re.compile(
    r"^TVM_DLL int32_t tl_rt_report_out_of_bounds\(.*\);\n", re.MULTILINE
)


def insert_checked_prelude(source: str) -> str:
    """Checked mode: define ``tl_rt_report_out_of_bounds`` and its slot (``tl_checked.h``)
    in place of TVM's extern declaration, when ``source`` calls it."""
    if not _CHECKED_DECLARATION.search(source):
        return source
    source = _CHECKED_DECLARATION.sub("", source)
    return _after_includes(source, checked_c_source())


def insert_exact_float_constants(source: str) -> str:
    """Replace each exact-constant marker call (`cpu-exact-float-constants`) by its
    hexadecimal float literal, in parentheses, and drop the markers' declarations."""
    source = _EXACT_FLOAT_DECLARATION.sub("", source)
    return _EXACT_FLOAT_CALL.sub(lambda m: f"({hex_float_literal(m[0][:-2])})", source)


_UINT16_VIEW_ACCESS = re.compile(r"\(\(uint16_t\*\)(\w+)\)\[")

#: `cpu-float16-bits` reads and writes fp16 memory through ``uint16`` views, which
#: TVM prints as ``((uint16_t*)x_ptr)[i]``; the same memory is also accessed as
#: ``half``, so under C's strict aliasing gcc may reorder the two (it did: a store
#: of a ``half`` moved after the ``uint16_t`` load of the same element).
UINT16_ALIAS_TYPEDEF = "typedef uint16_t __attribute__((__may_alias__)) tl_u16_alias;\n"


def insert_uint16_alias_views(source: str) -> str:
    """Make ``uint16`` view accesses of other-typed memory may-alias accesses."""
    rewritten, count = _UINT16_VIEW_ACCESS.subn(r"((tl_u16_alias*)\1)[", source)
    return _after_includes(rewritten, UINT16_ALIAS_TYPEDEF) if count else source


def patch_c_source(source: str) -> str:
    """Apply every fix of this module to TVM's C ``source`` and return the result."""
    source = insert_uint16_alias_views(insert_exact_float_constants(source))
    source = insert_checked_prelude(source)
    source, _ = insert_openmp_pragmas(source)
    source, _ = insert_ivdep_pragmas(source)
    source = insert_workspace_allocator(source)
    source = insert_stdio(insert_atomics_prelude(insert_microkernel_prelude(source)))
    return insert_special_float_constants(insert_half_typedef(source))
