"""``out_idx`` is normalized by one function (tl_runtime.out_idx) at decoration and at compile."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tl_jit
from tl_runtime.out_idx import normalize_out_idx


@pytest.mark.parametrize("bad", ["C", 1.5, [0, "x"], True])
def test_jit_refuses_a_malformed_out_idx_when_decorating(bad: object) -> None:
    with pytest.raises(TypeError, match="out_idx: expected"):
        tl_jit.jit(out_idx=bad)  # type: ignore[arg-type]


def test_indices_are_resolved_once_the_kernel_is_known() -> None:
    assert normalize_out_idx([-1], None) == (-1,)
    assert normalize_out_idx([-1], 3) == (2,)
    assert normalize_out_idx(None, 3) == ()
    with pytest.raises(ValueError, match=r"out_idx: expected indices in \[-3, 3\)"):
        normalize_out_idx(3, 3)
    with pytest.raises(ValueError, match="appears twice"):
        normalize_out_idx([2, -1], 3)


def test_decorating_imports_no_tvm() -> None:
    code = "import sys, tl_jit\ntl_jit.jit(out_idx=[-1])\nprint('tvm' in sys.modules)\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_numpy_integers_are_indices() -> None:
    # out_idx=[np.int64(-1)] was refused ("expected ints") although sizes take them.
    np = pytest.importorskip("numpy")
    assert normalize_out_idx(np.int64(-1), 3) == (2,)
    assert normalize_out_idx([np.int32(0), -1], 3) == (0, 2)
    assert all(type(i) is int for i in normalize_out_idx([np.int64(1)], None))
    with pytest.raises(TypeError, match=r"out_idx: expected ints, got np\.True_"):
        normalize_out_idx([np.bool_(True)], 3)
