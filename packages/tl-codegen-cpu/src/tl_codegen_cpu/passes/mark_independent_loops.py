"""`cpu-mark-independent-loops`: tell gcc which vector loops carry no dependence.

TVM's C printer writes a ``T.vectorized`` loop as a plain ``for``. gcc then
vectorizes it only after a run-time check that its pointers do not overlap
("loop versioned for vectorization because of possible aliasing"); on the short
rows of a tile (32 floats: two AVX-512 vectors) that check and the scalar
fallback cost as much as the work (an elementwise add of 32x32 tiles ran at 1.6x
numpy). Kernel parameters never overlap a parameter the kernel writes: the
runtime refuses such calls. So a vector loop whose own accesses prove that no
iteration reads or writes what another one writes gets a marker call, which the
C toolchain turns into ``#pragma GCC ivdep``.

The proof: every buffer the loop touches is a kernel parameter or an
allocation of its own (a view declared on another buffer's memory could alias
it: such loops are left alone); per buffer, every store in the loop body writes
at the same indices, one of which is linear in the loop variable with a non-zero
constant coefficient (each iteration writes its own element), and every load of
that buffer reads at exactly those indices. A one-dimensional buffer may also be
stored at several indices ``c * i + o`` of one coefficient ``c`` whose constant
offsets ``o`` span less than ``|c|`` (a loop over pairs of elements, written by
`thread_lane_pairs`: iteration ``i`` owns elements ``2i`` and ``2i + 1``), each
load reading at one of them. A loop holding a call (atomics, the
micro-kernel, ``printf``), a nested loop, or any other access pattern is left
as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import sym, tirx

from tl_ir.builtin_ops import builtin_op_names
from tl_passes.pass_base import PassContext, PrimFuncPass

#: The marker call the C toolchain rewrites into ``#pragma GCC ivdep``.
INDEPENDENT_LOOP_MARKER = "TL_GCC_IVDEP"

#: Builtins without side effects, evaluated per element. (Bitwise operators and
#: shifts are expression nodes in TVM 0.27, not calls, so they need no entry.)
PURE_CALLS = builtin_op_names(
    "if_then_else",
    "likely",
    "reinterpret",
    "exp",
    "exp2",
    "log",
    "sqrt",
    "rsqrt",
    "fabs",
    "floor",
    "ceil",
    "round",
    "nearbyint",
    "trunc",
    "tanh",
    "sigmoid",
    "pow",
    "isnan",
    "isinf",
    "isfinite",
)


def has_distinct_elements(indices: list[Any], var: Any) -> bool:
    """Whether ``indices`` name a different element for every value of ``var``."""
    for index in indices:
        coefficients = sym.detect_linear_equation(index, [var])
        if len(coefficients) == 2:
            coefficient = coefficients[0]
            if isinstance(coefficient, tirx.IntImm) and int(coefficient.value) != 0:
                return True
    return False


def iterations_are_independent(loop: tirx.For, distinct_buffers: list[Any]) -> bool:
    """Whether no iteration of ``loop`` reads or writes an element another one writes.

    Args:
        loop: the loop.
        distinct_buffers: buffers known not to share memory with one another (the
            kernel's parameters and its own allocations); the loop must touch no other.

    Conservative: False for anything this module's proof does not cover.
    """
    # TVM objects compare by identity with same_as (== builds an expression), so the
    # accesses are kept in lists rather than keyed by buffer.
    stores: list[tuple[Any, list[list[Any]]]] = []
    loads: list[tuple[Any, list[Any]]] = []
    covered = True

    def written_at(data: Any) -> list[list[Any]] | None:
        for stored, indices in stores:
            if stored.same_as(data):
                return indices
        return None

    def visit_store(store: tirx.BufferStore) -> None:
        data = store.buffer
        indices = list(store.indices)
        seen = written_at(data)
        if seen is None:
            stores.append((data, [indices]))
        elif not any(tvm_ffi.structural_equal(known, indices) for known in seen):
            seen.append(indices)  # another element per iteration (`_owns_its_elements`)

    def visit_load(load: Any) -> None:
        loads.append((load.source, list(load.indices)))

    def visit_call(call: tvm.ir.Call) -> None:
        nonlocal covered
        if not isinstance(call.op, tvm.ir.Op) or call.op.name not in PURE_CALLS:
            covered = False

    def visit_other(_node: object) -> None:
        nonlocal covered
        covered = False

    tvm_ffi.structural_walk(
        loop.body,
        [
            (tirx.BufferStore, visit_store),
            (tvm.ir.TensorLoad, visit_load),
            (tvm.ir.Call, visit_call),
            (tirx.For, visit_other),
            (tirx.While, visit_other),
            (tirx.AllocBuffer, visit_other),
            (tirx.DeclBuffer, visit_other),
        ],
        order="pre",
    )
    if not covered or not stores:
        return False
    touched = [data for data, _ in stores] + [data for data, _ in loads]
    if not all(any(data.same_as(known) for known in distinct_buffers) for data in touched):
        return False
    var = loop.loop_var
    if not all(_owns_its_elements(written, var) for _data, written in stores):
        return False
    for data, indices in loads:
        written = written_at(data)
        if written is not None and not any(
            tvm_ffi.structural_equal(known, indices) for known in written
        ):
            return False
    return True


def _owns_its_elements(written: list[list[Any]], var: Any) -> bool:
    """Whether the stores of one buffer at ``written`` (distinct index lists) write
    elements no other value of ``var`` writes: one index list with distinct elements
    per value, or one-dimensional indices ``c * var + o`` of one constant ``c`` whose
    constant offsets ``o`` span less than ``|c|``."""
    if len(written) == 1:
        return has_distinct_elements(written[0], var)
    if any(len(indices) != 1 for indices in written):
        return False
    forms = [sym.detect_linear_equation(indices[0], [var]) for indices in written]
    if any(len(form) != 2 or not isinstance(form[0], tirx.IntImm) for form in forms):
        return False
    stride = int(forms[0][0].value)
    if stride == 0 or any(int(form[0].value) != stride for form in forms):
        return False
    analyzer = sym.Analyzer()
    offsets = [analyzer.simplify(form[1] - forms[0][1]) for form in forms]
    if not all(isinstance(offset, tirx.IntImm) for offset in offsets):
        return False
    values = [int(offset.value) for offset in offsets]
    return max(values) - min(values) < abs(stride)


def distinct_buffers(func: tirx.PrimFunc) -> list[Any]:
    """The parameters of ``func`` and the buffers its body allocates (not its views)."""
    found: list[Any] = list(func.params)

    def visit(alloc: tirx.AllocBuffer) -> None:
        found.append(alloc.buffer)

    tvm_ffi.structural_walk(func.body, (tirx.AllocBuffer, visit), order="pre")
    return found


def mark_independent_vector_loops(stmt: tirx.Stmt, marker: str, buffers: list[Any]) -> tirx.Stmt:
    """Return ``stmt`` with ``Evaluate(call_extern(marker))`` before each vectorized loop
    whose iterations `iterations_are_independent` proves independent (``buffers``: as
    its ``distinct_buffers``)."""

    def mark(loop: tirx.For) -> tirx.Stmt:
        if loop.kind != tirx.ForKind.VECTORIZED or not iterations_are_independent(loop, buffers):
            return loop
        return tirx.SeqStmt([tirx.Evaluate(tirx.call_extern("int32", marker)), loop])

    result: tirx.Stmt = tvm_ffi.structural_map(stmt, (tirx.For, mark), order="post")
    return result


@dataclass(frozen=True)
class CpuMarkIndependentLoopsPass(PrimFuncPass):
    """Insert ``marker()`` calls before vector loops without loop-carried dependence.

    Args:
        marker: the extern function name of the marker call.
    """

    name: ClassVar[str] = "cpu-mark-independent-loops"
    marker: str = INDEPENDENT_LOOP_MARKER

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """Return ``func`` with its provably independent vector loops marked."""
        body = mark_independent_vector_loops(func.body, self.marker, distinct_buffers(func))
        return func if body.same_as(func.body) else func.with_body(body)
