"""T.Pipelined's manual schedule (order/stage/sync/group): checked, a scheduling hint
(the body runs in program order, a legal schedule), depth max(stage) + 1 as in TileLang."""

import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
from tl_ir.interpret import run
from tl_ir.launch import loop_kind, num_stages


def _staged_sum(**schedule):
    @T.prim_func
    def main(A: T.Tensor((8, 16), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            tile = T.alloc_shared((16,), "float32")
            acc = T.alloc_fragment((16,), "float32")
            T.clear(acc)
            for k in T.Pipelined(8, **schedule):
                T.copy(A[k, 0:16], tile)
                for i in T.Parallel(16):
                    acc[i] += tile[i]
            T.copy(acc, B)

    return main


def _pipelined_loops(func):
    import tvm_ffi
    from tvm import tirx

    found = []
    tvm_ffi.structural_walk(
        func.body,
        (tirx.For, lambda f: found.append(f) if loop_kind(f) == "pipelined" else None),
        order="pre",
    )
    return found


@pytest.mark.parametrize(
    ("schedule", "depth"),
    [
        ({"order": [0, 1], "stage": [0, 1]}, 2),
        ({"order": [1, 0], "stage": [0, 2]}, 3),
        ({"order": [0, 1], "stage": [0, 1], "num_stages": 4}, 4),
        ({"order": [0, 1], "stage": [0, 0], "sync": [[0, 1]], "group": [[0], [1]]}, 1),
        ({}, 0),
    ],
)
def test_manual_schedule_keeps_the_results_and_sets_the_depth(schedule, depth):
    func = _staged_sum(**schedule, annotations={"note": 1})
    (loop,) = _pipelined_loops(func)
    assert num_stages(loop) == depth
    a = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    b = np.zeros(16, np.float32)
    run(func, [a, b])
    np.testing.assert_allclose(b, a.sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"order": [0, 1], "stage": [0]}, "2 order entries and 1 stage entries"),
        ({"order": "01"}, r"order=\.\.\.\): expected a list of ints"),
        ({"stage": [0, 1.5]}, r"stage=\.\.\.\): expected a list of ints"),
        ({"sync": [0, 1]}, r"sync=\.\.\.\): expected a list of ints"),
        ({"group": 3}, r"group=\.\.\.\): expected a list of lists of ints"),
        ({"annotations": [1]}, r"annotations=\.\.\.\): expected a dict"),
    ],
)
def test_bad_schedules_are_type_errors_naming_the_parameter(kwargs, message):
    with pytest.raises(tl_ir.KernelTypeError, match=message):
        T.Pipelined(4, **kwargs)
