"""Language-feature cases of the corpus (TileLang's testing/python/language and cpu files)."""

from __future__ import annotations

from typing import Any

import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case

_L = "testing/python/language/"


def _randn(shape: tuple[int, ...], dtype: Any = "float32") -> Any:
    def make(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
        size = tuple(a[s] if isinstance(s, str) else s for s in shape)
        return [rng.standard_normal(size).astype(str(a.get("dtype", dtype)))]

    return make


def _cumulative(a: dict[str, Any], x: np.ndarray, op: Any, axis: int) -> np.ndarray:
    """Blockwise cumulative op over ``block_*`` tiles along ``axis`` (reverse when asked)."""
    out = np.empty_like(x)
    blocks = [a.get("block_M", x.shape[0]), a.get("block_N", x.shape[-1])][-x.ndim :]
    for index in np.ndindex(*(s // b for s, b in zip(x.shape, blocks, strict=True))):
        sl = tuple(slice(i * b, (i + 1) * b) for i, b in zip(index, blocks, strict=True))
        tile = x[sl]
        if a.get("reverse"):
            tile = np.flip(tile, axis)
        result = op(tile, axis=axis)
        out[sl] = np.flip(result, axis) if a.get("reverse") else result
    return out


def _cumsum_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    return [_cumulative(a, x.astype(np.float64), np.cumsum, a.get("dim", 0)).astype(x.dtype)]


def _cummax_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    return [_cumulative(a, x, np.maximum.accumulate, a.get("dim", 0))]


def _identity_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    return [x.copy()]


def _plus_one(a: dict[str, Any], x: np.ndarray) -> Arrays:
    return [x + np.float32(1.0)]


def _dynamic_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [rng.standard_normal(a["max_len"]).astype(np.float32)]


def _reduce_ref(op: str) -> Any:
    def reference(a: dict[str, Any], x: np.ndarray) -> Arrays:
        dim = a["dim"]
        return [getattr(np, op)(x.astype(np.float64), axis=dim).astype(x.dtype)]

    return reference


def _clamp_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    return [np.clip(x, a["min_val"], a["max_val"])]


def _clamp_range_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    out = x.copy()
    b = a["block_N"]
    for start in range(0, x.shape[1], b):
        tile = x[0, start : start + b]
        out[0, start : start + b] = np.minimum(
            np.maximum(tile, tile.min() * np.float32(0.5)), tile.max() * np.float32(0.5)
        )
    return [out]


def _transpose_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    return [np.ascontiguousarray(x.T)]


def _ternary_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    out = np.zeros_like(x)
    out[: a["M"] // 2] = x[: a["M"] // 2]
    return [out]


def _if_range_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    rows = np.arange(a["M"])[:, None]
    return [np.where((rows > 16) & (rows < 96), x * 2.0, x * 0.5).astype(x.dtype)]


def _alloc_var_add_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    return [x + x.dtype.type(1)]


def _fill_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    return [np.full_like(x, a["init_value"])]


def _atomic_add_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    k, m, n = a["K"], a["M"], a["N"]
    return [rng.standard_normal((k, m, n)).astype(np.float32), np.zeros((m, n), np.float32)]


def _atomic_add_ref(a: dict[str, Any], x: np.ndarray, b: np.ndarray) -> Arrays:
    return [b + x.sum(axis=0, dtype=np.float64).astype(np.float32)]


def _addx2_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    m, n = a["M"], a["N"]
    return [rng.standard_normal((m, n)).astype(np.float16), np.ones((m, n), np.float16)]


def _addx2_ref(a: dict[str, Any], x: np.ndarray, b: np.ndarray) -> Arrays:
    return [(b.astype(np.float32) + x.astype(np.float32)).astype(np.float16)]


def _reshape_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    return [x.reshape(a["N"] // a["M"], a["M"])]


def _flatten_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    return [x.reshape(-1)]


def _reshape_max_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    return [x.reshape(a["N"] // a["M"], a["M"]).max(axis=1)]


def _select_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    x = rng.standard_normal((128, 8)).astype(np.float32)
    x[::3, 0] = 0.0  # rows where A[tx, 0] == 0 take the other branch
    return [x, np.zeros((128, 8), np.float32)]


def _select_ref(a: dict[str, Any], x: np.ndarray, b: np.ndarray) -> Arrays:
    out = np.zeros_like(x)
    out[:, 0] = x[:, 0]
    out[:, 1] = x[:, 1]
    # A[tx, 3] round-tripped through bfloat16 equals tmp, the bfloat16 of A[tx, 3].
    out[:, 2] = x[:, 2]
    out[:, 3] = np.where((out[:, 0] != 0) & (out[:, 1] != 0), x[:, 3], 0.0)
    out[:, 4:] = np.where(x[:, :1] == 0, 2.0, x[:, 4:])
    return [out]


def _parallel_select_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [rng.standard_normal(1024).astype(np.float32), np.zeros(1024, np.float32)]


def _parallel_select_ref(a: dict[str, Any], x: np.ndarray, b: np.ndarray) -> Arrays:
    return [np.where(np.arange(1024) < 512, x, 0.0).astype(np.float32)]


def _no_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return []


def _inf_ref(a: dict[str, Any]) -> Arrays:
    return [np.full(32, np.inf, a["dtype"])]


def _strided_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    n, m = a["N"], a["M"]
    x = rng.standard_normal((m, a["stride_A"])).astype(np.float32)
    y = np.zeros((m, a["stride_B"]), np.float32)
    # Column-major (N, M) views with leading dimension stride_A / stride_B.
    return [x.T[:n], y.T[:n]]


def _strided_ref(a: dict[str, Any], x: np.ndarray, y: np.ndarray) -> Arrays:
    return [x.copy()]


def _reduce2d_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    x = rng.standard_normal((a["M"], a["N"])).astype(a["dtype"])
    init = np.zeros((a["N"],) if a["dim"] == 0 else (a["M"],), a["dtype"])
    return [x, init]


def _reduce2d_ref(a: dict[str, Any], x: np.ndarray, init: np.ndarray) -> Arrays:
    op = {"sum": np.sum, "max": np.max, "min": np.min, "abssum": None, "absmax": None}[a["op"]]
    assert op is not None
    return [op(x.astype(np.float64), axis=a["dim"]).astype(x.dtype)]


def _oob_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [rng.standard_normal((a["M"], a["N"])).astype(np.float32)]


def _oob_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    # Rows/columns past A's edge read the safe value (0 when none is annotated).
    out = np.full((a["padded_M"], a["padded_N"]), a.get("pad_value") or 0.0, np.float32)
    out[: a["M"], : a["N"]] = x
    return [out]


_SCAN2D = {"M": 64, "N": 64, "block_M": 32, "block_N": 32}
_ELEM = {"M": 128, "N": 64, "block_M": 32, "block_N": 32}

CASES = [
    Case(
        "language_scan.cumsum_smem_test-dim0",
        _L + "test_tilelang_language_scan.py",
        "language_scan:cumsum_smem_test",
        _SCAN2D,
        _randn(("M", "N")),
        _cumsum_ref,
        out_idx=[1],
        rtol=1e-4,
        atol=1e-4,
    ),
    Case(
        "language_scan.cumsum_fragment_test-dim1-reverse",
        _L + "test_tilelang_language_scan.py",
        "language_scan:cumsum_fragment_test",
        {**_SCAN2D, "dim": 1, "reverse": True},
        _randn(("M", "N")),
        _cumsum_ref,
        out_idx=[1],
        rtol=1e-4,
        atol=1e-4,
    ),
    Case(
        "language_scan.cumsum_smem_test_1d",
        _L + "test_tilelang_language_scan.py",
        "language_scan:cumsum_smem_test_1d",
        {"N": 256, "block_N": 64},
        _randn(("N",)),
        lambda a, x: [_cumulative({"block_N": 64}, x, np.cumsum, 0)],
        out_idx=[1],
        rtol=1e-4,
        atol=1e-4,
    ),
    Case(
        "language_scan.cumsum_region_test_1d",
        _L + "test_tilelang_language_scan.py",
        "language_scan:cumsum_region_test_1d",
        {"N": 256, "chunk_size": 64, "reverse": True},
        _randn(("N",)),
        lambda a, x: [_cumulative({"block_N": 64, "reverse": True}, x, np.cumsum, 0)],
        out_idx=[1],
        rtol=1e-4,
        atol=1e-4,
    ),
    Case(
        "language_scan.cummax_smem_test",
        _L + "test_tilelang_language_scan.py",
        "language_scan:cummax_smem_test",
        {**_SCAN2D, "dim": 1},
        _randn(("M", "N")),
        _cummax_ref,
        out_idx=[1],
    ),
    Case(
        "language_scan.cummax_fragment_test",
        _L + "test_tilelang_language_scan.py",
        "language_scan:cummax_fragment_test",
        _SCAN2D,
        _randn(("M", "N")),
        _cummax_ref,
        out_idx=[1],
    ),
    Case(
        "language_copy.tilelang_copy",
        _L + "test_tilelang_language_copy.py",
        "language_copy:tilelang_copy",
        {"M": 128, "N": 128, "block_M": 32, "block_N": 32},
        _randn(("M", "N"), "float16"),
        _identity_ref,
        out_idx=[1],
    ),
    Case(
        "language_copy.tilelang_copy_oob_safe_value",
        _L + "test_tilelang_language_copy.py",
        "language_copy:tilelang_copy_oob_safe_value",
        {
            "M": 60,
            "N": 50,
            "padded_M": 64,
            "padded_N": 64,
            "block_M": 32,
            "block_N": 32,
            "pad_value": 7.0,
        },
        _oob_inputs,
        _oob_ref,
        out_idx=[1],
    ),
    Case(
        "language_copy.tilelang_elementwise_copy_oob_safe_value",
        _L + "test_tilelang_language_copy.py",
        "language_copy:tilelang_elementwise_copy_oob_safe_value",
        {"M": 12, "N": 10, "padded_M": 16, "padded_N": 16},
        _oob_inputs,
        lambda a, x: _oob_ref({**a, "pad_value": -99.0}, x),
        out_idx=[1],
    ),
    Case(
        "language_mask_op.tilelang_copy_mask_parallel",
        _L + "test_tilelang_language_mask_op.py",
        "language_mask_op:tilelang_copy_mask_parallel",
        {"M": 64, "N": 64, "block_M": 32, "block_N": 32},
        _randn(("M", "N"), "float16"),
        _identity_ref,
        out_idx=[1],
    ),
    Case(
        "language_mask_op.tilelang_copy_mask_copy",
        _L + "test_tilelang_language_mask_op.py",
        "language_mask_op:tilelang_copy_mask_copy",
        {"M": 64, "N": 64, "block_M": 32, "block_N": 32},
        _randn(("M", "N"), "float16"),
        _identity_ref,
        out_idx=[1],
    ),
    Case(
        "language_clamp.clamp_within_bounds",
        _L + "test_tilelang_language_clamp.py",
        "language_clamp:clamp_within_bounds",
        {"N": 256, "block_N": 64, "dtype": "float32", "min_val": -0.5, "max_val": 0.5},
        _randn(("N",)),
        _clamp_ref,
        out_idx=[1],
    ),
    Case(
        "language_clamp.clamp_value_range",
        _L + "test_tilelang_language_clamp.py",
        "language_clamp:clamp_value_range",
        {"N": 256, "block_N": 64, "dtype": "float32"},
        _randn((1, "N")),
        _clamp_range_ref,
        out_idx=[1],
    ),
    Case(
        "language_parallel.parallel_elementwise_static",
        _L + "test_tilelang_language_parallel.py",
        "language_parallel:parallel_elementwise_static",
        {"length": 256},
        _randn(("length",)),
        _plus_one,
    ),
    Case(
        "language_parallel.parallel_elementwise_dynamic",
        _L + "test_tilelang_language_parallel.py",
        "language_parallel:parallel_elementwise_dynamic",
        {"max_len": 256, "threads": 64},
        lambda a, rng: [*_dynamic_inputs(a, rng), 100],
        lambda a, x, n: [np.where(np.arange(a["max_len"]) < n, x - 1.0, 0.0).astype(np.float32)],
    ),
    Case(
        "language_transpose.tilelang_transpose",
        _L + "test_tilelang_language_transpose.py",
        "language_transpose:tilelang_transpose",
        {"M": 64, "N": 128, "block_M": 32, "block_N": 32},
        _randn(("M", "N"), "float16"),
        _transpose_ref,
        out_idx=[1],
    ),
    Case(
        "language_ternary.tilelang_ternary",
        _L + "test_tilelang_language_ternary.py",
        "language_ternary:tilelang_ternary",
        _ELEM,
        _randn(("M", "N"), "float16"),
        _ternary_ref,
    ),
    Case(
        "language_if_range.tilelang_if_range",
        _L + "test_tilelang_language_if_range.py",
        "language_if_range:tilelang_if_range",
        _ELEM,
        _randn(("M", "N"), "float16"),
        _if_range_ref,
        rtol=1e-3,
        atol=1e-3,
    ),
    Case(
        "language_alloc.alloc_var",
        _L + "test_tilelang_language_alloc.py",
        "language_alloc:alloc_var",
        {"N": 256, "block_N": 64, "dtype": "float32"},
        _randn(("N",)),
        _identity_ref,
        out_idx=[1],
    ),
    Case(
        "language_alloc.alloc_var_add",
        _L + "test_tilelang_language_alloc.py",
        "language_alloc:alloc_var_add",
        {"N": 256, "block_N": 64, "dtype": "float32"},
        _randn(("N",)),
        _alloc_var_add_ref,
        out_idx=[1],
    ),
    Case(
        "language_alloc.alloc_var_with_initializer",
        _L + "test_tilelang_language_alloc.py",
        "language_alloc:alloc_var_with_initializer",
        {"N": 256, "block_N": 64, "dtype": "float32", "init_value": 5.0},
        _randn(("N",)),
        _fill_ref,
        out_idx=[1],
    ),
    Case(
        "language_alloc.alloc_multi_vars_with_initializer",
        _L + "test_tilelang_language_alloc.py",
        "language_alloc:alloc_multi_vars_with_initializer",
        {"N": 256, "block_N": 64, "dtype": "float32"},
        _randn(("N",)),
        lambda a, x: [np.full_like(x, 3.0)],
        out_idx=[1],
    ),
    Case(
        "language_alloc.alloc_global",
        _L + "test_tilelang_language_alloc.py",
        "language_alloc:alloc_global",
        {"N": 256, "block_N": 64, "dtype": "float32"},
        _randn(("N",)),
        _identity_ref,
        out_idx=[1],
    ),
    Case(
        "language_atomic.atomic_add_program",
        _L + "test_tilelang_language_atomic.py",
        "language_atomic:atomic_add_program",
        {"K": 4, "M": 64, "N": 64, "block_M": 32, "block_N": 32},
        _atomic_add_inputs,
        _atomic_add_ref,
        inplace=[1],
        rtol=1e-4,
        atol=1e-4,
    ),
    Case(
        "language_atomic.atomic_memory_order_program",
        _L + "test_tilelang_language_atomic.py",
        "language_atomic:atomic_memory_order_program",
        {"K": 4, "M": 64, "N": 64, "block_M": 32, "block_N": 32},
        _atomic_add_inputs,
        _atomic_add_ref,
        inplace=[1],
        rtol=1e-4,
        atol=1e-4,
    ),
    Case(
        "language_atomic.atomic_addx2_program",
        _L + "test_tilelang_language_atomic.py",
        "language_atomic:atomic_addx2_program",
        {"M": 64, "N": 64, "block_M": 32, "block_N": 32},
        _addx2_inputs,
        _addx2_ref,
        inplace=[1],
        rtol=1e-3,
        atol=1e-3,
    ),
    Case(
        "language_reshape.reshape_test",
        _L + "test_tilelang_language_reshape.py",
        "language_reshape:reshape_test",
        {"N": 1024, "M": 32, "dtype": "float32"},
        _randn(("N",)),
        _reshape_ref,
        out_idx=[1],
    ),
    Case(
        "language_reshape.reshape_fragment_test",
        _L + "test_tilelang_language_reshape.py",
        "language_reshape:reshape_fragment_test",
        {"N": 1024, "M": 32, "dtype": "float32"},
        lambda a, rng: [rng.standard_normal((a["N"] // a["M"], a["M"])).astype(np.float32)],
        _flatten_ref,
        out_idx=[1],
    ),
    Case(
        "language_reshape.reduce_after_reshape_test",
        _L + "test_tilelang_language_reshape.py",
        "language_reshape:reduce_after_reshape_test",
        {"N": 1024, "M": 32, "dtype": "float32"},
        _randn(("N",)),
        _reshape_max_ref,
        out_idx=[1],
    ),
    Case(
        "language_view.view_test",
        _L + "test_tilelang_language_view.py",
        "language_view:view_test",
        {"N": 1024, "M": 32, "dtype": "float32"},
        _randn(("N",)),
        _reshape_ref,
        out_idx=[1],
    ),
    Case(
        "language_select.get_select_kernel_1",
        _L + "test_tilelang_language_select.py",
        "language_select:get_select_kernel_1",
        {},
        _select_inputs,
        _select_ref,
        inplace=[1],
    ),
    Case(
        "language_select.get_parallel_select_kernel",
        _L + "test_tilelang_language_select.py",
        "language_select:get_parallel_select_kernel",
        {},
        _parallel_select_inputs,
        _parallel_select_ref,
        inplace=[1],
    ),
    Case(
        "language_infinity.get_inf_kernel",
        _L + "test_tilelang_language_infinity.py",
        "language_infinity:get_inf_kernel",
        {"dtype": "float32"},
        _no_inputs,
        _inf_ref,
    ),
    Case(
        "language_vectorize.vectorize_test",
        _L + "test_tilelang_language_vectorize.py",
        "language_vectorize:vectorize_test",
        {"N": 8, "M": 256, "stride_A": 16, "stride_B": 12},
        _strided_inputs,
        _strided_ref,
        inplace=[1],
    ),
    Case(
        "language_let.bind_kernel",
        _L + "test_tilelang_language_let.py",
        "language_let:bind_kernel",
        {},
        lambda a, rng: [rng.standard_normal(64).astype(np.float16), np.zeros(64, np.float16)],
        lambda a, x, b: [(x.astype(np.float32) + 1.0).astype(np.float16)],
        inplace=[1],
        rtol=1e-3,
        atol=1e-3,
    ),
    Case(
        "language_ceildiv._ceildiv_kernel",
        _L + "test_tilelang_language_ceildiv.py",
        "language_ceildiv:_ceildiv_kernel",
        {"a": 130, "b": 32},
        _no_inputs,
        lambda a: [np.array([-(-a["a"] // a["b"])], np.int32)],
    ),
    Case(
        "language_ceildiv._align_up_kernel",
        _L + "test_tilelang_language_ceildiv.py",
        "language_ceildiv:_align_up_kernel",
        {"a": 130, "b": 32},
        _no_inputs,
        lambda a: [np.array([-(-a["a"] // a["b"]) * a["b"]], np.int32)],
    ),
    Case(
        "language_composable_index.tilelang_composable_copy",
        _L + "test_tilelang_language_composable_index.py",
        "language_composable_index:tilelang_composable_copy",
        {"M": 64, "N": 64, "block_M": 32, "block_N": 32},
        _randn(("M", "N"), "float16"),
        _flatten_ref,
        out_idx=[1],
    ),
    Case(
        "language_chain_equal.chain_equal",
        _L + "test_tilelang_language_chain_equal.py",
        "language_chain_equal:chain_equal",
        {"N": 128, "block_size": 64},
        lambda a, rng: [np.zeros(a["N"], np.float32) for _ in range(3)],
        lambda a, x, y, z: [np.ones(a["N"], np.float32)] * 3,
        inplace=[0, 1, 2],
    ),
    Case(
        "cpu_reduce._make_kernel_2d-sum-dim1",
        "testing/python/cpu/test_tilelang_cpu_reduce.py",
        "cpu_reduce:_make_kernel_2d",
        {"op": "sum", "M": 32, "N": 64, "dim": 1, "dtype": "float32", "clear": True},
        _reduce2d_inputs,
        _reduce2d_ref,
        out_idx=[2],
        rtol=1e-4,
        atol=1e-4,
    ),
    Case(
        "cpu_reduce._make_kernel_2d-max-dim0",
        "testing/python/cpu/test_tilelang_cpu_reduce.py",
        "cpu_reduce:_make_kernel_2d",
        {"op": "max", "M": 32, "N": 64, "dim": 0, "dtype": "float32", "clear": True},
        _reduce2d_inputs,
        _reduce2d_ref,
        out_idx=[2],
    ),
]
