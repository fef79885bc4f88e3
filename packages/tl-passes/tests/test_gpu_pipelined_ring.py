"""``T.Pipelined`` rings of async copies, and the XOR-swizzled shared tiles, as the
shared GPU passes produce them for a target whose traits declare async copies."""

from __future__ import annotations

from typing import Any

import pytest
import tvm
import tvm_ffi
from tvm import tirx
from tvm.target import Target

import tl_ir.language as T
from tl_backend_api import pipeline_from_passes
from tl_ir.launch import kernel_launch
from tl_ir.layout import (
    make_half_bank_swizzled_layout,
    make_linear_layout,
    make_swizzled_layout,
)
from tl_passes.gpu import AsyncCopy, GpuTraits, SwizzledOperands, gpu_passes, is_barrier
from tl_passes.gpu.pipelined_ring import RING_BUFFERS_KEY
from tl_passes.gpu.swizzle import SWIZZLE_ATTR, swizzled_index

COPY = AsyncCopy(
    copies={16: "cp16", 8: "cp8", 4: "cp4"}, commit="commit", wait="wait", max_pending=7
)
#: A target with async copies and swizzled 16/8-bit gemm operands.
ASYNC = GpuTraits(
    name="async-gpu",
    warp_size=32,
    async_copy=COPY,
    swizzled_operands=SwizzledOperands(dtype_bits=frozenset({16, 8})),
)
#: The same target without async copies or swizzles (HIP, Metal, WebGPU today).
IN_ORDER = GpuTraits(name="in-order-gpu", warp_size=32)
#: Async copies only on archs >= 80 (as CUDA declares them).
ARCH_GATED = GpuTraits(
    name="gated-gpu",
    warp_size=32,
    async_copy=AsyncCopy(
        copies={16: "cp16"},
        commit="commit",
        wait="wait",
        available=lambda target: str(target.attrs.get("arch", "")) >= "sm_80",
    ),
)


def gemm(
    M: int = 256,
    N: int = 256,
    K: int = 256,
    block_M: int = 128,
    block_N: int = 128,
    block_K: int = 32,
    num_stages: int = 3,
    dtype: str = "float16",
    accum: str = "float32",
    layouts: Any = None,
    **schedule: Any,
) -> Any:
    """TileLang's example GEMM (128 threads), with an optional manual schedule."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum)
            if layouts is not None:
                T.annotate_layout(layouts(A_shared, B_shared))
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages, **schedule):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def lower(func: Any, traits: GpuTraits = ASYNC, arch: str = "sm_80") -> Any:
    pipeline = pipeline_from_passes("gpu-test", gpu_passes(traits))
    return pipeline.run(tvm.IRModule({"main": func}), Target({"kind": "cuda", "arch": arch}))[
        "main"
    ]


def calls(stmt: Any) -> list[tuple[str, Any]]:
    """(name, call) of every extern call in ``stmt``, in program order."""
    found: list[tuple[str, Any]] = []

    def visit(node: Any) -> None:
        if isinstance(node, tvm.ir.Call) and str(getattr(node.op, "name", "")) == (
            "tirx.call_extern"
        ):
            found.append((str(node.args[0].value), node))

    tvm_ffi.structural_walk(stmt, (tvm.ir.Call, visit), order="pre")
    return found


def top_level(func: Any) -> tuple[list[Any], Any]:
    """The kernel's statements around the ring loop, and the loop."""
    loops: list[Any] = []

    def visit(loop: Any) -> None:
        if loop.annotations is not None and RING_BUFFERS_KEY in loop.annotations:
            loops.append(loop)

    tvm_ffi.structural_walk(func.body, (tirx.For, visit), order="pre")
    assert len(loops) == 1
    return loops, loops[0]


def allocated(func: Any) -> dict[str, Any]:
    """The buffers ``func`` allocates, by name."""
    found: dict[str, Any] = {}

    def visit(alloc: Any) -> None:
        found.setdefault(str(alloc.buffer.name), alloc.buffer)

    tvm_ffi.structural_walk(func.body, (tirx.AllocBuffer, visit), order="pre")
    return found


