"""The kernel suite agrees with its numpy REFERENCE under the reference interpreter
(`tl_ir.interpret`), the executable meaning of the language."""

# ruff: noqa: F841  (kernel bodies bind launch vars they do not use)
import sys
from pathlib import Path

import numpy as np
import pytest

import tl_ir.language as T
from tl_ir.interpret import run

REPO_ROOT = Path(__file__).resolve().parents[3]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from integration_tests import kernels  # noqa: E402


def _call_args(func, module, case, inputs):
    positions = {i % len(func.params) for i in module.OUT_IDX}
    runtime = case.get("runtime", {})
    remaining = iter(inputs)
    args = []
    for index, param in enumerate(func.params):
        if index in positions:
            shape = [
                int(d) if not hasattr(d, "name") else runtime[str(d.name)] for d in param.ty.shape
            ]
            args.append(np.full(shape, np.nan, dtype=str(param.ty.dtype)))
        else:
            args.append(next(remaining))
    return args


@pytest.mark.parametrize("name", kernels.ALL_KERNELS)
def test_kernel_matches_reference(name):
    module = kernels.load(name)
    for case in module.CASES:
        func = module.KERNEL(**case["args"])
        inputs = module.make_inputs(case, np.random.default_rng(1))
        expected = module.REFERENCE(
            case, *[x.copy() if isinstance(x, np.ndarray) else x for x in inputs]
        )
        args = _call_args(func, module, case, inputs)
        run(func, args)
        names = [str(p.name) for p in func.params]
        for out_name, want in expected.items():
            got = args[names.index(out_name)]
            tol = module.TOLERANCE[str(want.dtype)]
            np.testing.assert_allclose(
                got.astype(np.float64),
                want.astype(np.float64),
                atol=tol,
                rtol=tol,
                err_msg=f"{name} {case} output {out_name}",
            )


def test_partial_tiles_read_zero_and_are_not_written():
    @T.prim_func
    def main(A: T.Tensor((5, 3), "float32"), B: T.Tensor((5, 3), "float32")):
        with T.Kernel(2, threads=32) as bx:
            t = T.alloc_fragment((4, 4), "float32")
            T.fill(t, 7.0)
            T.copy(A[bx * 4, 0], t)
            for i, j in T.Parallel(4, 4):
                t[i, j] = t[i, j] + 1.0
            T.copy(t, B[bx * 4, 0])

    a = np.arange(15, dtype=np.float32).reshape(5, 3)
    b = np.full((5, 3), -1.0, dtype=np.float32)
    run(main, [a, b])
    np.testing.assert_array_equal(b, a + 1)


def test_interpreter_rejects_bad_arguments():
    @T.prim_func
    def main(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            A[0] = T.float32(1)

    with pytest.raises(ValueError, match="expects float32"):
        run(main, [np.zeros(4, dtype=np.float64)])
    with pytest.raises(ValueError, match="expected 1 arguments"):
        run(main, [])
