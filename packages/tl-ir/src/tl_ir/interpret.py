"""A slow reference interpreter of tile-level IR, in numpy: the executable meaning of
the kernel language, used as an oracle by tests (never a compilation path).

Scope: the statements and expressions `tl_ir.language` produces (launch attributes,
allocations, loops of every kind, ``if``/``while``, stores, the ``tl.*`` tile ops, the
math intrinsics: `interpret_math`, integer bit operations up to 64 bits, vector values:
`interpret_vectors`). Arithmetic is the CPU targets' (`interpret_scalars`): every float
operation rounded to its dtype (IEEE, no exception), integers wrapped with division
defined for 0 and -1; scalar arguments are checked and rounded as a compiled call
checks them (`interpret_args`). Blocks run one after another; thread indices are iterated
only when the kernel reads them, which is rejected together with tile ops (those are
block-collective). A scalar atomic outside a ``T.Parallel`` loop is each thread's own
update (TileLang's element atomic): it is applied once per thread the block runs
without iterating. Anything else raises ``NotImplementedError`` naming the node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.device_asserts import device_assert_of
from tl_ir.dtypes import compute_dtype
from tl_ir.interpret_args import bind_arguments
from tl_ir.interpret_math import MATH_CALLS, math_call
from tl_ir.interpret_scalars import (
    ARITHMETIC,
    BINARY,
    BITWISE,
    arithmetic,
    bitwise,
    cast_value,
    dtype_of,
    element_dtype,
    reinterpret_bits,
    wrap,
)
from tl_ir.interpret_tile_ops import TileOpInterpreter
from tl_ir.interpret_vectors import (
    Vector,
    broadcast,
    element_places,
    lanes_of,
    lanewise,
    ramp,
    shuffle,
)
from tl_ir.launch import LOOP_KIND_KEY
from tl_ir.ops import (
    AtomicOp,
    Region,
    describe,
    is_tile_op,
    viewed_buffer,
)

__all__ = ["run"]

_THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
#: The exception an ``AssertStmt`` of each kind raises, as tvm-ffi raises it from a
#: compiled call.
_ASSERTION_KINDS: dict[str, type[Exception]] = {
    "RuntimeError": RuntimeError,
    "ValueError": ValueError,
    "TypeError": TypeError,
    "AssertionError": AssertionError,
}


class _Interpreter(TileOpInterpreter):
    def __init__(self) -> None:
        self.env: dict[Any, Any] = {}
        self.arrays: dict[Any, np.ndarray[Any, Any]] = {}
        # Threads of the block the body runs for at once (thread indices it never
        # reads), and how many T.Parallel loops enclose the current statement.
        self.block_threads = 1
        self.parallel_depth = 0

    # ------------------------------------------------------------ expressions
    def value(self, expr: Any) -> Any:
        if isinstance(expr, bool | int | float):
            return expr
        kind = type(expr).__name__
        if kind == "IntImm":
            return int(expr.value)
        if kind == "FloatImm":  # the value its dtype holds (a float32 literal is rounded)
            return cast_value(float(expr.value), dtype_of(expr))
        if kind == "StringImm":
            return str(expr.value)
        if kind == "Var":
            if expr in self.env:
                return self.env[expr]
            raise NotImplementedError(f"interpret: unbound variable {expr}")
        if kind in BINARY:
            return lanewise(BINARY[kind], self.value(expr.a), self.value(expr.b))
        if kind in ARITHMETIC or kind in BITWISE:
            a, b, dtype = self.value(expr.a), self.value(expr.b), element_dtype(dtype_of(expr))
            if kind in ARITHMETIC:
                return lanewise(lambda x, y: arithmetic(kind, x, y, dtype), a, b)
            return lanewise(lambda x, y: bitwise(kind, x, y, dtype, expr), a, b)
        if kind == "BitwiseNot":
            dtype = element_dtype(dtype_of(expr))
            return lanewise(lambda x: wrap(~wrap(x, dtype), dtype), self.value(expr.a))
        if kind == "Not":
            return lanewise(lambda x: not x, self.value(expr.a))
        if kind == "Cast":
            dtype = element_dtype(dtype_of(expr))
            return lanewise(lambda v: cast_value(v, dtype), self.value(expr.value))
        if kind == "Select":
            return self._select(expr.condition, expr.true_value, expr.false_value)
        if kind in ("TensorLoad", "BufferLoad"):
            array = self.arrays[expr.source]
            places = self._places(expr.source, array, expr.indices, expr)
            if isinstance(places, list):
                return Vector(array[place].item() for place in places)
            return array[places].item()
        if kind == "Ramp":
            base, stride = self.value(expr.base), self.value(expr.stride)
            lanes = int(self.value(expr.lanes))
            return ramp(base, stride, lanes, element_dtype(dtype_of(expr)))
        if kind == "Broadcast":
            return broadcast(self.value(expr.value), int(self.value(expr.lanes)))
        if kind == "Shuffle":
            vectors = [self.value(v) for v in expr.vectors]
            return shuffle(vectors, [int(self.value(i)) for i in expr.indices])
        if kind == "Call":
            return self._call(expr)
        if kind == "Let":  # the body sees the binding; an outer one comes back after
            missing = object()
            outer = self.env.get(expr.var, missing)
            self.env[expr.var] = self.value(expr.value)
            try:
                return self.value(expr.body)
            finally:
                if outer is missing:
                    del self.env[expr.var]
                else:
                    self.env[expr.var] = outer
        raise NotImplementedError(f"interpret: expression {kind} ({expr})")

    def _select(self, condition: Any, true_value: Any, false_value: Any) -> Any:
        """A scalar condition evaluates only the branch it takes; a vector one both."""
        chosen = self.value(condition)
        if not isinstance(chosen, Vector):
            return self.value(true_value if chosen else false_value)
        return lanewise(
            lambda c, t, f: t if c else f, chosen, self.value(true_value), self.value(false_value)
        )

    def _call(self, call: Any) -> Any:
        name = str(call.op.name) if isinstance(call.op, tvm.ir.Op) else str(call.op)
        short = name.split(".")[-1]
        args = list(call.args)
        dtype = element_dtype(dtype_of(call))
        if short == "if_then_else":
            return self._select(args[0], args[1], args[2])
        if short == "reinterpret":
            source = element_dtype(dtype_of(args[0]))
            return lanewise(lambda v: reinterpret_bits(v, source, dtype), self.value(args[0]))
        if short in MATH_CALLS:
            arg_dtypes = [element_dtype(dtype_of(a)) for a in args]
            return lanewise(
                lambda *values: math_call(short, values, arg_dtypes, dtype),
                *(self.value(a) for a in args),
            )
        raise NotImplementedError(f"interpret: call of {name}")

    # ------------------------------------------------------------ statements
    def stmt(self, node: Any) -> None:
        kind = type(node).__name__
        handler = getattr(self, f"_stmt_{kind}", None)
        if handler is None:
            raise NotImplementedError(f"interpret: statement {kind}")
        handler(node)

    def _stmt_SeqStmt(self, node: Any) -> None:
        for child in node.seq:
            self.stmt(child)

    def _stmt_AllocBuffer(self, node: Any) -> None:
        buffer = node.buffer
        shape = tuple(int(self.value(d)) for d in buffer.ty.shape)
        dtype = compute_dtype(str(buffer.ty.dtype))
        # Uninitialized tiles hold NaN (floats) so reading them shows up in results.
        fill: Any = np.nan if dtype.kind == "f" else 0
        self.arrays[buffer] = np.full(shape, fill, dtype=dtype)

    def _stmt_DeclBuffer(self, node: Any) -> None:
        source = viewed_buffer(node)
        if source is None or source not in self.arrays:
            return None
        # A view (T.view / T.reshape / T.Tensor(shape, dtype, data)): the source's
        # memory under another shape and dtype, sharing its elements.
        buffer = node.buffer
        shape = tuple(int(self.value(d)) for d in buffer.ty.shape)
        flat = self.arrays[source].reshape(-1)
        self.arrays[buffer] = flat.view(compute_dtype(str(buffer.ty.dtype))).reshape(shape)
        return None

    def _stmt_BufferStore(self, node: Any) -> None:
        array = self.arrays[node.buffer]
        places = self._places(node.buffer, array, node.indices, node)
        value = self.value(node.value)  # every lane, before any is written
        if not isinstance(places, list):
            if isinstance(value, Vector):
                raise NotImplementedError(
                    f"interpret: a vector value stored at one element of {node.buffer.name!r}"
                )
            array[places] = value
            return
        lanes = lanes_of(value) or len(places)
        if lanes != len(places):
            raise ValueError(
                f"interpret: a {lanes}-lane value stored at {len(places)} elements of "
                f"{node.buffer.name!r} at {_where(node)}"
            )
        values = value if isinstance(value, Vector) else (value,) * lanes
        for place, lane in zip(places, values, strict=True):
            array[place] = lane

    def _places(
        self, buffer: Any, array: Any, indices: Any, node: Any
    ) -> tuple[int, ...] | list[tuple[int, ...]]:
        """The element's index, or for vector indices every lane's, checked (numpy
        would wrap a negative index silently): see `interpret_vectors.element_places`."""
        values = [self.value(i) for i in indices]
        return element_places(buffer.name, array.shape, values, lambda: _where(node))

    def _stmt_Bind(self, node: Any) -> None:
        self.env[node.var] = self.value(node.value)

    def _stmt_LetStmt(self, node: Any) -> None:
        self.env[node.var] = self.value(node.value)
        self.stmt(node.body)

    def _stmt_For(self, node: Any) -> None:
        start = int(self.value(node.min))
        extent = int(self.value(node.extent))
        step = int(self.value(node.step)) if node.step is not None else 1
        kind = node.annotations.get(LOOP_KIND_KEY) if node.annotations else None
        parallel = kind is not None and str(kind) == "parallel"
        self.parallel_depth += parallel
        try:
            for i in range(start, start + extent, step):
                self.env[node.loop_var] = i
                self.stmt(node.body)
        finally:
            self.parallel_depth -= parallel

    def _stmt_AssertStmt(self, node: Any) -> None:
        # A host check (`tl_ir.host_assumes`): raised as the compiled call raises it.
        if not self.value(node.condition):
            text = " ".join(str(part.value) for part in node.message_parts)
            raise _ASSERTION_KINDS.get(str(node.error_kind.value), RuntimeError)(text)

    def _stmt_While(self, node: Any) -> None:
        while self.value(node.condition):
            self.stmt(node.body)

    def _stmt_IfThenElse(self, node: Any) -> None:
        if self.value(node.condition):
            self.stmt(node.then_case)
        elif node.else_case is not None:
            self.stmt(node.else_case)

    def _stmt_AttrStmt(self, node: Any) -> None:
        if node.attr_key != "thread_extent":
            self.stmt(node.body)
            return
        var = node.node.var
        tag = str(node.node.thread_tag)
        extent = int(self.value(node.value))
        if tag in _THREAD_TAGS and not _uses(node.body, var) and not _fetches(node.body):
            self.env[var] = 0
            self.block_threads *= extent
            try:
                self.stmt(node.body)
            finally:
                self.block_threads //= extent
            return
        if tag in _THREAD_TAGS and _has_tile_ops(node.body):
            raise NotImplementedError(
                "interpret: a kernel that reads its thread index and uses tile ops"
            )
        for i in range(extent):
            self.env[var] = i
            self.stmt(node.body)

    def _stmt_Evaluate(self, node: Any) -> None:
        call = node.value
        if is_tile_op(call):
            self.tile_op(describe(call))
            return
        asserted = device_assert_of(call)
        if asserted is not None:
            if not self.value(asserted.condition):
                raise AssertionError(asserted.failure_text())
            return
        if isinstance(call, tvm.ir.Call):
            self.value(call)


def _uses(node: Any, var: Any) -> bool:
    found: list[bool] = []

    def visit(candidate: Any) -> None:
        if candidate.same_as(var):
            found.append(True)

    tvm_ffi.structural_walk(node, (tirx.Var, visit))
    return bool(found)


def _fetches(node: Any) -> bool:
    """Whether ``node`` runs, outside every ``T.Parallel`` loop, an atomic returning its
    previous value: each thread runs it and gets its own, so the threads are iterated
    even when the body never reads its index (in a ``T.Parallel`` loop it runs once
    per element instead)."""
    if node is None:
        return False
    if isinstance(node, tirx.SeqStmt):
        return any(_fetches(child) for child in node.seq)
    if isinstance(node, tirx.For):
        kind = node.annotations.get(LOOP_KIND_KEY) if node.annotations else None
        return not (kind is not None and str(kind) == "parallel") and _fetches(node.body)
    if isinstance(node, tirx.IfThenElse):
        return _fetches(node.then_case) or _fetches(node.else_case)
    if isinstance(node, tirx.Evaluate) and is_tile_op(node.value):
        op = describe(node.value)
        return isinstance(op, AtomicOp) and op.prev is not None
    body = getattr(node, "body", None)
    return isinstance(body, tirx.Stmt) and _fetches(body)


def _has_tile_ops(node: Any) -> bool:
    """Whether ``node`` holds a block-collective tile op (a scalar atomic is each
    thread's own statement, not one)."""
    found: list[bool] = []

    def visit(call: Any) -> None:
        if is_tile_op(call):
            op = describe(call)
            if not (isinstance(op, AtomicOp) and not isinstance(op.value, Region)):
                found.append(True)

    tvm_ffi.structural_walk(node, (tvm.ir.Call, visit))
    return bool(found)


def _where(node: Any) -> str:
    """``file:line`` of a node's source span, or what is known."""
    span = getattr(node, "span", None)
    name = getattr(getattr(span, "source_name", None), "name", None)
    if span is None or not name:
        return "an access the compiler generated (no source line)"
    return f"{name}:{int(span.line)}"


def run(func: Any, args: Sequence[Any]) -> list[Any]:
    """Execute ``func`` on ``args`` (numpy arrays for tensors, numbers for scalars).

    Arrays are updated in place (they are the kernel's buffers); symbolic dims are
    bound from the arrays' shapes.

    Args:
        func: a PrimFunc produced by ``@T.prim_func``.
        args: one value per parameter, in order: for a tensor, a numpy array (a
            bfloat16/float8 one: ml_dtypes or its unsigned-int bits) or a CPU torch
            tensor; for a scalar, a number checked and rounded to its dtype as a
            compiled call does (`tl_ir.interpret_args.bind_arguments`).

    Returns:
        ``args`` (arrays updated in place).

    Raises:
        ValueError: wrong argument count, shape or dtype; a scalar out of its dtype's
            range.
        TypeError: a scalar of the wrong kind (a float for an int parameter...).
        IndexError: an element index outside its buffer (names the buffer, the index,
            the extent and the kernel's file:line).
        NotImplementedError: a construct the interpreter does not cover.
    """
    params = list(func.params)
    if len(args) != len(params):
        raise ValueError(f"run: expected {len(params)} arguments, got {len(args)}")
    interp = _Interpreter()
    bind_arguments(func, args, interp.env, interp.arrays)
    interp.stmt(func.body)
    return list(args)
