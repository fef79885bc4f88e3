"""`cpu-call-half-conversions` (``c`` only): contiguous fp16 <-> fp32 row loops become
``tl_cvt_*`` calls of ``include/tl_half.h`` (`tl_codegen_cpu.lowering.half_conversions`
recognizes the loops and builds the calls, and explains why).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.half_conversions import conversion_call
from tl_passes.pass_base import PassContext, PrimFuncPass


@dataclass(frozen=True)
class CpuCallHalfConversionsPass(PrimFuncPass):
    """Row conversions between fp16 and fp32 become ``tl_cvt_*`` calls (``c`` only;
    see `tl_codegen_cpu.lowering.half_conversions`)."""

    name: ClassVar[str] = "cpu-call-half-conversions"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its contiguous fp16 <-> fp32 row loops replaced by calls."""

        def rewrite(loop: Any) -> Any:
            call = conversion_call(loop)
            return loop if call is None else call

        result: tirx.Stmt = tvm_ffi.structural_map(body, (tirx.For, rewrite), order="post")
        return result
