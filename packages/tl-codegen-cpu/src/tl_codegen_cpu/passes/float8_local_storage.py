"""Thread-local float8 tiles stored as bytes (part of `cpu-legalize-float8`).

A float8 tile allocated inside the kernel (a fragment or local tile that a kernel
fills, masks and copies out, as TileLang's fp8 cast examples do) reaches TVM's
build as a float8 buffer. TVM's float8 legalization then widens such a buffer to
float32 and converts it back to one byte when it is stored, with a conversion that
TVM's LLVM code generator refuses once the copy is vectorized (``if_then_else can
only take scalar condition``); it would also round differently from the exact
conversion `cpu-legalize-float8` performs. The tile holds nothing but the byte
codes, so this rewrite retypes it as ``uint8``: a store keeps the code of the
stored value (``reinterpret``), a load reads the code back as float8. Global
buffers (parameters) are left alone; TVM stores them as bytes already.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

__all__ = ["code_of", "store_float8_tiles_as_bytes"]

_ADDRESS_CALLS = frozenset({"tirx.address_of", "tirx.tvm_access_ptr"})


def _scalar(dtype: str) -> str:
    return str(tvm.DataType(dtype).with_lanes(1))


def _lanes(dtype: str) -> int:
    return int(tvm.DataType(dtype).lanes)


def _with_lanes(scalar: str, lanes: int) -> str:
    return scalar if lanes == 1 else f"{scalar}x{lanes}"


def _dtype(expr: Any) -> str:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return "" if dtype is None else str(dtype)


def _float8_tiles(body: tirx.Stmt, float8_dtypes: frozenset[str]) -> list[Any]:
    found: list[Any] = []

    def visit(node: Any) -> None:
        if _scalar(str(node.buffer.dtype)) in float8_dtypes:
            found.append(node.buffer)

    tvm_ffi.structural_walk(body, (tirx.AllocBuffer, visit), order="pre")
    return found


def code_of(value: Any) -> Any:
    """The uint8 code of a float8 ``value``: the operand of a ``reinterpret`` that made
    the value from a code, or the value reinterpreted."""
    lanes = _lanes(_dtype(value))
    call = value if isinstance(value, tvm.ir.Call) else None
    if call is not None and str(getattr(call.op, "name", "")) == "tirx.reinterpret":
        (operand,) = call.args
        if _dtype(operand) == _with_lanes("uint8", lanes):
            return operand
    return tirx.reinterpret(_with_lanes("uint8", lanes), value)


def _address_taken(body: tirx.Stmt, buffer: Any) -> bool:
    """Whether an ``address_of`` / ``tvm_access_ptr`` in ``body`` names ``buffer`` (the
    pointer would see the old element type)."""
    taken = [False]

    def mentions(node: Any) -> None:
        if (isinstance(node, tvm.ir.TensorLoad) and node.source.same_as(buffer)) or (
            isinstance(node, tvm.ir.Var) and node.same_as(buffer)
        ):
            taken[0] = True

    def visit(call: Any) -> None:
        if str(getattr(call.op, "name", "")) in _ADDRESS_CALLS:
            tvm_ffi.structural_walk(call, mentions, order="pre")

    tvm_ffi.structural_walk(body, (tvm.ir.Call, visit), order="pre")
    return taken[0]


def store_float8_tiles_as_bytes(body: tirx.Stmt, float8_dtypes: frozenset[str]) -> tirx.Stmt:
    """Return ``body`` with each tile of a ``float8_dtypes`` type it allocates retyped as a
    ``uint8`` tile (see the module docstring); a tile whose address is taken keeps its
    type."""
    replacement = {
        old: tirx.decl_buffer(
            tuple(old.shape), "uint8", name=str(old.name), scope=str(old.ty.storage_scope)
        )
        for old in _float8_tiles(body, float8_dtypes)
        if not _address_taken(body, old)
    }
    if not replacement:
        return body

    def load(node: Any) -> Any:
        new = replacement.get(node.source)
        if new is None:
            return node
        return tirx.reinterpret(_dtype(node), tirx.BufferLoad(new, list(node.indices)))

    def store(node: Any) -> Any:
        new = replacement.get(node.buffer)
        if new is None:
            return node
        return tirx.BufferStore(new, code_of(node.value), list(node.indices))

    def alloc(node: Any) -> Any:
        new = replacement.get(node.buffer)
        return node if new is None else tirx.AllocBuffer(new)

    return tvm_ffi.structural_map(
        body,
        [(tvm.ir.TensorLoad, load), (tirx.BufferStore, store), (tirx.AllocBuffer, alloc)],
        order="post",
    )
