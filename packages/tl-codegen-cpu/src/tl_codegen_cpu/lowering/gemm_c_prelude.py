"""The C path's GEMM micro-kernel: ``tl_gemm_f32x{4,8,16}`` on GCC vector-extension types.

TVM's C printer cannot print vector types, so on target ``c`` the micro-kernel of
`gemm_microkernel` calls these always-inline C functions for its full fp32 register
tiles (``style="c-vector-extension"``); `c_patches` inserts the definitions
(``include/tl_gemm_f32.h``, `tl_codegen_cpu.c_headers.microkernel_prelude`) when the
source calls them. The constants here are what that header instantiates and
defines; a test checks they agree.
"""

from __future__ import annotations

#: Vector widths (fp32 lanes) ``tl_gemm_f32.h`` instantiates ``TL_GEMM_F32`` for.
C_PRELUDE_LANES: tuple[int, ...] = (4, 8, 16)

#: ``TL_GEMM_MAX_ROWS`` / ``TL_GEMM_MAX_VECTORS`` of ``tl_gemm_f32.h``: the most rows /
#: column vectors of a register tile the C micro-kernels support.
C_MAX_ROWS, C_MAX_VECTORS = 16, 4

__all__ = ["C_MAX_ROWS", "C_MAX_VECTORS", "C_PRELUDE_LANES"]
