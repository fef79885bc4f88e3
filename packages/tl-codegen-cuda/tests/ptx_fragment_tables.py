"""(lane, element) -> (row, column) entries transcribed from NVIDIA's PTX ISA (tests only).

Each table is read off the fragment figures of the PTX ISA, *not* computed from the
formulas the emulator implements, so the layout test can compare the two. Element
``i`` of a fragment is the ISA's ``ai``/``bi``/``ci``: register ``i // per_register``,
lowest bits first (``per_register`` = 2 for 16-bit, 4 for 8-bit elements).

Sections (PTX ISA, "Warp Level Matrix Multiply-Accumulate Instructions"):

* "Matrix Fragments for mma.m16n8k16 with floating point type": A (.f16/.bf16, four
  .f16x2/.b32 registers a0..a7), B (two registers b0..b3), C/D (.f32: c0..c3 in four
  registers; .f16: c0..c3 in two .f16x2 registers) share one C/D figure.
* "Matrix Fragments for mma.m16n8k32": A (.s8/.u8/.e4m3/.e5m2: four .b32 registers
  a0..a15), B (two .b32 registers b0..b7), C/D (.s32/.f32: c0..c3).
* "Warp-level matrix load instruction: ldmatrix", figure "ldmatrix fragment layout" and
  the description of ``.trans`` ("the matrix is loaded in column-major format").

The lanes chosen cover every value of ``groupID`` (lane >> 2) at least once across the
tables, every ``threadID_in_group`` (lane % 4), the first and last lane, and every
element of each fragment.
"""

from __future__ import annotations

Entry = tuple[int, int, int, int]
"""(lane, element, row, column)."""

# --- mma.m16n8k16, A (16 x 16), a0..a7 -------------------------------------------
# Figure: row 0 holds T0{a0,a1} T1{a0,a1} T2.. T3.. in columns 0-7 and T0{a4,a5} .. T3
# in columns 8-15; row 8 holds the same lanes' a2,a3 (columns 0-7) and a6,a7 (8-15);
# row g holds lanes 4g..4g+3.
MMA_K16_A: list[Entry] = [
    (0, 0, 0, 0), (0, 1, 0, 1), (0, 2, 8, 0), (0, 3, 8, 1),
    (0, 4, 0, 8), (0, 5, 0, 9), (0, 6, 8, 8), (0, 7, 8, 9),
    (1, 0, 0, 2), (1, 1, 0, 3), (1, 2, 8, 2), (1, 3, 8, 3),
    (1, 4, 0, 10), (1, 5, 0, 11), (1, 6, 8, 10), (1, 7, 8, 11),
    (6, 0, 1, 4), (6, 1, 1, 5), (6, 2, 9, 4), (6, 3, 9, 5),
    (6, 4, 1, 12), (6, 5, 1, 13), (6, 6, 9, 12), (6, 7, 9, 13),
    (11, 0, 2, 6), (11, 3, 10, 7), (11, 4, 2, 14), (11, 7, 10, 15),
    (13, 0, 3, 2), (13, 5, 3, 11), (13, 6, 11, 10),
    (18, 1, 4, 5), (18, 2, 12, 4), (18, 7, 12, 13),
    (23, 0, 5, 6), (23, 3, 13, 7), (23, 5, 5, 15),
    (24, 0, 6, 0), (24, 6, 14, 8),
    (31, 0, 7, 6), (31, 1, 7, 7), (31, 2, 15, 6), (31, 3, 15, 7),
    (31, 4, 7, 14), (31, 5, 7, 15), (31, 6, 15, 14), (31, 7, 15, 15),
]  # fmt: skip

