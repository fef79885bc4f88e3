"""Wrapping integer conversions and comparisons with the int32 minimum on the CUDA
lowering, under the CPU emulation: TVM's simplifier took ``T.cast(u32, "int32")`` for a
non-negative value (``< 0`` was false) and folded ``x == INT32_MIN`` to false; the cuda
pipeline runs ``wrapping-casts`` and ``int32-minimum-comparisons`` first, as the CPU
pipelines do (integration_tests/test_wrapping_conversions.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import cuda_emulation as emu

from integration_tests.integer_rule_kernel import integer_rule_kernel

pytestmark = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


def test_wrapping_conversions_and_minimum_comparisons_under_emulation() -> None:
    a = np.array([0, 1, 2**32 - 1, 2**31, 5, 7, 0, 3], np.uint32)
    m = np.array([-(2**31), 0, 5, -(2**31) + 1, 2**31 - 1, -(2**31), -1, 7], np.int32)
    arrays = {"A": a, "M": m, "Out": np.zeros((3, 8), np.int32)}
    emu.emulate(integer_rule_kernel(narrow=False), arrays, name="integer_rules_32")
    signed = a.view(np.int32)
    np.testing.assert_array_equal(arrays["Out"][0], (signed < 0).astype(np.int32))
    np.testing.assert_array_equal(arrays["Out"][1], np.maximum(signed, 0))
    np.testing.assert_array_equal(arrays["Out"][2], (m == np.iinfo(np.int32).min).astype(np.int32))
