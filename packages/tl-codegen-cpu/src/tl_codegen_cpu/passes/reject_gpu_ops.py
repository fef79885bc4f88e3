"""`cpu-reject-gpu-ops`: GPU-only constructs (Tier 2 in docs/language.md) fail early with a clear error.

On CPU targets there is no faithful meaning for grid-wide barriers,
asynchronous copies or virtual threads. (Warp shuffles are lowered before this
pass by `cpu-lower-warp-shuffles`; one it left is refused here.) (``T.sync_threads``, a
barrier among one block's threads, is kept: `cpu-lower-launch` splits the
block's thread loops there.) This pass raises
`tl_ir.errors.UnsupportedError` naming the construct and the target
(``"T.sync_threads is not supported on target c"``) instead of letting a
later pass or TVM's code generator fail obscurely. Tile ops unknown to
`tl_ir` (``tl.*`` names another package registered) are rejected too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.thread_ir import is_block_barrier
from tl_ir.builtin_ops import builtin_op_name
from tl_ir.device_asserts import DEVICE_ASSERT_OP
from tl_ir.errors import UnsupportedError
from tl_ir.ops import OP_NAMES
from tl_passes.pass_base import PassContext, PrimFuncPass

#: TVM builtins with no CPU meaning -> the kernel-language name users wrote.
GPU_ONLY_BUILTINS: dict[str, str] = {
    builtin_op_name("tvm_warp_shuffle"): "T.shfl_sync (also behind T.shfl_xor and T.warp_reduce_*)",
    builtin_op_name("tvm_warp_shuffle_up"): "T.shfl_up",
    builtin_op_name("tvm_warp_shuffle_down"): "T.shfl_down",
    builtin_op_name("tvm_warp_activemask"): "warp intrinsics",
}

#: TVM 0.27 registers the PTX builtins (``cp.async`` and its commit/wait groups among
#: them) in their own namespace, ``tirx.ptx.``: all of them are GPU-only.
PTX_NAMESPACE = "tirx.ptx."

_LAUNCH_TAGS = {f"{kind}.{axis}" for kind in ("blockIdx", "threadIdx") for axis in "xyz"}


def find_gpu_only(stmt: tirx.Stmt) -> list[str]:
    """The GPU-only constructs used in ``stmt`` (kernel-language names, in program order)."""
    found: list[str] = []

    def visit_call(call: Any) -> None:
        op = call.op
        if not isinstance(op, tvm.ir.Op):
            return
        name = str(op.name)
        if name == "tirx.tvm_storage_sync" and not is_block_barrier(tirx.Evaluate(call)):
            found.append("a grid-wide T.sync_threads / T.sync_grid")
        elif name in GPU_ONLY_BUILTINS:
            found.append(GPU_ONLY_BUILTINS[name])
        elif name.startswith(PTX_NAMESPACE + "cp_async"):
            found.append(f"T.async_copy ({name})")
        elif name.startswith(PTX_NAMESPACE):
            found.append(f"the PTX instruction {name}")
        elif name.startswith("tl.") and name not in OP_NAMES and name != DEVICE_ASSERT_OP:
            found.append(f"T.{name[3:]}")

    def visit_attr(attr: Any) -> None:
        if attr.attr_key == "thread_extent":
            tag = str(attr.node.thread_tag)
            if tag not in _LAUNCH_TAGS:
                found.append(f"thread binding {tag!r}")

    tvm_ffi.structural_walk(
        stmt, [(tvm.ir.Call, visit_call), (tirx.AttrStmt, visit_attr)], order="pre"
    )
    return found


@dataclass(frozen=True)
class CpuRejectGpuOpsPass(PrimFuncPass):
    """Raise `UnsupportedError` for GPU-only constructs (see the module docstring)."""

    name: ClassVar[str] = "cpu-reject-gpu-ops"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` unchanged, or raise.

        Raises:
            UnsupportedError: a GPU-only construct, named with the target kind.
        """
        kind = str(ctx.target.kind.name) if ctx.target is not None else "cpu"
        found = find_gpu_only(body)
        if found:
            raise UnsupportedError(
                f"{found[0]} is not supported on target {kind} "
                f"(kernel {function_name}); it is GPU-only (Tier 2 in docs/language.md)"
            )
        return body