# --- mma.m16n8k16, B (16 x 8), b0..b3 --------------------------------------------
# Figure: column g holds lanes 4g..4g+3; T0 has rows 0,1 (b0,b1) and 8,9 (b2,b3),
# T1 rows 2,3 and 10,11, T2 rows 4,5 and 12,13, T3 rows 6,7 and 14,15.
MMA_K16_B: list[Entry] = [
    (0, 0, 0, 0), (0, 1, 1, 0), (0, 2, 8, 0), (0, 3, 9, 0),
    (1, 0, 2, 0), (1, 1, 3, 0), (1, 2, 10, 0), (1, 3, 11, 0),
    (2, 0, 4, 0), (2, 3, 13, 0),
    (7, 0, 6, 1), (7, 1, 7, 1), (7, 2, 14, 1), (7, 3, 15, 1),
    (9, 1, 3, 2), (9, 2, 10, 2),
    (14, 0, 4, 3), (14, 3, 13, 3),
    (19, 1, 7, 4), (19, 2, 14, 4),
    (20, 0, 0, 5), (20, 3, 9, 5),
    (26, 1, 5, 6), (26, 2, 12, 6),
    (31, 0, 6, 7), (31, 1, 7, 7), (31, 2, 14, 7), (31, 3, 15, 7),
]  # fmt: skip

# --- C/D of every m16n8 shape (16 x 8), c0..c3 ------------------------------------
# Figure: row g (and g + 8 for c2, c3) holds lanes 4g..4g+3, two columns each:
# T0 columns 0,1, T1 2,3, T2 4,5, T3 6,7.
MMA_C: list[Entry] = [
    (0, 0, 0, 0), (0, 1, 0, 1), (0, 2, 8, 0), (0, 3, 8, 1),
    (1, 0, 0, 2), (1, 1, 0, 3), (1, 2, 8, 2), (1, 3, 8, 3),
    (3, 0, 0, 6), (3, 3, 8, 7),
    (5, 0, 1, 2), (5, 1, 1, 3), (5, 2, 9, 2), (5, 3, 9, 3),
    (10, 1, 2, 5), (10, 2, 10, 4),
    (15, 0, 3, 6), (15, 3, 11, 7),
    (16, 1, 4, 1), (16, 2, 12, 0),
    (22, 0, 5, 4), (22, 3, 13, 5),
    (25, 1, 6, 3), (25, 2, 14, 2),
    (31, 0, 7, 6), (31, 1, 7, 7), (31, 2, 15, 6), (31, 3, 15, 7),
]  # fmt: skip

# --- mma.m16n8k32, A (16 x 32), a0..a15 (8-bit) -----------------------------------
# Figure: row g holds lanes 4g..4g+3 with four consecutive columns each: T0{a0..a3} in
# columns 0-3, T1 4-7, T2 8-11, T3 12-15, and a8..a11 in columns 16-31 likewise; row
# g + 8 holds a4..a7 (columns 0-15) and a12..a15 (columns 16-31).
MMA_K32_A: list[Entry] = [
    (0, 0, 0, 0), (0, 1, 0, 1), (0, 2, 0, 2), (0, 3, 0, 3),
    (0, 4, 8, 0), (0, 5, 8, 1), (0, 6, 8, 2), (0, 7, 8, 3),
    (0, 8, 0, 16), (0, 9, 0, 17), (0, 10, 0, 18), (0, 11, 0, 19),
    (0, 12, 8, 16), (0, 13, 8, 17), (0, 14, 8, 18), (0, 15, 8, 19),
    (1, 0, 0, 4), (1, 3, 0, 7), (1, 4, 8, 4), (1, 8, 0, 20), (1, 15, 8, 23),
    (6, 1, 1, 9), (6, 6, 9, 10), (6, 11, 1, 27), (6, 12, 9, 24),
    (11, 2, 2, 14), (11, 7, 10, 15), (11, 9, 2, 29), (11, 14, 10, 30),
    (12, 0, 3, 0), (12, 13, 11, 17),
    (17, 3, 4, 7), (17, 5, 12, 5), (17, 10, 4, 22),
    (22, 0, 5, 8), (22, 15, 13, 27),
    (27, 4, 14, 12), (27, 11, 6, 31),
    (31, 0, 7, 12), (31, 1, 7, 13), (31, 2, 7, 14), (31, 3, 7, 15),
    (31, 4, 15, 12), (31, 5, 15, 13), (31, 6, 15, 14), (31, 7, 15, 15),
    (31, 8, 7, 28), (31, 9, 7, 29), (31, 10, 7, 30), (31, 11, 7, 31),
    (31, 12, 15, 28), (31, 13, 15, 29), (31, 14, 15, 30), (31, 15, 15, 31),
]  # fmt: skip

