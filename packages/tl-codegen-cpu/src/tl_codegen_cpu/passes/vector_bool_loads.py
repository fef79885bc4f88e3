"""`cpu-vector-bool-loads` (llvm): a bool read inside a vectorized loop goes through int8.

TVM's LLVM code generator could not take a vector of bools loaded from a ``bool``
buffer as a value (``T.if_then_else(mask[i], ...)`` over a ``T.vectorized`` loop, as
TileLang's sparse MLA kernels write with a ``bool`` fragment): the build failed with
"Check failed: (a_ty.MatchesCode(DLDataTypeCode::kDLBool))". Each such load is read
as ``int8(mask[i]) != 0``, which it compiles (a bool is stored as one byte, 0 or 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.launch import rebuild_loop
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["CpuVectorBoolLoadsPass", "read_vector_bools_as_bytes"]


def _as_byte_test(load: Any) -> Any:
    if str(load.ty.dtype) != "bool":
        return load
    return tirx.NE(tirx.Cast("int8", load), tirx.const(0, "int8"))


def read_vector_bools_as_bytes(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with every bool load inside a vectorized loop read as ``int8(x) != 0``."""

    def visit(loop: Any) -> Any:
        if loop.kind != tirx.ForKind.VECTORIZED:
            return loop
        body = tvm_ffi.structural_map(loop.body, (tvm.ir.TensorLoad, _as_byte_test), order="post")
        return loop if body.same_as(loop.body) else rebuild_loop(loop, body=body)

    return tvm_ffi.structural_map(stmt, (tirx.For, visit), order="post")


@dataclass(frozen=True)
class CpuVectorBoolLoadsPass(PrimFuncPass):
    """Read bools inside vectorized loops through int8 (module docstring)."""

    name: ClassVar[str] = "cpu-vector-bool-loads"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with bool loads in vectorized loops read as bytes."""
        return read_vector_bools_as_bytes(body)
