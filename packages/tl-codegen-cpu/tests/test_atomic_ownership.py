"""Grid ownership of atomic addresses: where the atomics' indices prove that no two CPU
threads can meet on an address once the colliding grid axes run serially, the atomics
become plain (vectorized) read-modify-writes; where the proof fails they stay atomic.
Either way, many threads compute what numpy computes."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import tirx

import tl_ir.language as T
import tl_jit
import tl_runtime
from tl_codegen_cpu.lowering import emit_atomic_update
from tl_codegen_cpu.lowering.atomic_ownership import plan_atomic_ownership
from tl_codegen_cpu.passes import CpuLowerLaunchPass
from tl_ir.ops import AtomicOp, describe, is_tile_op
from tl_passes import PassContext

C = tvm.target.Target("c")
#: Enough owner blocks that the default threshold (the host's core count) is met.
OWNER_ROWS = max(16, -(-(os.cpu_count() or 1) // 16))


def summed_slices(k: int, m: int, n: int, block: int = 16) -> Any:
    """TileLang's atomic_add_program: every block adds one (block x block) tile of
    A[bz] into B; blocks with the same (bx, by) but another bz meet on B."""

    @T.prim_func
    def main(A: T.Tensor((k, m, n), "float32"), B: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(m, block), T.ceildiv(n, block), k, threads=32) as (bx, by, bz):
            tile = T.alloc_shared((block, block), "float32")
            T.copy(A[bz, bx * block, by * block], tile)
            for i, j in T.Parallel(block, block):
                T.atomic_add(B[bx * block + i, by * block + j], tile[i, j])

    return main


def split_k_gemm(m: int, n: int, k: int, split: int, block: int = 16, block_k: int = 8) -> Any:
    """A split-k GEMM: the K slices of one output tile (axis bz) add into the same C tile."""
    slice_k = k // split

    @T.prim_func
    def main(
        A: T.Tensor((m, k), "float32"),
        B: T.Tensor((k, n), "float32"),
        Cm: T.Tensor((m, n), "float32"),
    ):
        with T.Kernel(T.ceildiv(n, block), T.ceildiv(m, block), split, threads=128) as (
            bx,
            by,
            bz,
        ):
            a_s = T.alloc_shared((block, block_k), "float32")
            b_s = T.alloc_shared((block_k, block), "float32")
            acc = T.alloc_fragment((block, block), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(slice_k, block_k), num_stages=0):
                T.copy(A[by * block, bz * slice_k + ko * block_k], a_s)
                T.copy(B[bz * slice_k + ko * block_k, bx * block], b_s)
                T.gemm(a_s, b_s, acc)
            T.atomic_add(Cm[by * block, bx * block], acc)

    return main


def overlapping_windows(n: int, stride: int, width: int) -> Any:
    """Block b max-folds A's window [b * stride, b * stride + width) into B: with width >
    stride, neighbouring blocks meet on B, and no grid axis can own it."""

    @T.prim_func
    def main(
        A: T.Tensor((n * stride + width,), "float32"), B: T.Tensor((n * stride + width,), "float32")
    ):
        with T.Kernel(n, threads=32) as bx:
            for i in T.Parallel(width):
                T.atomic_max(B[bx * stride + i], A[bx * stride + i])

    return main


def scattered(n: int, block: int) -> Any:
    """B[Idx[i]] += A[i]: the address comes from memory, so nothing can be proven."""

    @T.prim_func
    def main(
        A: T.Tensor((n,), "float32"), Idx: T.Tensor((n,), "int32"), B: T.Tensor((n,), "float32")
    ):
        with T.Kernel(n // block, threads=32) as bx:
            for i in T.Parallel(block):
                T.atomic_add(B[Idx[bx * block + i]], A[bx * block + i])

    return main


def read_by_every_block(n: int, block: int) -> Any:
    """Each block adds into its own part of B but every block also reads B[0]: B[0] is
    not owned by one thread, so the atomics (and their ordering) must stay."""

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(n // block, threads=32) as bx:
            for i in T.Parallel(block):
                T.atomic_add(B[bx * block + i], A[bx * block + i] + B[0])

    return main


def per_thread_rows(rows: int, k: int) -> Any:
    """Thread tx of block (bx, bk) adds A[bk, row] into B[row], row = bx * 32 + tx: the
    threads of a block are serial loops on one core, so bx owns its 32 rows."""

    @T.prim_func
    def main(A: T.Tensor((k, rows), "float32"), B: T.Tensor((rows,), "float32")):
        with T.Kernel(rows // 32, k, threads=32) as (bx, bk):
            tx = T.get_thread_binding(0)
            T.atomic_add(B[bx * 32 + tx], A[bk, bx * 32 + tx])

    return main


def paired_adds(m: int, n: int, block: int = 16) -> Any:
    """TileLang's atomic_addx2_program: the indices live in local variables first."""

    @T.prim_func
    def main(A: T.Tensor((m, n), "float16"), B: T.Tensor((m, n), "float16")):
        with T.Kernel(T.ceildiv(m, block), T.ceildiv(n, block), threads=32) as (bx, by):
            for i, j in T.Parallel(block, block // 2):
                idx_i = bx * block + i
                idx_j = by * block + j * 2
                T.atomic_addx2(B[idx_i, idx_j], A[idx_i, idx_j])

    return main


def dynamic_rows() -> Any:
    """summed_slices over a symbolic row count: the last row tile may be partial."""
    rows = T.symbolic("rows")

    @T.prim_func
    def main(A: T.Tensor((4, rows, 64), "float32"), B: T.Tensor((rows, 64), "float32")):
        with T.Kernel(T.ceildiv(rows, 16), 4, 4, threads=32) as (bx, by, bz):
            for i, j in T.Parallel(16, 16):
                T.atomic_add(B[bx * 16 + i, by * 16 + j], A[bz, bx * 16 + i, by * 16 + j])

    return main


def block_wide_adds_in_thread_code(rows: int, k: int) -> Any:
    """A kernel naming its thread index whose T.Parallel atomic is block-wide work:
    once per block (not once per thread) after it becomes a plain update."""

    @T.prim_func
    def main(
        A: T.Tensor((k, rows), "float32"),
        B: T.Tensor((rows,), "float32"),
        Seen: T.Tensor((rows,), "float32"),
    ):
        with T.Kernel(rows // 32, k, threads=32) as (bx, bk):
            tx = T.get_thread_binding(0)
            Seen[bx * 32 + tx] = 1.0
            for i in T.Parallel(32):
                T.atomic_add(B[bx * 32 + i], A[bk, bx * 32 + i])

    return main


def _module(func: Any) -> tvm.IRModule:
    return tvm.IRModule({"main": func.with_attr("global_symbol", "main")})


def _launch(func: Any) -> tuple[tirx.Stmt, list[tuple[Any, Any]]]:
    """The body inside a kernel's thread_extent attributes and its grid axes."""
    body = func.body
    blocks: list[tuple[Any, Any]] = []
    while not isinstance(body, tirx.AttrStmt) or body.attr_key != "thread_extent":
        body = body.body
    while isinstance(body, tirx.AttrStmt) and body.attr_key == "thread_extent":
        if str(body.node.thread_tag).startswith("blockIdx"):
            blocks.append((body.node.var, body.value))
        body = body.body
    return body, blocks


def _atomics_left(mod: tvm.IRModule) -> int:
    found: list[Any] = []

    def visit(call: Any) -> None:
        if is_tile_op(call) and isinstance(describe(call), AtomicOp):
            found.append(call)

    tvm_ffi.structural_walk(mod["main"].body, (tvm.ir.Call, visit), order="pre")
    return len(found)


def test_the_reduced_axis_collides_and_the_tile_axes_are_owned() -> None:
    # A band of B (16 rows of 16384 floats, 1 MiB) is too big to revisit per K step:
    # every owned axis is parallel, by (B's columns, its innermost dim) fastest.
    body, blocks = _launch(summed_slices(4, 64, 16384))
    plan = plan_atomic_ownership(body, blocks, [], min_owned_blocks=1)
    assert plan is not None
    assert [str(v.name) for v, _ in plan.serial_blocks] == ["bz"]
    assert [str(v.name) for v, _ in plan.parallel_blocks] == ["by", "bx"]


def test_band_order_when_a_band_fits() -> None:
    # A band (16 rows of 64 floats) fits: only bx is parallel, and inside it each
    # K step (bz) sweeps the band's columns (by innermost).
    body, blocks = _launch(summed_slices(4, 64, 64))
    plan = plan_atomic_ownership(body, blocks, [], min_owned_blocks=1)
    assert plan is not None
    assert [str(v.name) for v, _ in plan.parallel_blocks] == ["bx"]
    assert [str(v.name) for v, _ in plan.serial_blocks] == ["by", "bz"]
    # Too few bx values for the cores: every owned axis stays parallel.
    plan = plan_atomic_ownership(body, blocks, [], min_owned_blocks=5)
    assert plan is not None
    assert [str(v.name) for v, _ in plan.parallel_blocks] == ["by", "bx"]


def test_split_k_serializes_its_k_slices() -> None:
    body, blocks = _launch(split_k_gemm(64, 64, 64, split=4))
    plan = plan_atomic_ownership(body, blocks, [], min_owned_blocks=1)
    assert plan is not None
    # C's row band of one by (16 x 64 floats) fits: by parallel, bz outside bx.
    assert [str(v.name) for v, _ in plan.parallel_blocks] == ["by"]
    assert [str(v.name) for v, _ in plan.serial_blocks] == ["bx", "bz"]


@pytest.mark.parametrize(
    "func",
    [overlapping_windows(32, 16, 32), scattered(256, 32), read_by_every_block(256, 32)],
    ids=["overlapping-windows", "index-from-memory", "read-by-every-block"],
)
def test_no_plan_where_blocks_may_meet(func: Any) -> None:
    body, blocks = _launch(func)
    assert plan_atomic_ownership(body, blocks, [], min_owned_blocks=1) is None


def test_thread_indices_are_serial_inside_a_block() -> None:
    func = per_thread_rows(64, 4)
    body, blocks = _launch(func)
    tx = next(v for v in _free_thread_vars(func))
    plan = plan_atomic_ownership(body, blocks, [(tx, 32)], min_owned_blocks=1)
    assert plan is not None
    assert [str(v.name) for v, _ in plan.serial_blocks] == ["bk"]


def _free_thread_vars(func: Any) -> list[Any]:
    found: list[Any] = []

    def visit(attr: Any) -> None:
        if attr.attr_key == "thread_extent" and str(attr.node.thread_tag) == "threadIdx.x":
            found.append(attr.node.var)

    tvm_ffi.structural_walk(func.body, (tirx.AttrStmt, visit), order="pre")
    return found


def test_lower_launch_runs_colliding_axes_serially_inside_the_parallel_loop() -> None:
    mod = CpuLowerLaunchPass(min_owned_blocks=1).run(
        _module(summed_slices(4, 64, 48)), PassContext(target=C)
    )
    loops: list[Any] = []
    tvm_ffi.structural_walk(mod["main"].body, (tirx.For, loops.append), order="pre")
    # Band order: bx parallel; inside, bz outside by.
    assert loops[0].kind == tirx.ForKind.PARALLEL and int(loops[0].extent) == 4
    assert [str(loop.loop_var.name) for loop in loops[1:3]] == ["bz", "by"]
    assert all(loop.kind == tirx.ForKind.SERIAL for loop in loops[1:3])
    assert _atomics_left(mod) == 0


def test_too_few_owner_blocks_keep_the_atomic_grid() -> None:
    mod = CpuLowerLaunchPass(min_owned_blocks=13).run(
        _module(summed_slices(4, 64, 48)), PassContext(target=C)
    )
    assert _atomics_left(mod) == 1
    loops: list[Any] = []
    tvm_ffi.structural_walk(mod["main"].body, (tirx.For, loops.append), order="pre")
    assert int(loops[0].extent) == 4 * 3 * 4


def test_block_local_atomics_are_plain_updates() -> None:
    # One copy per running block, run by one core: no other thread can touch it.
    shared = tirx.decl_buffer((4,), "float32", name="S", scope="shared.dyn")
    assert isinstance(emit_atomic_update(shared, [1], 2.0), tirx.BufferStore)
    memory = tirx.decl_buffer((4,), "float32", name="G")
    assert isinstance(emit_atomic_update(memory, [1], 2.0), tirx.Evaluate)
    assert isinstance(emit_atomic_update(memory, [1], 2.0, owned=True), tirx.BufferStore)


def test_min_owned_blocks_is_validated() -> None:
    with pytest.raises(ValueError, match="min_owned_blocks: expected a positive int"):
        CpuLowerLaunchPass(min_owned_blocks=0)


def _with_threads(count: int, run: Any) -> Any:
    tl_runtime.set_num_threads(count)
    try:
        return run()
    finally:
        tl_runtime.set_num_threads(0)


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize("threads", [1, 4])
def test_owned_atomics_sum_every_slice(target: str, threads: int) -> None:
    k, m, n = 6, 16 * OWNER_ROWS, 64
    kernel = tl_jit.compile(summed_slices(k, m, n), target=target)
    rng = np.random.default_rng(0)
    a = rng.integers(-8, 8, (k, m, n)).astype(np.float32)
    b = rng.integers(-8, 8, (m, n)).astype(np.float32)
    want = b + a.sum(axis=0)
    _with_threads(threads, lambda: kernel(a, b))
    np.testing.assert_array_equal(b, want)  # integers: exact in any order


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_split_k_gemm_on_many_threads(target: str) -> None:
    m, n, k = 16 * OWNER_ROWS, 32, 64
    kernel = tl_jit.compile(split_k_gemm(m, n, k, split=4), target=target)
    rng = np.random.default_rng(1)
    a = rng.integers(-4, 4, (m, k)).astype(np.float32)
    b = rng.integers(-4, 4, (k, n)).astype(np.float32)
    c = np.ones((m, n), np.float32)
    _with_threads(4, lambda: kernel(a, b, c))
    np.testing.assert_array_equal(c, 1 + a @ b)


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_thread_indexed_owned_atomics(target: str) -> None:
    rows, k = 32 * OWNER_ROWS, 5
    kernel = tl_jit.compile(per_thread_rows(rows, k), target=target)
    rng = np.random.default_rng(3)
    a = rng.integers(-8, 8, (k, rows)).astype(np.float32)
    b = np.zeros(rows, np.float32)
    _with_threads(4, lambda: kernel(a, b))
    np.testing.assert_array_equal(b, a.sum(axis=0))


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_block_wide_adds_in_thread_code_run_once_per_block(target: str) -> None:
    rows, k = 32 * OWNER_ROWS, 3
    kernel = tl_jit.compile(block_wide_adds_in_thread_code(rows, k), target=target)
    a = np.random.default_rng(5).integers(-8, 8, (k, rows)).astype(np.float32)
    b, seen = np.zeros(rows, np.float32), np.zeros(rows, np.float32)
    _with_threads(4, lambda: kernel(a, b, seen))
    np.testing.assert_array_equal(b, a.sum(axis=0))
    np.testing.assert_array_equal(seen, np.ones(rows, np.float32))


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_kept_atomics_still_combine_every_update(target: str) -> None:
    n, stride, width = 64, 16, 48
    kernel = tl_jit.compile(overlapping_windows(n, stride, width), target=target)
    a = np.random.default_rng(2).standard_normal(n * stride + width).astype(np.float32)
    b = np.full_like(a, -np.inf)
    _with_threads(4, lambda: kernel(a, b))
    covered = np.zeros_like(a, bool)
    for block in range(n):
        covered[block * stride : block * stride + width] = True
    np.testing.assert_array_equal(b, np.where(covered, a, -np.inf))


def test_generated_c_has_no_compare_and_swap_where_ownership_is_proven() -> None:
    source = tl_jit.compile(summed_slices(4, 16 * OWNER_ROWS, 64), target="c")
    text = source.get_kernel_source()
    assert "tl_atomic_" not in text and "__atomic_compare_exchange_n" not in text


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_indices_held_in_local_variables_are_proven_too(target: str) -> None:
    # Every element is added once: no axis collides, all atomics become plain.
    kernel = tl_jit.compile(paired_adds(64, 96), target=target)
    if target == "c":
        assert "tl_atomic_" not in kernel.get_kernel_source()
    rng = np.random.default_rng(4)
    a = rng.standard_normal((64, 96)).astype(np.float16)
    b = rng.standard_normal((64, 96)).astype(np.float16)
    want = (b.astype(np.float32) + a.astype(np.float32)).astype(np.float16)
    _with_threads(4, lambda: kernel(a, b))
    np.testing.assert_array_equal(b, want)


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_symbolic_grids_keep_their_edge_guards(target: str) -> None:
    # A symbolic grid extent counts as enough blocks; rows past the end stay skipped.
    kernel = tl_jit.compile(dynamic_rows(), target=target)
    if target == "c":
        assert "tl_atomic_" not in kernel.get_kernel_source()
    for rows in (37, 160):
        a = np.random.default_rng(rows).integers(-4, 4, (4, rows, 64)).astype(np.float32)
        b = np.zeros((rows, 64), np.float32)
        _with_threads(4, lambda a=a, b=b: kernel(a, b))
        np.testing.assert_array_equal(b, a.sum(axis=0))


def test_generated_c_keeps_the_compare_and_swap_where_it_is_not() -> None:
    text = tl_jit.compile(scattered(256, 32), target="c").get_kernel_source()
    assert "tl_atomic_add_float32((" in text
    assert "__atomic_compare_exchange_n" in text
