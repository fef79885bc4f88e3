"""Matrix-instruction layouts, target-neutral: `MatrixInstruction` checks its fragment
maps, `WarpTiles` puts every accumulator element on exactly one (thread, local), the
warp policies split as TileLang's do, and inference gives `MMA`/`ROWS` layouts where a
target declares an instruction and falls back to the default layouts where uses do not
fit. The instruction here is a made-up one written for the test (a 16 x 8 x 16 shape
with simple maps), not any real target's."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tl_ir.language as T
from tl_passes.gpu import GpuTraits, MatrixInstruction, MatrixLoad, infer_fragment_layouts
from tl_passes.gpu.launches import kernel_functions
from tl_passes.gpu.layout import MMA, PARTITIONED, REPLICATED, ROWS
from tl_passes.gpu.warp_tiles import FULL_COL, FULL_ROW, SQUARE, WarpTiles, warp_partition


def _a(lane: Any, e: Any) -> tuple[Any, Any]:
    return lane // 4 + 8 * ((e // 2) % 2), (lane % 4) * 2 + e % 2 + 8 * (e // 4)


def _b(lane: Any, e: Any) -> tuple[Any, Any]:
    return (lane % 4) * 2 + e % 2 + 8 * (e // 2), lane // 4


def _c(lane: Any, e: Any) -> tuple[Any, Any]:
    return lane // 4 + 8 * (e // 2), (lane % 4) * 2 + e % 2


INSTRUCTION = MatrixInstruction(
    function="test_mma",
    a_dtype="float16",
    b_dtype="float16",
    acc_dtype="float32",
    m=16,
    n=8,
    k=16,
    a_map=_a,
    b_map=_b,
    c_map=_c,
    a_elements=8,
    b_elements=4,
    c_elements=4,
)
TRAITS = GpuTraits(
    name="test",
    warp_size=32,
    matrix_instructions=(INSTRUCTION,),
    matrix_load=MatrixLoad({1: "ld1", 2: "ld2", 4: "ld4"}, {1: "t1", 2: "t2", 4: "t4"}),
)


def test_instruction_refuses_a_map_that_misses_elements() -> None:
    with pytest.raises(ValueError, match="does not cover"):
        MatrixInstruction(
            function="broken",
            a_dtype="float16",
            b_dtype="float16",
            acc_dtype="float32",
            m=16,
            n=8,
            k=16,
            a_map=_a,
            b_map=_b,
            c_map=lambda lane, e: (lane // 4, (lane % 4) * 2 + e % 2),  # rows 8..15 missing
            a_elements=8,
            b_elements=4,
            c_elements=4,
        )


def test_traits_pick_an_instruction_by_dtypes_and_target() -> None:
    assert TRAITS.matrix_instruction("float16", "float16", "float32", None) is INSTRUCTION
    assert TRAITS.matrix_instruction("float32", "float32", "float32", None) is None
    unavailable = GpuTraits(
        name="old",
        matrix_instructions=(attrs.evolve(INSTRUCTION, available=lambda target: False),),
    )
    assert unavailable.matrix_instruction("float16", "float16", "float32", object()) is None


@settings(max_examples=40, deadline=None)
@given(
    warps=st.sampled_from([1, 2, 4, 8]),
    policy=st.sampled_from([SQUARE, FULL_ROW, FULL_COL]),
    rows=st.sampled_from([16, 32, 64, 128]),
    cols=st.sampled_from([8, 16, 32, 64, 128]),
)
def test_every_accumulator_element_is_on_exactly_one_thread(
    warps: int, policy: int, rows: int, cols: int
) -> None:
    split = warp_partition(policy, rows, cols, warps, 16, 8)
    if split is None:
        return
    tiles = WarpTiles(rows, cols, split[0], split[1], 16, 8, 4, _c)
    seen: dict[tuple[int, int], tuple[int, int]] = {}
    for thread in range(warps * 32):
        for local in range(tiles.local_size):
            cell = tiles.element(thread, local)
            assert cell not in seen, (cell, seen[cell], (thread, local))
            seen[cell] = (thread, local)
    assert set(seen) == {(r, c) for r in range(rows) for c in range(cols)}
    # The rows a thread holds after a row reduction are the rows of its elements.
    for thread in range(0, warps * 32, 7):
        held = {tiles.row_of(thread, s) for s in range(tiles.row_slots)}
        assert held == {tiles.element(thread, lo)[0] for lo in range(tiles.local_size)}
        for local in range(tiles.local_size):
            assert tiles.row_of(thread, tiles.row_local(local)) == tiles.element(thread, local)[0]
    assert tiles.row_lane_masks() == (1, 2)


@pytest.mark.parametrize(
    ("policy", "rows", "cols", "warps", "expected"),
    [
        (SQUARE, 128, 128, 4, (2, 2)),
        (SQUARE, 64, 128, 4, (2, 2)),
        (SQUARE, 128, 32, 8, (8, 1)),
        (FULL_ROW, 64, 64, 4, (4, 1)),
        (FULL_COL, 64, 64, 4, (1, 4)),
        (FULL_ROW, 32, 64, 4, None),  # 4 warps x 16 rows do not fit 32 rows
    ],
)
def test_warp_policies(
    policy: int, rows: int, cols: int, warps: int, expected: tuple[int, int] | None
) -> None:
    assert warp_partition(policy, rows, cols, warps, 16, 8) == expected


def _layouts(func: Any, traits: GpuTraits = TRAITS, threads: int = 128) -> dict[str, str]:
    (kernel,) = [k for _, k in kernel_functions(func)]
    return {n: lay.kind for n, lay in infer_fragment_layouts(kernel, threads, traits).items()}


def _attention_like(extra_use: str = "") -> Any:
    @T.prim_func
    def main(
        Q: T.Tensor((64, 64), "float16"),
        K: T.Tensor((64, 64), "float16"),
        V: T.Tensor((64, 64), "float16"),
        Out: T.Tensor((64, 64), "float32"),
        M: T.Tensor((64,), "float32"),
    ):
        with T.Kernel(1, threads=128):
            Q_s = T.alloc_shared((64, 64), "float16")
            K_s = T.alloc_shared((64, 64), "float16")
            V_s = T.alloc_shared((64, 64), "float16")
            s = T.alloc_fragment((64, 64), "float32")
            p = T.alloc_fragment((64, 64), "float16")
            o = T.alloc_fragment((64, 64), "float32")
            row_max = T.alloc_fragment((64,), "float32")
            scale = T.alloc_fragment((64,), "float32")
            total = T.alloc_fragment((1,), "float32")
            T.copy(Q, Q_s)
            T.copy(K, K_s)
            T.copy(V, V_s)
            T.gemm(Q_s, K_s, s, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            T.reduce_max(s, row_max, dim=1)
            for i in T.Parallel(64):
                scale[i] = row_max[i] * 2.0
            for i, j in T.Parallel(64, 64):
                s[i, j] = s[i, j] - scale[i]
            T.copy(s, p)
            T.clear(o)
            T.gemm(p, V_s, o, policy=T.GemmWarpPolicy.FullRow)
            if extra_use == "reduce rows":
                T.reduce_sum(scale, total, dim=0)
            T.copy(o, Out)
            T.copy(row_max, M)

    return main


def test_attention_constructs_get_accumulator_layouts() -> None:
    kinds = _layouts(_attention_like())
    assert (kinds["s"], kinds["p"], kinds["o"]) == (MMA, MMA, MMA)
    assert (kinds["row_max"], kinds["scale"]) == (ROWS, ROWS)


def test_without_matrix_instructions_the_defaults_stay() -> None:
    kinds = _layouts(_attention_like(), GpuTraits(name="plain", warp_size=32))
    assert kinds["s"] == PARTITIONED and kinds["row_max"] == REPLICATED


def test_a_rows_fragment_reduced_again_falls_back_to_replication() -> None:
    # A ROWS fragment holds each row on several threads; reducing it over the block
    # would count every row once per holder, so its group keeps the default layout.
    kinds = _layouts(_attention_like("reduce rows"))
    assert kinds["scale"] == REPLICATED and kinds["row_max"] == REPLICATED
    assert kinds["s"] == MMA


def test_register_a_needs_every_warp_on_rows() -> None:
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            s = T.alloc_fragment((64, 64), "float32")
            p = T.alloc_fragment((64, 64), "float16")
            o = T.alloc_fragment((64, 64), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, s, clear_accum=True)  # Square: 2 x 2 warps
            T.copy(s, p)
            T.gemm(p, B_s, o, clear_accum=True)

    kinds = _layouts(main)
    # The second gemm's warps split N, so P cannot feed it from registers: P is
    # replicated and that gemm keeps the FMA loop (its C the default layout); the first
    # stays on the instruction.
    assert (kinds["p"], kinds["s"], kinds["o"]) == (REPLICATED, MMA, PARTITIONED)


def test_fp32_and_ragged_gemms_keep_the_default_layout() -> None:
    def gemm(dtype: str, n: int) -> Any:
        @T.prim_func
        def main(A: T.Tensor((64, 32), dtype), B: T.Tensor((32, n), dtype)):
            with T.Kernel(1, threads=128):
                A_s = T.alloc_shared((64, 32), dtype)
                B_s = T.alloc_shared((32, n), dtype)
                c = T.alloc_fragment((64, n), "float32")
                T.copy(A, A_s)
                T.copy(B, B_s)
                T.gemm(A_s, B_s, c, clear_accum=True)

        return main

    assert _layouts(gemm("float16", 64))["c"] == MMA
    assert _layouts(gemm("float32", 64))["c"] == PARTITIONED
    assert _layouts(gemm("float16", 12))["c"] == PARTITIONED  # 12 columns: no 8-wide tiles
