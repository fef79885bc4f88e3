"""ScalarBindings: let-bound names and scalars stored once are replaced by their
values; a scalar stored twice is left as a read and reported."""

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

import tl_ir.language as T
from tl_ir.scalar_bindings import ScalarBindings


def _kernel() -> Any:
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(2, threads=32) as bx:
            start = bx * 8
            end = start + 16
            moved = bx * 8
            moved = moved + 4
            A[end] = A[start] + A[moved]

    return main


def _scalar_reads(func: Any) -> dict[str, Any]:
    """A read of each scalar the kernel stores, by name."""
    reads: dict[str, Any] = {}

    def visit(store: Any) -> None:
        name = str(store.buffer.name)
        if name != "A":
            reads[name] = tirx.BufferLoad(store.buffer, list(store.indices))

    tvm_ffi.structural_walk(func.body, (tirx.BufferStore, visit), order="pre")
    return reads


def test_once_stored_scalars_resolve_to_their_values() -> None:
    func = _kernel()
    bindings = ScalarBindings(func.body)
    reads = _scalar_reads(func)
    resolved = bindings.resolve(reads["end"] - reads["start"])
    assert not bindings.reads_assigned(resolved)
    simplified = tvm.sym.Analyzer().simplify(resolved)
    assert isinstance(simplified, tirx.IntImm) and int(simplified.value) == 16


def test_a_scalar_stored_twice_stays_a_read_and_is_reported() -> None:
    func = _kernel()
    bindings = ScalarBindings(func.body)
    reads = _scalar_reads(func)
    resolved = bindings.resolve(reads["end"] - reads["moved"])
    assert bindings.reads_assigned(resolved)
    assert "moved" in str(resolved) and "end" not in str(resolved)
    assert not isinstance(tvm.sym.Analyzer().simplify(resolved), tirx.IntImm)
