"""The CPU emulation's mma.sync and ldmatrix against the PTX ISA.

Black-box: small hand-written CUDA kernels (not generated code, so the lowering and the
emulator cannot share a mistake) call the helpers of tl_tensor_core.h on crafted
registers, and the results are checked against the (lane, element) -> (row, column)
entries transcribed from the ISA in `ptx_fragment_tables`:

* mma: one-hot A against all-ones B pins A's rows to C's rows, all-ones A against
  one-hot B pins B's columns to C's columns, one-hot A against one-hot B pins A's and
  B's K index to each other; then the numbers (exact decoding of f16, bf16, e4m3, e5m2;
  the .f16 accumulator's round-to-nearest-even; s32 wrapping without .satfinite).
* ldmatrix: rows holding their own coordinates, addressed through a permutation of
  the lanes, with and without .trans; lanes whose addresses the ISA ignores get a
  misaligned pointer, which must not be read.

The cp.async tests are in test_emulated_cp_async.py; the kernels in
fragment_test_kernels.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu
import fragment_test_kernels as kernels
import ptx_fragment_tables as tables

pytestmark = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")

ml_dtypes = pytest.importorskip("ml_dtypes")


# ----------------------------------------------------------------------------- mma


class Form:
    """One mma form: how its operand and accumulator elements are encoded."""

    def __init__(self, index: int, k: int, operand: str, accumulator: str) -> None:
        self.index, self.k, self.operand, self.accumulator = index, k, operand, accumulator
        self.bits = 16 if k == 16 else 8
        self.a_table = tables.MMA_K16_A if k == 16 else tables.MMA_K32_A
        self.b_table = tables.MMA_K16_B if k == 16 else tables.MMA_K32_B

    def encode(self, value: float) -> int:
        """The operand's bit pattern for ``value`` (exactly representable)."""
        if self.operand in ("s8", "u8"):
            return int(value) & 0xFF
        dtype = {
            "f16": np.float16,
            "bf16": ml_dtypes.bfloat16,
            "e4m3": ml_dtypes.float8_e4m3fn,
            "e5m2": ml_dtypes.float8_e5m2,
        }[self.operand]
        encoded = np.array([value], dtype=dtype)
        assert float(encoded[0]) == value, (value, self.operand)
        return int(encoded.view(np.uint16 if self.bits == 16 else np.uint8)[0])

    def decode(self, code: int) -> float:
        """What the operand bit pattern ``code`` means (numpy / ml_dtypes, not the emulator)."""
        if self.operand == "s8":
            return float(np.array([code], np.uint8).view(np.int8)[0])
        if self.operand == "u8":
            return float(code)
        raw = np.array([code], np.uint16 if self.bits == 16 else np.uint8)
        dtype = {
            "f16": np.float16,
            "bf16": ml_dtypes.bfloat16,
            "e4m3": ml_dtypes.float8_e4m3fn,
            "e5m2": ml_dtypes.float8_e5m2,
        }[self.operand]
        return float(raw.view(dtype)[0])

    def per_register(self) -> int:
        return 32 // self.bits


FORMS = {
    "f32.f16": Form(0, 16, "f16", "f32"),
    "f32.bf16": Form(1, 16, "bf16", "f32"),
    "f16.f16": Form(2, 16, "f16", "f16"),
    "s32.s8": Form(3, 32, "s8", "s32"),
    "s32.u8": Form(4, 32, "u8", "s32"),
    "f32.e4m3": Form(5, 32, "e4m3", "f32"),
    "f32.e5m2": Form(6, 32, "e5m2", "f32"),
}