# --- mma.m16n8k32, B (32 x 8), b0..b7 (8-bit) ------------------------------------
# Figure: column g holds lanes 4g..4g+3; T0 rows 0-3 (b0..b3) and 16-19 (b4..b7), T1
# rows 4-7 and 20-23, T2 8-11 and 24-27, T3 12-15 and 28-31.
MMA_K32_B: list[Entry] = [
    (0, 0, 0, 0), (0, 1, 1, 0), (0, 2, 2, 0), (0, 3, 3, 0),
    (0, 4, 16, 0), (0, 5, 17, 0), (0, 6, 18, 0), (0, 7, 19, 0),
    (1, 0, 4, 0), (1, 7, 23, 0),
    (6, 2, 10, 1), (6, 5, 25, 1),
    (11, 3, 15, 2), (11, 4, 28, 2),
    (13, 1, 5, 3), (13, 6, 22, 3),
    (18, 0, 8, 4), (18, 7, 27, 4),
    (23, 2, 14, 5), (23, 4, 28, 5),
    (28, 3, 3, 7), (28, 6, 18, 7),
    (31, 0, 12, 7), (31, 1, 13, 7), (31, 2, 14, 7), (31, 3, 15, 7),
    (31, 4, 28, 7), (31, 5, 29, 7), (31, 6, 30, 7), (31, 7, 31, 7),
]  # fmt: skip

# --- ldmatrix .m8n8 .b16 ------------------------------------------------------------
# Addresses: lanes 0-7 give rows 0-7 of matrix 0, lanes 8-15 of matrix 1, 16-23 of
# matrix 2, 24-31 of matrix 3 (.x1 reads lanes 0-7 only, .x2 lanes 0-15).
# Fragment (figure "ldmatrix fragment layout"): register m of every lane holds matrix
# m; row r of a matrix is spread over lanes 4r..4r+3, two elements each: T0 columns
# 0,1, T1 2,3, T2 4,5, T3 6,7. Entries: (lane, 16-bit half of the register, row, col).
LDMATRIX: list[Entry] = [
    (0, 0, 0, 0), (0, 1, 0, 1), (1, 0, 0, 2), (1, 1, 0, 3),
    (2, 0, 0, 4), (3, 1, 0, 7), (4, 0, 1, 0), (5, 1, 1, 3),
    (10, 0, 2, 4), (15, 1, 3, 7), (17, 0, 4, 2), (22, 1, 5, 5),
    (24, 0, 6, 0), (28, 1, 7, 1), (31, 0, 7, 6), (31, 1, 7, 7),
]  # fmt: skip

# With .trans each lane receives the same positions of the transposed matrix: the
# element at (row, col) of the fragment is the stored matrix's (col, row). Lane l holds
# column l // 4 of stored rows 2 (l % 4) and 2 (l % 4) + 1.
LDMATRIX_TRANS: list[Entry] = [
    (0, 0, 0, 0), (0, 1, 1, 0), (1, 0, 2, 0), (1, 1, 3, 0),
    (2, 0, 4, 0), (3, 1, 7, 0), (4, 0, 0, 1), (5, 1, 3, 1),
    (10, 0, 4, 2), (15, 1, 7, 3), (17, 0, 2, 4), (22, 1, 5, 5),
    (24, 0, 0, 6), (28, 1, 1, 7), (31, 0, 6, 7), (31, 1, 7, 7),
]  # fmt: skip
"""(lane, half, stored row, stored column)."""
