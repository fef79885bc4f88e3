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


def _writer(how: str) -> Any:
    @T.prim_func
    def main(
        Offsets: T.Tensor((4,), "int32"),
        Kept: T.Tensor((4,), "int32"),
        Out: T.Tensor((4,), "int32"),
    ):
        with T.Kernel(1, threads=32) as _bx:
            start = Offsets[0]
            kept = Kept[0]
            if how == "store":
                Offsets[1] = 7
            elif how == "copy":
                T.copy(Out[0:4], Offsets[0:4])
            elif how == "atomic":
                T.atomic_add(Offsets[2], 1)
            Out[0] = start + kept

    return main


def test_a_read_of_memory_the_kernel_writes_is_reported_and_other_reads_are_not() -> None:
    """A value read from a buffer the body writes (by a store, a tile op's written region or
    an atomic) is not known where it is substituted; one from a buffer only read is."""
    for how in ("store", "copy", "atomic"):
        func = _writer(how)
        bindings = ScalarBindings(func.body)
        reads = _scalar_reads(func)
        assert bindings.reads_assigned(bindings.resolve(reads["start"])), how
        assert not bindings.reads_assigned(bindings.resolve(reads["kept"])), how
    quiet = ScalarBindings(_writer("none").body)
    assert not quiet.reads_assigned(quiet.resolve(_scalar_reads(_writer("none"))["start"]))
