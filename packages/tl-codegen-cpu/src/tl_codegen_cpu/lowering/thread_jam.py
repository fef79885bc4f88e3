"""Several threads of a laned region interleaved (used by `cpu-lower-launch`).

After `thread_lanes` / `thread_lockstep` a GEMV region is a loop over the
threads that each walk their own row of B with vector loads: ``for tn: for bk:
acc_tn += A[..] * B[row tn, ..]``. One row at a time is one stream of memory
requests; a core reaches more of its memory bandwidth with several streams in
flight (a 128 MiB sgemv on this Zen 4: 5.3 ms one row at a time, 4.5 ms four
rows at a time, measured in C; numpy's OpenBLAS kernel also walks four rows
together).

`jam_threads` runs ``U`` consecutive threads in lock step, statement by
statement (an unroll-and-jam of the thread loop): ``for tn_o: for bk: acc_0 +=
..row 4 tn_o..; acc_1 += ..row 4 tn_o + 1..; ...``. Running a region's threads
in any interleaving is a legal schedule of the GPU program (no barrier inside a
region; a race-free region gives every schedule the same values), and each
thread's own statements keep their order. What is proven before:

* the thread loop is serial from 0 with a constant extent that ``U`` divides;
* every thread-local array the body writes is allocated inside it (each of the
  ``U`` copies gets its own) or indexed by the thread (a per-thread array);
* the loops the copies are interleaved inside run alike for every thread
  (bounds free of the thread index and of memory); anything else (an innermost
  loop, a store, a branch) is copied once per thread, in thread order;
* the body has such a loop around a vector loop (a laned walk; otherwise
  nothing is done).

``U`` is the largest of 4, 2 whose copies of the register-held arrays the body
allocates fit in the ISA's vector registers (`VectorISA.num_vector_registers`,
at its width). An array longer than `thread_register_chunks.max_chunks`
registers (half of them) is not register-held (`thread_register_chunks` leaves
it a loop over memory, which a compiler keeps in L1): its copies add memory
traffic, not registers, and do not limit ``U``. Measured on an AVX2 Zen 2 (16 registers of 256 bits, one core, CPU time
against numpy's sgemv, `benchmarks/thread_gemv_cpu.py`): more rows in flight
beat fitting in fewer registers (TileLang's split-K GEMV, 8 registers of sums
per row: one row 1.48x numpy, two rows 1.18x, four rows 1.44x as the copies
spill); `gemv_simt`'s 128-float sums per row (16 registers, held in memory) one
row at a time 1.85x (`c`), four rows 1.18x.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.thread_ir import (
    contains,
    flatten_seq,
    is_local,
    reads_memory,
    uses_any,
)
from tl_codegen_cpu.lowering.thread_register_chunks import max_chunks
from tl_codegen_cpu.lowering.vector_isa import VectorISA
from tl_ir.launch import rebuild_loop
from tl_ir.ops import const_int
from tl_ir.scopes import LOCAL
from tl_passes.buffer_rewrite import substitute_vars

#: The most threads interleaved.
MAX_JAM = 4


def _uniform(stmt: Any, thread: Any) -> bool:
    return (
        isinstance(stmt, tirx.For)
        and stmt.kind == tirx.ForKind.SERIAL
        and not uses_any(stmt.min, {thread})
        and not uses_any(stmt.extent, {thread})
        and not reads_memory(stmt.min)
        and not reads_memory(stmt.extent)
        and contains(stmt.body, tirx.For)
    )


def _has_laned_walk(stmt: Any, thread: Any) -> bool:
    for item in flatten_seq(stmt):
        if _uniform(item, thread):
            inner = flatten_seq(item.body)
            if any(isinstance(s, tirx.For) and s.kind == tirx.ForKind.VECTORIZED for s in inner):
                return True
            if _has_laned_walk(item.body, thread):
                return True
    return False


def _allocated(stmt: Any) -> list[Any]:
    found: list[Any] = []
    tvm_ffi.structural_walk(stmt, (tirx.AllocBuffer, lambda a: found.append(a.buffer)))
    return found


def _buffer_bytes(buffer: Any) -> int | None:
    size = 1
    for dim in buffer.shape:
        extent = const_int(dim)
        if extent is None:
            return None
        size *= extent
    return size * int(tvm.DataType(str(buffer.ty.dtype)).bits) // 8


def _registers_held(sizes: list[int | None], isa: VectorISA) -> int:
    """The vector registers one thread's copy of the arrays of ``sizes`` bytes holds:
    each array its registers at ``isa``'s width, arrays longer than half the
    registers none (they stay in memory; module docstring)."""
    register_bytes = isa.lanes("int8")
    held = 0
    for size in sizes:
        registers = max(1, -(-int(size or 0) // register_bytes))
        if registers <= max_chunks(isa):
            held += registers
    return held


def _copy(stmt: Any, thread: Any, value: Any, allocated: list[Any], tag: int) -> Any:
    """``stmt`` for thread ``value``: its own copy of every array allocated inside."""
    renamed = {
        b: tirx.decl_buffer(b.shape, str(b.ty.dtype), name=f"{b.name}_t{tag}", scope=LOCAL)
        for b in allocated
    }

    def find(buffer: Any) -> Any:
        for old, new in renamed.items():
            if old.same_as(buffer):
                return new
        return None

    def load(node: Any) -> Any:
        new = find(node.source)
        return node if new is None else tirx.BufferLoad(new, list(node.indices))

    def store(node: Any) -> Any:
        new = find(node.buffer)
        return node if new is None else tirx.BufferStore(new, node.value, list(node.indices))

    def alloc(node: Any) -> Any:
        new = find(node.buffer)
        return node if new is None else tirx.AllocBuffer(new)

    copied = tvm_ffi.structural_map(
        stmt,
        [(tvm.ir.TensorLoad, load), (tirx.BufferStore, store), (tirx.AllocBuffer, alloc)],
        order="post",
    )
    return substitute_vars(copied, {thread: value})


def _interleave(copies: list[Any], thread: Any, original: Any) -> list[Any]:
    """The copies (one structure) statement by statement, inside their uniform loops."""
    items = [flatten_seq(c) for c in copies]
    out: list[Any] = []
    for position, item in enumerate(flatten_seq(original)):
        if _uniform(item, thread):
            bodies = [copy[position].body for copy in items]
            inner = _interleave(bodies, thread, item.body)
            out.append(rebuild_loop(items[0][position], body=_seq(inner)))
        else:
            out.extend(copy[position] for copy in items)
    return out


def _seq(stmts: list[Any]) -> Any:
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def jam_threads(loop: Any, isa: VectorISA) -> tuple[Any, int]:
    """``(loop, U)``: the thread loop ``loop`` with ``U`` threads interleaved (module
    docstring), or ``(loop, 1)`` unchanged where a proof fails."""
    extent = const_int(loop.extent)
    thread = loop.loop_var
    body = loop.body
    if loop.kind != tirx.ForKind.SERIAL or const_int(loop.min) != 0 or extent is None:
        return loop, 1
    if not _has_laned_walk(body, thread):
        return loop, 1
    allocated = _allocated(body)
    sizes = [_buffer_bytes(b) for b in allocated]
    if any(s is None for s in sizes):
        return loop, 1
    registers_used = _registers_held(sizes, isa)
    stored: list[Any] = []
    tvm_ffi.structural_walk(body, (tirx.BufferStore, stored.append), order="post")
    for store in stored:
        inside = any(store.buffer.same_as(b) for b in allocated)
        shared_by_threads = not any(uses_any(i, {thread}) for i in store.indices)
        if is_local(store.buffer) and not inside and shared_by_threads:
            return loop, 1  # one array for all threads: copies would collide
    factor = MAX_JAM
    while factor > 1 and (extent % factor or factor * registers_used > isa.num_vector_registers):
        factor //= 2
    if factor == 1:
        return loop, 1
    outer = tirx.Var(f"{thread.name}_outer", "int32")
    copies = [_copy(body, thread, outer * factor + j, allocated, j) for j in range(factor)]
    jammed = _seq(_interleave(copies, thread, body))
    jammed_loop = tirx.For(
        outer, 0, extent // factor, tirx.ForKind.SERIAL, jammed, annotations=loop.annotations
    )
    return jammed_loop, factor