class Batch:
    """Register contents of a batch of mma cases for one form (all zero to start)."""

    def __init__(self, form: Form, cases: int) -> None:
        self.form = form
        self.a = np.zeros((cases, 32, 4), np.uint32)
        self.b = np.zeros((cases, 32, 2), np.uint32)
        self.c = np.zeros((cases, 32, 4), np.uint32)

    def _set(self, registers: np.ndarray, case: int, lane: int, element: int, code: int) -> None:
        per = self.form.per_register()
        shift = (element % per) * self.form.bits
        mask = ((1 << self.form.bits) - 1) << shift
        register = element // per
        old = int(registers[case, lane, register])
        registers[case, lane, register] = (old & ~mask) | (code << shift)

    def set_a(self, case: int, lane: int, element: int, value: float) -> None:
        self._set(self.a, case, lane, element, self.form.encode(value))

    def set_b(self, case: int, lane: int, element: int, value: float) -> None:
        self._set(self.b, case, lane, element, self.form.encode(value))

    def fill_a(self, case: int, value: float) -> None:
        for lane in range(32):
            for element in range(4 * self.form.per_register()):
                self.set_a(case, lane, element, value)

    def fill_b(self, case: int, value: float) -> None:
        for lane in range(32):
            for element in range(2 * self.form.per_register()):
                self.set_b(case, lane, element, value)

    def set_c(self, case: int, lane: int, element: int, value: float) -> None:
        if self.form.accumulator == "f16":
            code = int(np.array([value], np.float16).view(np.uint16)[0])
            register, shift = element // 2, 16 * (element % 2)
            old = int(self.c[case, lane, register]) & ~(0xFFFF << shift)
            self.c[case, lane, register] = old | (code << shift)
        elif self.form.accumulator == "s32":
            self.c[case, lane, element] = np.uint32(int(value) & 0xFFFFFFFF)
        else:
            self.c[case, lane, element] = np.array([value], np.float32).view(np.uint32)[0]

    def run(self) -> np.ndarray:
        """D of every case as float64, shape (cases, 32 lanes, 4 elements)."""
        c = self.c.copy()
        kernels.run(
            "mma_batch",
            {"a": self.a, "b": self.b, "c": c, "cases": len(c), "form": self.form.index},
        )
        if self.form.accumulator == "f16":
            halves = c[:, :, :2].copy().view(np.float16)  # little-endian: c0 in the low half
            return halves.reshape(len(c), 32, 4).astype(np.float64)
        if self.form.accumulator == "s32":
            return c.view(np.int32).astype(np.float64)
        return c.view(np.float32).astype(np.float64)


def _at(d: np.ndarray, case: int, entry: tuple[int, int, int, int]) -> float:
    lane, element, _, _ = entry
    return float(d[case, lane, element])


@pytest.mark.parametrize("form_name", list(FORMS))
def test_mma_fragments_follow_the_isa(form_name: str) -> None:
    form = FORMS[form_name]
    a_entries, b_entries = form.a_table, form.b_table
    pairs = [(a, b) for a in a_entries for b in b_entries]
    batch = Batch(form, len(a_entries) + len(b_entries) + len(pairs))
    case = 0
    for lane, element, _, _ in a_entries:  # one-hot A, all-ones B: one row of D is 1
        batch.set_a(case, lane, element, 1)
        batch.fill_b(case, 1)
        case += 1
    for lane, element, _, _ in b_entries:  # all-ones A, one-hot B: one column of D is 1
        batch.fill_a(case, 1)
        batch.set_b(case, lane, element, 1)
        case += 1
    for a_entry, b_entry in pairs:  # one-hot A and B: D[r, n] = 1 iff their K agree
        batch.set_a(case, a_entry[0], a_entry[1], 1)
        batch.set_b(case, b_entry[0], b_entry[1], 1)
        case += 1
    d = batch.run()

    case = 0
    for _, _, row, _ in a_entries:
        assert np.count_nonzero(d[case]) == 8, "one-hot A: D should have one row of 8 ones"
        for c_entry in tables.MMA_C:
            want = 1.0 if c_entry[2] == row else 0.0
            assert _at(d, case, c_entry) == want, (form_name, "A row", a_entries, c_entry)
        case += 1
    for b_entry in b_entries:
        assert np.count_nonzero(d[case]) == 16
        for c_entry in tables.MMA_C:
            want = 1.0 if c_entry[3] == b_entry[3] else 0.0
            assert _at(d, case, c_entry) == want, (form_name, "B column", b_entry, c_entry)
        case += 1
    for a_entry, b_entry in pairs:
        same_k = a_entry[3] == b_entry[2]
        assert np.count_nonzero(d[case]) == (1 if same_k else 0), (form_name, a_entry, b_entry)
        for c_entry in tables.MMA_C:
            hit = same_k and (c_entry[2], c_entry[3]) == (a_entry[2], b_entry[3])
            assert _at(d, case, c_entry) == (1.0 if hit else 0.0), (a_entry, b_entry, c_entry)
        case += 1


