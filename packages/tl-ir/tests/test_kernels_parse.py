"""Every kernel module under integration_tests/kernels parses for every case and
follows the module convention (README.md there)."""

import sys
from pathlib import Path

import numpy as np
import pytest

import tl_ir

REPO_ROOT = Path(__file__).resolve().parents[3]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from integration_tests import kernels  # noqa: E402

EXPECTED_OPS = {
    "gemm": {"GemmOp", "CopyOp", "FillOp"},
    "gemm_transposed": {"GemmOp", "CopyOp", "FillOp"},
    "elementwise_add": {"CopyOp"},
    "softmax": {"CopyOp", "ReduceOp"},
    "rms_norm": {"CopyOp", "ReduceOp"},
    "column_reduce": {"CopyOp", "ReduceOp", "FillOp"},
    "symbolic_scale": {"CopyOp"},
    "two_outputs": {"CopyOp"},
    "atomic_sum": {"CopyOp", "ReduceOp", "FillOp", "AtomicOp"},
    "serial_scan": set(),
    "tile_cumsum": {"CopyOp", "CumsumOp"},
}


def test_at_least_ten_kernels_listed():
    assert len(kernels.ALL_KERNELS) >= 10
    assert set(kernels.ALL_KERNELS) == set(EXPECTED_OPS)


@pytest.mark.parametrize("name", kernels.ALL_KERNELS)
def test_kernel_parses_for_every_case(name):
    module = kernels.load(name)
    for attr in (
        "KERNEL",
        "CASES",
        "OUT_IDX",
        "REFERENCE",
        "make_inputs",
        "TOLERANCE",
        "GPU_SOURCES",
    ):
        assert hasattr(module, attr), f"{name} lacks {attr}"
    assert len(module.CASES) >= 3
    rng = np.random.default_rng(0)
    for case in module.CASES:
        func = module.KERNEL(**case["args"])
        ops = {type(op).__name__ for op in tl_ir.tile_ops(func)}
        assert ops == EXPECTED_OPS[name]
        launch = tl_ir.kernel_launch(func)
        assert launch is not None and launch.num_threads is not None
        params = [str(p.name) for p in func.params]
        out_positions = {i % len(params) for i in module.OUT_IDX}
        inputs = module.make_inputs(case, rng)
        assert len(inputs) == len(params) - len(out_positions)
        expected = module.REFERENCE(case, *inputs)
        assert set(expected) <= set(params)
        assert {params[i] for i in out_positions} <= set(expected)
        for out_name, value in expected.items():
            param = func.params[params.index(out_name)]
            shape = tuple(
                int(d) if tl_ir.ops.const_int(d) is not None else None for d in param.ty.shape
            )
            assert len(shape) == value.ndim
            assert all(s is None or s == v for s, v in zip(shape, value.shape, strict=True))
            assert str(param.ty.dtype) == str(value.dtype)


def test_ragged_cases_exist_for_tiled_kernels():
    for name in ("gemm", "gemm_transposed", "elementwise_add", "column_reduce"):
        module = kernels.load(name)
        ragged = [
            c
            for c in module.CASES
            if all(
                c["args"][dim] % c["args"][f"block_{dim}"]
                for dim in ("M", "N", "K")
                if dim in c["args"] and f"block_{dim}" in c["args"]
            )
        ]
        assert ragged, f"{name} has no case where every dim is ragged"


def test_symbolic_kernel_has_several_sizes():
    module = kernels.load("symbolic_scale")
    sizes = {c["runtime"]["M"] for c in module.CASES}
    assert len(sizes) >= 3
    func = module.KERNEL(**module.CASES[0]["args"])
    assert str(func.params[0].ty.shape[0].name) == "M"