def flat(stmt: Any) -> list[Any]:
    return list(stmt.seq) if isinstance(stmt, tirx.SeqStmt) else [stmt]


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_a_k_stage_ring_has_k_minus_1_prologue_stages_a_wait_and_a_commit_per_iteration(
    stages: int,
) -> None:
    func = lower(gemm(num_stages=stages))
    _, loop = top_level(func)
    names = [name for name, _ in calls(func.body)]
    in_loop = [name for name, _ in calls(loop.body)]
    # Prologue: k-1 stages of 16-byte copies of A and B (proven inside: no zero fill).
    prologue = names[: names.index("wait")]
    assert prologue.count("commit") == stages - 1
    assert prologue.count("cp16") == (stages - 1) * 2
    # Steady state: wait(k-2) and a barrier first, the refill, one commit last.
    body = flat(loop.body)
    assert calls(body[0])[0][0] == "wait" and int(calls(body[0])[0][1].args[1]) == stages - 2
    assert is_barrier(body[1])
    assert in_loop.count("cp16") == 2 and in_loop[-1] == "commit" and in_loop.count("commit") == 1
    # The drain after the loop.
    assert names[-1] == "wait" and int(calls(func.body)[-1][1].args[1]) == 0
    # One barrier per iteration: the ring's own (no WAR barrier before the refill).
    barriers: list[Any] = []
    tvm_ffi.structural_walk(loop.body, (tirx.Evaluate, lambda e: barriers.append(is_barrier(e))))
    assert sum(barriers) == 1
    # The ring: each shared tile has a leading stage dim of num_stages slots.
    shapes = {name: buffer.shape for name, buffer in allocated(func).items()}
    assert [int(d) for d in shapes["A_shared"]] == [stages, 128, 32]
    assert [int(d) for d in shapes["B_shared"]] == [stages, 32, 128]
    assert int(func.attrs["tl.dynamic_shared_memory_bytes"]) == stages * 2 * 128 * 32 * 2


@pytest.mark.parametrize("stages", [0, 1])
def test_one_stage_or_none_runs_in_order_with_plain_copies(stages: int) -> None:
    func = lower(gemm(num_stages=stages))
    assert not calls(func.body)
    assert int(func.attrs["tl.dynamic_shared_memory_bytes"]) == 2 * 128 * 32 * 2


def test_targets_without_async_copies_keep_in_order_loops() -> None:
    assert not calls(lower(gemm(), IN_ORDER).body)
    assert not calls(lower(gemm(), ARCH_GATED, arch="sm_75").body)
    assert calls(lower(gemm(), ARCH_GATED, arch="sm_80").body)


def test_copy_sizes_follow_the_proven_alignment_and_edges_zero_fill() -> None:
    # K = 36: 4 halves (8 bytes) divide every row start; M = 200: partial row tiles.
    names = {name for name, _ in calls(lower(gemm(M=200, K=36, block_K=16)).body)}
    assert {"cp8_zfill", "cp16_zfill"} <= names
    assert "cp8" not in names  # A's K tail and rows can leave the matrix
    # K = 34: only 2-half (4-byte) vectors are aligned.
    names = {name for name, _ in calls(lower(gemm(K=34, block_K=16)).body)}
    assert "cp4_zfill" in names and "cp8_zfill" not in names


def test_a_tile_read_after_the_loop_stays_in_order() -> None:
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((16, 64), "float32")):
        with T.Kernel(1, threads=64) as _:
            S = T.alloc_shared((16, 64), "float32")
            acc = T.alloc_fragment((16, 64), "float32")
            T.clear(acc)
            for k in T.Pipelined(4, num_stages=3):
                T.copy(A[k * 16, 0], S)
                for i, j in T.Parallel(16, 64):
                    acc[i, j] = acc[i, j] + S[i, j]
            for i, j in T.Parallel(16, 64):
                acc[i, j] = acc[i, j] + S[i, j]
            T.copy(acc, B[0, 0])

    assert not calls(lower(main).body)


def test_a_tile_allocated_inside_the_loop_stays_in_order() -> None:
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((16, 64), "float32")):
        with T.Kernel(1, threads=64) as _:
            acc = T.alloc_fragment((16, 64), "float32")
            T.clear(acc)
            for k in T.Pipelined(4, num_stages=3):
                S = T.alloc_shared((16, 64), "float32")
                T.copy(A[k * 16, 0], S)
                for i, j in T.Parallel(16, 64):
                    acc[i, j] = acc[i, j] + S[i, j]
            T.copy(acc, B[0, 0])

    assert not calls(lower(main).body)


