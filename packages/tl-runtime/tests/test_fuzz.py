"""Random wrong arguments at loaded kernels: only Python exceptions, never a crash."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tl_runtime

Artifact = Callable[..., Path]

DTYPES = ["float32", "float64", "int32", "int8", "uint16", "bool", "int64"]


@st.composite
def arrays(draw: st.DrawFn) -> Any:
    dtype = draw(st.sampled_from(DTYPES))
    ndim = draw(st.integers(0, 3))
    shape = tuple(
        draw(st.lists(st.sampled_from([0, 1, 2, 7, 64, 1024]), min_size=ndim, max_size=ndim))
    )
    base = np.zeros(int(np.prod(shape)) * 2 + 16, dtype=dtype)
    offset = draw(st.integers(0, 15))
    flat = base[offset : offset + int(np.prod(shape)) * 2]
    flat = flat[::2] if draw(st.booleans()) else flat[: int(np.prod(shape))]
    out = flat.reshape(shape) if flat.size == int(np.prod(shape)) else flat
    if draw(st.booleans()) and out.ndim >= 2:
        out = out.T
    if draw(st.booleans()):
        out.flags.writeable = False
    return out


values = st.one_of(
    arrays(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
    st.lists(st.floats(), max_size=4),
    st.just(object()),
    st.just(np.float32(1.5)),
    st.just(np.int64(3)),
    st.binary(max_size=8),
    arrays().map(lambda a: memoryview(a) if a.flags.c_contiguous else a),
)


@pytest.mark.parametrize("kernel_name", ["vadd", "vadd_n", "axpb", "sum_diff"])
def test_random_arguments_raise_python_errors(
    artifact: Artifact, adapter: str, kernel_name: str
) -> None:
    out_idx = {"vadd": (), "vadd_n": (2,), "axpb": (1,), "sum_diff": (2, 3)}[kernel_name]
    kernel = tl_runtime.load(artifact(kernel_name, out_idx=out_idx), adapter=adapter)

    @settings(
        max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    @given(st.lists(values, min_size=0, max_size=5))
    def run(args: list[Any]) -> None:
        with contextlib.suppress(TypeError, ValueError):
            kernel(*args)

    run()
