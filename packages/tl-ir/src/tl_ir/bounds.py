"""Compile-time bounds check of constant indices.

An element access whose index and buffer extent are both constants is checked when
the kernel is built: ``A[8]`` on an 8-element buffer is an error naming the buffer,
the index and the extent, instead of a kernel that reads or writes out of bounds at
run time; so is a vector access of constant lanes (a slice ``A[6:10]`` or a
``T.Ramp``) that leaves the buffer (it wrote past a tensor parameter: slices are
not guarded). Tile operands are not element accesses: a tile may reach past its buffer
(the part outside reads zeros and is not written). Indices that depend on run-time
values are left to the kernel.
"""

from __future__ import annotations

import linecache
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError

__all__ = ["check_constant_bounds", "index_problem"]


def _shape(buffer: Any) -> tuple[Any, ...]:
    ty = getattr(buffer, "ty", None)
    return tuple(ty.shape) if isinstance(ty, tirx.BufferType) else ()


def index_problem(buffer: Any, dim: int, first: int, last: int, what: str) -> str | None:
    """What is wrong with indices ``first..last`` (``what``) of ``buffer`` in ``dim``:
    outside ``[-extent, extent)`` of a constant extent; None when they are inside."""
    shape = _shape(buffer)
    if dim >= len(shape):
        return None
    extent = _ops.const_int(shape[dim])
    if extent is None or (first >= -extent and last < extent):
        return None
    return (
        f"{what} of buffer {buffer.name} is out of bounds in dim {dim}: expected "
        f"indices in [-{extent}, {extent}) (a negative index counts from the end), "
        f"got {first if first < -extent else last} "
        f"(buffer shape ({', '.join(str(s) for s in shape)}))"
    )


def _lanes_problem(buffer: Any, dim: int, index: Any) -> str | None:
    """The problem of a vector index (a slice ``A[6:10]`` or a ``T.Ramp``) whose
    constant lanes leave the buffer (a negative lane counts from the end, as a
    negative element index does), or None."""
    base, stride = _ops.const_int(index.base), _ops.const_int(index.stride)
    lanes = _ops.const_int(index.lanes)
    if base is None or stride is None or lanes is None:
        return None
    first, last = sorted((base, base + stride * (lanes - 1)))
    what = f"the {lanes} lanes from {base} by {stride} (a slice or T.Ramp)"
    return index_problem(buffer, dim, first, last, what)


def _float_index_problems(buffer: Any, indices: Any) -> list[str]:
    """An index that is not an integer (``A[1.5]``, ``A[B[0]]`` of a float ``B``) went
    on to the C compiler ("array subscript is not an integer") or TVM's LLVM code; a
    bool one (``A[True]``, ``A[i < 2]``) was used as index 0 or 1."""
    problems = []
    for dim, index in enumerate(indices):
        dtype = str(getattr(getattr(index, "ty", None), "dtype", ""))
        if dtype.startswith(("float", "bfloat", "bool")):
            problems.append(
                f"index {index} of buffer {buffer.name} in dim {dim} is a {dtype} value: "
                'expected an integer index (convert it with T.cast(..., "int32"))'
            )
    return problems


def _element_problems(buffer: Any, indices: Any) -> list[str]:
    problems = _float_index_problems(buffer, indices)
    for dim, index in enumerate(indices):
        value = _ops.const_int(index)
        problem = None
        if value is not None:
            problem = index_problem(buffer, dim, value, value, f"constant index {value}")
        elif isinstance(index, tirx.Ramp):
            problem = _lanes_problem(buffer, dim, index)
        if problem is not None:
            problems.append(problem)
    return problems


def check_constant_bounds(func: Any) -> None:
    """Raise `KernelTypeError` for a constant element index outside its buffer.

    Args:
        func: a PrimFunc (or statement) as `tl_ir.language` builds it.

    Raises:
        KernelTypeError: names the buffer, the dim, the allowed range and the index.
    """
    body = getattr(func, "body", func)
    # The walks' callbacks run under TVM's FFI, which would wrap a raised error:
    # collect what is wrong (with the access's span) and raise afterwards.
    problems: list[tuple[str, Any]] = []

    anchors: list[Any] = []

    def visit_call(call: Any) -> None:
        # Tile operands may reach past their buffer (partial tiles read zeros and skip
        # writes): their anchor loads are not element accesses.
        if isinstance(call.op, tvm.ir.Op) and str(call.op.name) == "tl.region":
            anchors.append(call.args[0])

    def visit_load(load: Any) -> None:
        if not any(anchor.same_as(load) for anchor in anchors):
            found = _element_problems(load.source, load.indices)
        else:
            found = _float_index_problems(load.source, load.indices)
        problems.extend((problem, load.span) for problem in found)

    def visit_store(store: Any) -> None:
        found = _element_problems(store.buffer, store.indices)
        problems.extend((problem, store.span) for problem in found)

    tvm_ffi.structural_walk(body, (tvm.ir.Call, visit_call), order="pre")
    tvm_ffi.structural_walk(body, (tvm.ir.TensorLoad, visit_load), order="pre")
    tvm_ffi.structural_walk(body, (tirx.BufferStore, visit_store), order="pre")
    if problems:
        problem, span = problems[0]
        raise _located(KernelTypeError(problem), span)


def _located(err: KernelTypeError, span: Any) -> KernelTypeError:
    """``err`` located at the access's source line when its span names one (the parser
    gives element accesses spans); else left for the caller to place at the kernel."""
    filename = getattr(getattr(span, "source_name", None), "name", None)
    lineno = getattr(span, "line", None)
    if filename and lineno:
        source_line = linecache.getline(str(filename), int(lineno)) or None
        err.locate(str(filename), int(lineno), source_line)
    return err
