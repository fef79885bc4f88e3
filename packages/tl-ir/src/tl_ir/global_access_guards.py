"""Element accesses of global buffers are guarded by the buffer's bounds, as in TileLang.

TileLang legalizes every load and store of a global buffer whose index it cannot prove
inside the buffer: the store happens only inside, the load reads a safe value (zero,
or the buffer's ``T.annotate_safe_value``) outside. Kernels rely on it: a grid of
``T.ceildiv(M, block)`` blocks writing ``C[bx * block + i]`` from a ``T.Parallel(block)``
loop covers ``M`` rounded up to the block, and without the guard the last block wrote
past the end of ``C`` (a heap overwrite on the CPU targets). Here, as there, each
index of a global element access (per dim) is checked against ``[0, extent)`` with
TVM's analyzer, knowing the ranges of the loops and launched indices around it and the
conditions of the ``if`` statements and ``T.if_then_else`` branches it lies in; the
bounds it cannot prove become the guard. Constant indices are left alone (outside the
buffer they are refused when the kernel is built), and so are vector indices and tile
operands (``T.copy`` and the other tile operations mask partial tiles themselves).
Running it in the front end gives every target, and the reference interpreter, the
same meaning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_ir.index_ranges import TVM_ERRORS, proves, range_analyzer
from tl_ir.scalar_bindings import ScalarBindings

__all__ = ["branch_conditions", "guard_global_accesses"]

#: Calls whose buffer-element arguments name an address or a tile, not a value read.
_ADDRESS_CALLS = ("tl.region", "tirx.address_of", "tl.access_ptr")
_IF_THEN_ELSE = ("prim.if_then_else",)


def _handle(node: Any) -> int:
    return int(node.__chandle__())


def _call_name(call: Any) -> str:
    return str(call.op.name) if isinstance(call.op, tvm.ir.Op) else ""


def _accesses(node: Any) -> list[Any]:
    found: list[Any] = []
    tvm_ffi.structural_walk(
        node, [(tvm.ir.TensorLoad, found.append), (tirx.BufferStore, found.append)]
    )
    return found


def branch_conditions(body: Any) -> dict[int, list[Any]]:
    """Access handle -> the conditions of the branches around it (``if`` statements'
    then and else cases, ``T.if_then_else``'s true and false values)."""
    conditions: dict[int, list[Any]] = {}

    def add(node: Any, condition: Any) -> None:
        for access in _accesses(node):
            conditions.setdefault(_handle(access), []).append(condition)

    def visit_if(branch: Any) -> None:
        add(branch.then_case, branch.condition)
        if branch.else_case is not None:
            add(branch.else_case, tirx.Not(branch.condition))

    def visit_call(call: Any) -> None:
        if _call_name(call) in _IF_THEN_ELSE:
            condition, true_value, false_value = call.args
            add(true_value, condition)
            add(false_value, tirx.Not(condition))

    tvm_ffi.structural_walk(body, [(tirx.IfThenElse, visit_if), (tvm.ir.Call, visit_call)])
    return conditions


def _address_operands(body: Any) -> set[int]:
    operands: set[int] = set()

    def visit_call(call: Any) -> None:
        if _call_name(call) in _ADDRESS_CALLS:
            operands.update(_handle(arg) for arg in call.args if isinstance(arg, tvm.ir.TensorLoad))

    tvm_ffi.structural_walk(body, [(tvm.ir.Call, visit_call)])
    return operands


def _is_constant(index: Any) -> bool:
    varying = False

    def mark(_node: Any) -> None:
        nonlocal varying
        varying = True

    tvm_ffi.structural_walk(index, [(tirx.Var, mark), (tvm.ir.TensorLoad, mark)])
    return not varying


def _conjuncts(condition: Any) -> list[Any]:
    if isinstance(condition, tirx.And):
        return [*_conjuncts(condition.a), *_conjuncts(condition.b)]
    return [condition]


def _proved(
    analyzer: Any, condition: Any, context: Sequence[Any], bindings: ScalarBindings
) -> bool:
    if _proved_as_written(analyzer, condition, context):
        return True
    # A scalar name (``row = bx * block + i``, a one-element local stored once) read in
    # the index: its value, unless that reads memory the kernel writes.
    resolved = bindings.resolve(condition)
    if resolved.same_as(condition) or bindings.reads_assigned(resolved):
        return False
    return _proved_as_written(analyzer, resolved, [bindings.resolve(c) for c in context])


def _proved_as_written(analyzer: Any, condition: Any, context: Sequence[Any]) -> bool:
    if not context:
        return proves(analyzer, condition)
    # The kernel's own guard, written as this one (TVM's analyzer does not use a
    # constraint of floor divisions and remainders it is given, such as an im2col's).
    known = [part for each in context for part in _conjuncts(each)]
    if any(tvm_ffi.structural_equal(condition, part) for part in known):
        return True
    try:
        with analyzer.constraint_scope(tirx.all(*context)):
            return proves(analyzer, condition)
    except TVM_ERRORS:
        return False


def _bounds_guard(
    analyzer: Any, bindings: ScalarBindings, buffer: Any, indices: Any, context: Sequence[Any]
) -> Any:
    """The conjunction of the bounds of ``buffer[indices]`` not proved, or None."""
    ty = getattr(buffer, "ty", None)
    if not isinstance(ty, tirx.BufferType) or scopes.buffer_scope(buffer) != scopes.GLOBAL:
        return None
    shape = list(ty.shape)
    if len(shape) != len(indices):
        return None
    needed: list[Any] = []
    for index, extent in zip(indices, shape, strict=True):
        dtype = tvm.DataType(str(index.dtype))
        if dtype.lanes != 1 or _is_constant(index):
            continue
        index_type = str(dtype)
        bound = extent if str(extent.dtype) == index_type else tirx.Cast(index_type, extent)
        for condition in (index >= tirx.const(0, index_type), index < bound):
            if not _proved(analyzer, condition, context, bindings):
                needed.append(condition)
    if not needed:
        return None
    return tirx.all(*needed) if len(needed) > 1 else needed[0]


def _safe_value(buffer: Any, safe_values: Sequence[tuple[Any, Any]]) -> Any:
    for known, value in safe_values:
        if known.same_as(buffer):
            return value
    return tirx.const(0, str(buffer.ty.dtype))


def guard_global_accesses(body: Any, safe_values: Sequence[tuple[Any, Any]] = ()) -> Any:
    """``body`` with every global element access its analyzer cannot prove inside the
    buffer guarded (module docstring).

    Args:
        body: a kernel body as `tl_ir.language` builds it.
        safe_values: ``(buffer, value)`` pairs from ``T.annotate_safe_value``: a guarded
            load of ``buffer`` reads ``value`` outside it (zero for other buffers).

    Returns:
        the body with loads outside their buffer reading the safe value and stores
        outside it skipped (the same object when every access is proved inside).
    """
    analyzer = range_analyzer(body)
    bindings = ScalarBindings(body)
    context = branch_conditions(body)
    skipped = _address_operands(body)

    def guard_load(load: Any) -> Any:
        if _handle(load) in skipped:
            return load
        conditions = context.get(_handle(load), [])
        guard = _bounds_guard(analyzer, bindings, load.source, load.indices, conditions)
        if guard is None:
            return load
        return tirx.if_then_else(guard, load, _safe_value(load.source, safe_values))

    def guard_store(store: Any) -> Any:
        conditions = context.get(_handle(store), [])
        guard = _bounds_guard(analyzer, bindings, store.buffer, store.indices, conditions)
        if guard is None:
            return store
        # What the store reads is read only inside its guard.
        for access in _accesses(store.value) + [i for x in store.indices for i in _accesses(x)]:
            context.setdefault(_handle(access), []).append(guard)
        return tirx.IfThenElse(guard, store, None)

    def keep_address_operands(call: Any) -> Any:
        # An address operand whose own indices read memory was rebuilt, so it was not
        # recognised above: take its guard off again (a tile is masked by its op).
        if _call_name(call) not in _ADDRESS_CALLS:
            return call
        args = [_unguarded(arg) for arg in call.args]
        if all(new.same_as(old) for new, old in zip(args, call.args, strict=True)):
            return call
        # ``tvm.ir.Call`` (TVM 0.27 moved ``tirx.Call`` there); the result type is kept.
        return tvm.ir.Call(call.op, args, attrs=call.attrs, span=call.span, ret_ty=call.ty)

    # Stores first: their handles (the branch conditions' keys) change once a load in
    # their value is rewritten.
    body = tvm_ffi.structural_map(body, (tirx.BufferStore, guard_store), order="post")
    return tvm_ffi.structural_map(
        body, [(tvm.ir.TensorLoad, guard_load), (tvm.ir.Call, keep_address_operands)], order="post"
    )


def _unguarded(arg: Any) -> Any:
    guarded = isinstance(arg, tvm.ir.Call) and _call_name(arg) in _IF_THEN_ELSE
    if guarded and isinstance(arg.args[1], tvm.ir.TensorLoad):
        return arg.args[1]
    return arg
