"""The C the CPU backend adds to generated sources, kept as C headers in ``tl_codegen_cpu/include/``.

Each header is inserted verbatim (after the source's includes) by `c_patches` when
the source calls what it defines, or compiled on its own for the LLVM path
(`atomics_c_source`). The headers are package data: they ship in the wheel and are
read with `importlib.resources`, once per process.

| header | defines | used by |
| --- | --- | --- |
| ``tl_gemm_f32.h`` | ``tl_f32x{4,8,16}`` vector types, ``tl_gemm_f32x{4,8,16}``, ``TL_GEMM_MAX_ROWS``/``TL_GEMM_MAX_VECTORS`` | the fp32 GEMM micro-kernel on ``c`` |
| ``tl_half.h`` | ``tl_gemm_f16{,r}_f32x{4,8,16}``, ``tl_cvt_*``, ``tl_transpose_f32`` | fp16 GEMMs and row conversions on ``c`` (needs ``tl_gemm_f32.h`` first) |
| ``tl_atomics.h`` | ``tl_atomic_[fetch_]<kind>_<dtype>`` | ``T.atomic_*`` on ``c`` and ``llvm`` |
| ``tl_workspace.h`` | ``tl_c_alloc_workspace``/``tl_c_free_workspace`` | ``T.alloc_global`` on ``c`` |
| ``tl_checked.h`` | ``tl_rt_report_out_of_bounds`` and its context slot | checked mode on ``c`` and ``llvm`` |
| ``tl_print.h`` | ``tl_print_f64`` | ``T.print`` of a float on ``c`` and ``llvm`` (printf called as variadic) |

``tl_atomics.h`` spells its functions' storage class ``TL_ATOMIC_STORAGE``, the one
placeholder: `atomics_c_source` substitutes it (``static inline`` on ``c``, a
hidden-visibility definition for the object the LLVM path links in); compiled on its
own the header needs ``-DTL_ATOMIC_STORAGE=...``.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

#: The headers in ``tl_codegen_cpu/include/``.
C_HEADERS: tuple[str, ...] = (
    "tl_gemm_f32.h",
    "tl_half.h",
    "tl_atomics.h",
    "tl_workspace.h",
    "tl_checked.h",
    "tl_print.h",
)

#: The token of ``tl_atomics.h`` standing for its functions' storage class.
ATOMIC_STORAGE_PLACEHOLDER = "TL_ATOMIC_STORAGE"


@cache
def c_header(name: str) -> str:
    """The text of the header ``name`` (one of `C_HEADERS`).

    Raises:
        ValueError: ``name`` is not one of `C_HEADERS`.
    """
    if name not in C_HEADERS:
        raise ValueError(f"c_header name: expected one of {C_HEADERS}, got {name!r}")
    return (resources.files("tl_codegen_cpu") / "include" / name).read_text(encoding="utf-8")


def microkernel_prelude() -> str:
    """``tl_gemm_f32.h``: the fp32 GEMM micro-kernel and its ``tl_f32x<lanes>`` types."""
    return c_header("tl_gemm_f32.h")


def half_prelude() -> str:
    """``tl_half.h``: fp16 conversions and the fp16-input micro-kernels (after `microkernel_prelude`)."""
    return c_header("tl_half.h")


def workspace_prelude() -> str:
    """``tl_workspace.h``: the host allocators ``T.alloc_global`` buffers use on ``c``."""
    return c_header("tl_workspace.h")


def checked_c_source(storage: str = "static") -> str:
    """``tl_checked.h`` with its function's storage class ``storage`` (checked mode)."""
    return f"#define TL_CHECKED_STORAGE {storage}\n" + c_header("tl_checked.h")


def print_c_source(storage: str = "static inline") -> str:
    """``tl_print.h`` with its function's storage class ``storage`` (``T.print`` of a
    float: ``static inline`` in ``c`` sources, hidden visibility for ``llvm``).

    Raises:
        ValueError: ``storage`` is empty.
    """
    if not storage.strip():
        raise ValueError("print_c_source storage: expected a C storage class, got ''")
    return f"#define TL_PRINT_STORAGE {storage}\n" + c_header("tl_print.h")


def atomics_c_source(storage: str = "static inline") -> str:
    """``tl_atomics.h`` with its functions' storage class ``storage``.

    ``"static inline"`` for the C path's prelude; an exported, hidden-visibility
    form (``__attribute__((visibility("hidden")))``) for the object the LLVM
    path links in.

    Raises:
        ValueError: ``storage`` is empty.
    """
    if not storage.strip():
        raise ValueError("atomics_c_source storage: expected a C storage class, got ''")
    return c_header("tl_atomics.h").replace(ATOMIC_STORAGE_PLACEHOLDER, storage)
