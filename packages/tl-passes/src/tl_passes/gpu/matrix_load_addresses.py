"""`gpu-matrix-load-addresses`: shared row addresses of matrix loads as access pointers.

The tensor-core lowering (`gemm_mma`) gives each matrix load (``ldmatrix`` on
CUDA) the row address ``address_of(S[..., row, col])``, so the swizzle pass
remaps it like any other index of a swizzled tile. TVM's merging of shared
allocations, at code generation, does not count an ``address_of`` as a use of the
buffer: a tile read only through matrix loads would look dead after it is
written, and another tile could be placed over it. This last pass rewrites those
operands into access pointers (``tvm_access_ptr`` at the buffer's flattening of
the, by then final, index), which the merging counts. Only the arguments of the
traits' `MatrixLoad` functions change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_passes.gpu.traits import PORTABLE_TRAITS, GpuTraits
from tl_passes.pass_base import PassContext, PrimFuncPass


def matrix_load_addresses(body: Any, functions: frozenset[str], row_bytes: int) -> Any:
    """``body`` with the shared ``address_of`` operands of calls to ``functions``
    rewritten as access pointers of ``row_bytes`` (module docstring)."""

    def pointer(argument: Any) -> Any:
        if not isinstance(argument, tvm.ir.Call) or str(argument.op.name) != "tirx.address_of":
            return argument
        load = argument.args[0]
        if not isinstance(load, tvm.ir.TensorLoad):
            return argument
        buffer = load.source
        if str(buffer.ty.storage_scope) not in scopes.SHARED_SCOPES:
            return argument
        (offset,) = buffer.offset_of(list(load.indices))
        lanes = max(1, row_bytes * 8 // max(1, int(tvm.DataType(str(buffer.ty.dtype)).bits)))
        return buffer.access_ptr("r", offset=offset, extent=tirx.IntImm("int32", lanes))

    def rewrite(node: Any) -> Any:
        if not isinstance(node, tvm.ir.Call) or not isinstance(node.op, tvm.ir.Op):
            return node
        if str(node.op.name) != "tirx.call_extern" or not node.args:
            return node
        name = node.args[0]
        if not isinstance(name, tvm.ir.StringImm) or str(name.value) not in functions:
            return node
        args = [node.args[0], *(pointer(a) for a in node.args[1:])]
        return tirx.call_extern(str(node.ty.dtype), str(name.value), *args[1:])

    return tvm_ffi.structural_map(body, rewrite, order="post")


@dataclass(frozen=True)
class GpuMatrixLoadAddressesPass(PrimFuncPass):
    """Rewrite the shared row addresses of the traits' matrix loads as access pointers
    (module docstring); a function without such calls comes back unchanged.

    Args:
        traits: the backend's traits (``matrix_load``; None: nothing to do).
    """

    name: ClassVar[str] = "gpu-matrix-load-addresses"
    traits: GpuTraits = field(default=PORTABLE_TRAITS)

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """``func`` with its matrix-load row addresses as access pointers."""
        load = self.traits.matrix_load
        if load is None:
            return func
        functions = frozenset([*load.functions.values(), *load.transposed_functions.values()])
        return func.with_body(matrix_load_addresses(func.body, functions, load.row_bytes))