def _codes(form: Form, rng: np.random.Generator) -> list[int]:
    if form.bits == 8:
        return list(range(256))
    specials = [0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0xFC00, 0x3C00]
    if form.operand == "bf16":
        specials = [0x0000, 0x8000, 0x0001, 0x007F, 0x0080, 0x7F7F, 0x7F80, 0xFF80, 0x3F80]
    return specials + [int(c) for c in rng.integers(0, 1 << 16, 200)]


@pytest.mark.parametrize("form_name", ["f32.f16", "f32.bf16", "f16.f16", "f32.e4m3", "f32.e5m2"])
def test_mma_decodes_every_operand_value_exactly(form_name: str) -> None:
    # A's (row 0, k 0) times B's (k 0, column 0) = 1: D[0, 0] is A's value as the ISA's
    # type reads it (ml_dtypes/numpy decode here), rounded to the accumulator.
    form = FORMS[form_name]
    codes = _codes(form, np.random.default_rng(7))
    a00, b00, c00 = form.a_table[0], form.b_table[0], tables.MMA_C[0]
    assert a00[2:] == (0, 0) and b00[2:] == (0, 0) and c00[2:] == (0, 0)
    batch = Batch(form, len(codes))
    one = form.encode(1.0)
    for case, code in enumerate(codes):
        batch._set(batch.a, case, a00[0], a00[1], code)
        batch._set(batch.b, case, b00[0], b00[1], one)
    d = batch.run()
    for case, code in enumerate(codes):
        value = form.decode(code)
        want = float(np.float16(value)) if form.accumulator == "f16" else float(np.float32(value))
        got = _at(d, case, c00)
        if np.isnan(want):
            assert np.isnan(got), (form_name, hex(code))
        else:
            assert got == want, (form_name, hex(code), got, want)


@pytest.mark.parametrize("form_name", list(FORMS))
def test_mma_sums_k_products_onto_c(form_name: str) -> None:
    # Random small integers (exact in every operand type) through the transcribed
    # entries of row 0 of A and column 0 of B; D[0, 0] = C + sum over the shared K.
    form = FORMS[form_name]
    rng = np.random.default_rng(3)
    values = [-2.0, -1.0, 0.0, 1.0, 2.0, 3.0] if form.operand != "u8" else [0, 1, 2, 3, 7]
    a_row0 = [e for e in form.a_table if e[2] == 0]
    b_col0 = {e[2]: e for e in form.b_table if e[3] == 0}
    batch = Batch(form, 20)
    want = []
    for case in range(20):
        total = float(rng.integers(-4, 5)) if form.operand != "u8" else float(rng.integers(0, 5))
        batch.set_c(case, 0, 0, total)
        for lane, element, _, k in a_row0:
            if k in b_col0:
                x, y = rng.choice(values), rng.choice(values)
                batch.set_a(case, lane, element, x)
                b_entry = b_col0[k]
                batch.set_b(case, b_entry[0], b_entry[1], y)
                total += x * y
        want.append(total)
    d = batch.run()
    assert [_at(d, case, tables.MMA_C[0]) for case in range(20)] == want