def test_a_manual_schedule_the_ring_expresses_is_honoured() -> None:
    # Copies at stage 0, the gemm at the last stage, emitted B copy first.
    func = lower(gemm(num_stages=0, order=[1, 0, 2], stage=[0, 0, 2]))
    _, loop = top_level(func)
    assert int(calls(flat(loop.body)[0])[0][1].args[1]) == 1  # 3 stages: wait(1)
    # A copy at the last stage runs in order with the gemm; the other still rings.
    func = lower(gemm(num_stages=3, stage=[0, 2, 2]))
    _, loop = top_level(func)
    assert [str(n) for n in loop.annotations[RING_BUFFERS_KEY]] == ["A_shared"]
    lower(gemm(num_stages=3, stage=[0, 0, 2], group=[[0, 1], [2]]))


@pytest.mark.parametrize(
    ("schedule", "named"),
    [
        ({"stage": [0, 1, 2]}, r"stage=\[0, 1, 2\]"),
        ({"stage": [0, 0, 2], "group": [[0, 2], [1]]}, r"group=\[\[0, 2\], \[1\]\]"),
        ({"order": [0, 1]}, r"order=\[0, 1\]"),
    ],
)
def test_a_schedule_the_ring_cannot_express_is_refused_by_name(
    schedule: dict[str, Any], named: str
) -> None:
    with pytest.raises(NotImplementedError, match=named):
        lower(gemm(num_stages=3, **schedule))


def test_too_deep_a_ring_for_the_wait_is_refused() -> None:
    with pytest.raises(NotImplementedError, match="num_stages=10"):
        lower(gemm(num_stages=10, K=512))


# ---- swizzled layouts ---------------------------------------------------------------


_BINARY = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "FloorDiv": lambda a, b: a // b,
    "FloorMod": lambda a, b: a % b,
    "Div": lambda a, b: a // b,
    "Mod": lambda a, b: a % b,
    "Min": min,
    "Max": max,
    "BitwiseXor": lambda a, b: a ^ b,
    "BitwiseAnd": lambda a, b: a & b,
    "ShiftRight": lambda a, b: a >> b,
}


def _evaluate(expr: Any, values: dict[str, int]) -> int:
    """The int value of an index expression with its variables bound by name."""
    kind = type(expr).__name__
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    if isinstance(expr, tirx.Var):
        return values[str(expr.name)]
    if kind in _BINARY:
        return int(_BINARY[kind](_evaluate(expr.a, values), _evaluate(expr.b, values)))
    if kind == "Cast":
        return _evaluate(expr.value, values)
    raise AssertionError(f"cannot evaluate {kind}: {expr}")


def _byte_address(buffer: Any, indices: list[int]) -> int:
    flat_index = 0
    for index, extent in zip(indices, buffer.shape, strict=True):
        flat_index = flat_index * int(extent) + index
    return flat_index * int(tvm.DataType(str(buffer.ty.dtype)).bits) // 8


