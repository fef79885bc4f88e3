"""``T.thread_binding`` loops inside a ``T.Kernel`` become the kernel's thread index.

``tx = T.thread_binding(0, 32, thread="threadIdx.x")`` (or ``for tx in
T.thread_binding(...)``) inside a ``T.Kernel`` that already launches ``threadIdx.x``
names that launched index, as in TileLang: the loop body runs once per thread with
the loop variable equal to the thread index (plus the loop's start), guarded by
``tx < n`` when ``n`` is not the block's extent. `bind_thread_loops` rewrites one
kernel body; `GpuBindThreadLoopsPass` applies it to every launch of a function (a
nested loop bound to a launched tag would otherwise reach TVM's GPU lowering, which
cannot bind one thread index twice).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm_ffi
from tvm import tirx

from tl_ir.errors import UnsupportedError
from tl_passes.buffer_rewrite import substitute_vars
from tl_passes.pass_base import PassContext, PrimFuncPass


def _is_zero(value: Any) -> bool:
    return isinstance(value, tirx.IntImm) and int(value.value) == 0


def bind_thread_loops(
    body: tirx.Stmt, found: dict[str, tuple[Any, Any]], where: str, *, keep_unknown: bool = False
) -> tirx.Stmt:
    """Replace each ``for v in T.thread_binding(n, thread=tag)`` loop of a kernel body by
    its body with ``v`` = the kernel's thread index of that tag, guarded by ``v < n``
    when ``n`` is not the block's extent (the loop runs once per thread, as on a GPU).

    Args:
        body: the statement under the kernel's ``thread_extent`` attributes.
        found: launched thread tag -> (its Var, its extent).
        where: the function's name, for errors.
        keep_unknown: leave a loop on a tag missing from ``found`` as it is (a GPU
            launches it) instead of refusing it.

    Raises:
        UnsupportedError: a loop bound to a thread index the kernel does not launch.
    """
    problems: list[str] = []

    def rewrite(loop: Any) -> Any:
        if loop.kind != tirx.ForKind.THREAD_BINDING or loop.thread_binding is None:
            return loop
        tag = str(loop.thread_binding.thread_tag)
        if tag not in found:
            if keep_unknown:
                return loop
            problems.append(
                f"{where}: T.thread_binding(thread={tag!r}) in a kernel that launches "
                f"{sorted(found) or 'no threads'}"
            )
            return loop
        var, extent = found[tag]
        index = var if _is_zero(loop.min) else var + loop.min
        inner = substitute_vars(loop.body, {loop.loop_var: index})
        if tvm_ffi.structural_equal(loop.extent, extent) and _is_zero(loop.min):
            return inner
        return tirx.IfThenElse(var < loop.extent, inner, None)

    result = tvm_ffi.structural_map(body, (tirx.For, rewrite), order="post")
    if problems:
        raise UnsupportedError(problems[0])
    return result


def _launched_in(stmt: tirx.Stmt) -> dict[str, tuple[Any, Any]]:
    """Every thread tag a ``thread_extent`` attribute in ``stmt`` launches."""
    found: dict[str, tuple[Any, Any]] = {}

    def visit(attr: Any) -> None:
        if attr.attr_key == "thread_extent":
            found.setdefault(str(attr.node.thread_tag), (attr.node.var, attr.value))

    tvm_ffi.structural_walk(stmt, (tirx.AttrStmt, visit), order="pre")
    return found


@dataclass(frozen=True)
class GpuBindThreadLoopsPass(PrimFuncPass):
    """Every launch's ``T.thread_binding`` loops on a tag it launches become that thread
    index (`bind_thread_loops`); a loop on a tag no launch binds is TVM's to launch."""

    name: ClassVar[str] = "gpu-bind-thread-loops"

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """``func`` without ``T.thread_binding`` loops on tags its launches bind."""
        from tl_passes.gpu.launches import map_kernels

        def bind(kernel: tirx.PrimFunc) -> tirx.PrimFunc:
            found = _launched_in(kernel.body)
            return kernel.with_body(
                bind_thread_loops(kernel.body, found, function_name, keep_unknown=True)
            )

        bound, _ = map_kernels(func, bind)
        return bound