def test_f16_accumulator_rounds_the_sum_once_to_nearest_even() -> None:
    form = FORMS["f16.f16"]
    a00, b00 = form.a_table[0], form.b_table[0]
    sums = [(1.0, 2.0**-11), (1.0, 3 * 2.0**-11), (2048.0, 1.0), (2048.0, 3.0), (65504.0, 16.0)]
    batch = Batch(form, len(sums))
    for case, (c, product) in enumerate(sums):
        batch.set_c(case, 0, 0, c)
        batch.set_a(case, a00[0], a00[1], product)
        batch.set_b(case, b00[0], b00[1], 1.0)
    d = batch.run()
    got = [_at(d, case, tables.MMA_C[0]) for case in range(len(sums))]
    with np.errstate(over="ignore"):  # 65504 + 16 rounds to infinity, as it should
        assert got == [float(np.float16(c + p)) for c, p in sums]
    assert got[:2] == [1.0, 1.0 + 2.0**-9]  # ties go to the even neighbour


@pytest.mark.parametrize("form_name", ["s32.s8", "s32.u8"])
def test_integer_mma_wraps_without_satfinite(form_name: str) -> None:
    form = FORMS[form_name]
    extreme = -128.0 if form.operand == "s8" else 255.0
    batch = Batch(form, 2)
    batch.fill_a(0, extreme)
    batch.fill_b(0, extreme)
    batch.set_c(1, 0, 0, 2**31 - 1)
    a00, b00 = form.a_table[0], form.b_table[0]
    batch.set_a(1, a00[0], a00[1], extreme)
    batch.set_b(1, b00[0], b00[1], extreme)
    d = batch.run()
    assert np.all(d[0] == 32 * extreme * extreme)
    wrapped = (2**31 - 1 + int(extreme * extreme) + 2**31) % 2**32 - 2**31
    assert _at(d, 1, tables.MMA_C[0]) == wrapped


# ------------------------------------------------------------------------ ldmatrix


@pytest.mark.parametrize(("matrices", "trans"), kernels.LDMATRIX_FORMS)
def test_ldmatrix_follows_the_isa(matrices: int, trans: bool) -> None:
    permutation = np.random.default_rng(matrices + 10 * trans).permutation(32)
    row_of_lane = permutation.astype(np.int32)
    row_of_lane[8 * matrices :] = -1  # addresses the ISA does not read
    out = np.zeros((32, 4), np.uint32)
    form = kernels.LDMATRIX_FORMS.index((matrices, trans))
    kernels.run(
        "ldmatrix_rows", {"row_of_lane": row_of_lane.view(np.uint32), "out": out, "form": form}
    )
    entries = tables.LDMATRIX_TRANS if trans else tables.LDMATRIX
    for lane, half, row, col in entries:
        for matrix in range(matrices):
            stored_row = int(permutation[8 * matrix + row])  # the row lane 8m+row addressed
            got = (int(out[lane, matrix]) >> (16 * half)) & 0xFFFF
            assert got == stored_row * 8 + col, (matrices, trans, lane, half, matrix)
    assert np.all(out[:, matrices:] == 0)  # registers past .num are not written


def test_ldmatrix_refuses_a_misaligned_row_address() -> None:
    row_of_lane = np.arange(32, dtype=np.int32)
    row_of_lane[3] = -1
    out = np.zeros((32, 4), np.uint32)
    with pytest.raises(RuntimeError, match=r"lane 3's row address .* not 16-byte aligned"):
        kernels.run(
            "ldmatrix_rows", {"row_of_lane": row_of_lane.view(np.uint32), "out": out, "form": 2}
        )


def test_a_collective_reached_by_some_lanes_only_is_a_fault_not_a_hang(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TL_CUDA_EMULATION_WARP_TIMEOUT", "1")
    with pytest.raises(RuntimeError, match="not every lane of warp 0 reached it"):
        kernels.run("divergent_ldmatrix", {"out": np.zeros(32, np.uint32)})