def _bank_groups(addresses: list[int]) -> set[int]:
    """The 16-byte bank groups (of the 8 in a 128-byte bank line) of ``addresses``."""
    return {(address // 16) % 8 for address in addresses}


def _free_vars(expr: Any) -> set[str]:
    names: set[str] = set()
    tvm_ffi.structural_walk(expr, (tirx.Var, lambda v: names.add(str(v.name))), order="pre")
    return names


GEOMETRIES = [
    # (dtype, block_K): A rows of block_K elements, B rows of 128 elements.
    ("float16", 16),  # A: 32-byte rows (2 chunks)
    ("float16", 32),  # A: 64-byte rows (4 chunks), TileLang's example
    ("float16", 64),  # A: 128-byte rows (8 chunks)
    ("int8", 32),  # A: 32-byte rows of 8-bit elements
]


@pytest.mark.parametrize(("dtype", "block_K"), GEOMETRIES)
def test_the_async_copies_of_a_warp_into_swizzled_tiles_are_free_of_bank_conflicts(
    dtype: str, block_K: int
) -> None:
    accum = "int32" if dtype == "int8" else "float32"
    func = lower(gemm(block_K=block_K, dtype=dtype, accum=accum))
    assert {str(k) for k in func.attrs[SWIZZLE_ATTR]} == {"A_shared", "B_shared"}
    _, loop = top_level(func)
    (thread_var,) = kernel_launch(func).thread_vars
    thread = str(thread_var.name)
    checked = 0
    for name, call in calls(loop.body):
        if not name.startswith("cp16"):
            continue
        destination = call.args[1].args[0]  # address_of(S[...]) -> S[...]
        # The loop variables (the K step, a copy's own iterations) take a few values.
        loop_vars = _free_vars(destination) - {thread}
        for step in range(3):
            values = dict.fromkeys(loop_vars, step)
            # A warp's 16-byte stores go out in 8-lane phases (128 bytes each).
            for phase in range(4):
                addresses = [
                    _byte_address(
                        destination.source,
                        [
                            _evaluate(i, {**values, thread: phase * 8 + lane})
                            for i in destination.indices
                        ],
                    )
                    for lane in range(8)
                ]
                assert len(_bank_groups(addresses)) == 8, (name, phase, addresses)
                checked += 1
    assert checked


def _row_addresses(
    buffer: Any, rows: list[tuple[int, int, int]], chunks: int | None, dtype: str
) -> list[int]:
    """Byte addresses of ``buffer[slot, row, column]`` per entry, through the swizzle
    pass's remapping when ``chunks`` is given (row-major otherwise)."""
    out = []
    for entry in rows:
        index = [tirx.IntImm("int32", v) for v in entry]
        if chunks is not None:
            index = swizzled_index(index, chunks, dtype)
        out.append(_byte_address(buffer, [_evaluate(i, {}) for i in index]))
    return out


@pytest.mark.parametrize(("dtype", "block_K"), GEOMETRIES)
def test_ldmatrix_rows_of_swizzled_tiles_hit_eight_bank_groups(dtype: str, block_K: int) -> None:
    """ldmatrix: 8 lanes each address one 16-byte row of an 8x8 matrix, rows r0..r0+7 at
    one chunk column; the row addresses are the ones the swizzle pass gives
    ``address_of(S[slot, r, c])``. Without the swizzle the same rows conflict."""
    accum = "int32" if dtype == "int8" else "float32"
    func = lower(gemm(block_K=block_K, dtype=dtype, accum=accum))
    chosen = {str(k): int(v) for k, v in func.attrs[SWIZZLE_ATTR].items()}
    buffers = allocated(func)
    for name, chunks in chosen.items():
        buffer = buffers[name]
        stages, rows, columns = (int(d) for d in buffer.shape)
        per_chunk = 128 // int(tvm.DataType(dtype).bits)
        conflicted = False
        for slot in range(stages):
            for r0 in range(0, rows, 8):
                for c in range(0, columns, per_chunk):
                    rows_at = [(slot, r0 + lane, c) for lane in range(8)]
                    swizzled = _row_addresses(buffer, rows_at, chunks, dtype)
                    assert len(_bank_groups(swizzled)) == 8, (name, slot, r0, c)
                    plain = _row_addresses(buffer, rows_at, None, dtype)
                    conflicted |= len(_bank_groups(plain)) < 8
        assert conflicted  # the row-major tile does conflict: the check can fail


def test_annotations_choose_the_swizzle() -> None:
    # A linear layout opts out of the automatic swizzle.
    func = lower(gemm(layouts=lambda a, b: {a: make_linear_layout(a)}))
    assert {str(k) for k in func.attrs[SWIZZLE_ATTR]} == {"B_shared"}
    # make_swizzled_layout swizzles an fp32 tile, which is not swizzled by itself.
    plain = lower(gemm(dtype="float32"))
    assert plain.attrs is None or SWIZZLE_ATTR not in plain.attrs
    func = lower(gemm(dtype="float32", layouts=lambda a, b: {a: make_swizzled_layout(a)}))
    assert {str(k): int(v) for k, v in func.attrs[SWIZZLE_ATTR].items()} == {"A_shared": 8}
    # A bank swizzle of the wrong row width is refused by name.
    with pytest.raises(NotImplementedError, match="make_half_bank_swizzled_layout"):
        lower(gemm(layouts=lambda a, b: {b: make_half_bank_swizzled_layout(b)}))
    # Targets without swizzles keep row-major tiles, annotated or not.
    func = lower(gemm(layouts=lambda a, b: {a: make_swizzled_layout(a)}), IN_ORDER)
    assert func.attrs is None or SWIZZLE_ATTR not in func.attrs
