"""Kernels as torch custom ops (issue 23 item 3): ``torch.compile(fullgraph=True)`` of a
function calling two tile kernels traces through them with no graph break and gives
eager's results; shapes come from the manifest (symbolic dims from the arguments);
kernels that write in place are declared as mutating."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tl_jit  # noqa: E402
import tl_jit.language as T  # noqa: E402


def _kernels() -> tuple[Any, Any, Any]:
    @tl_jit.jit(target="c")
    def add(A, B):
        N = T.dynamic("N")
        A: T.Tensor[[N], T.float32]
        B: T.Tensor[[N], T.float32]
        C = T.empty((N,), T.float32)
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                C[i] = A[i] + B[i]
        return C

    @tl_jit.jit(target="c")
    def row_sums(X):
        M = T.dynamic("M")
        X: T.Tensor[[M, 4], T.float32]
        S = T.empty((M,), T.float32)
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(M):
                S[i] = X[i, 0] + X[i, 1] + X[i, 2] + X[i, 3]
        return S

    @tl_jit.jit(target="c")
    def scale_in_place(A, factor: float = 2.0):
        N = T.dynamic("N")
        A: T.Tensor[[N], T.float32]
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                A[i] = A[i] * factor

    return add.compile(), row_sums.compile(), scale_in_place.compile()


@pytest.fixture(scope="module")
def ops(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Any]:
    mp = pytest.MonkeyPatch()
    mp.setenv("TL_CACHE_DIR", str(tmp_path_factory.mktemp("torch-op-cache") / "cache"))
    try:
        add, row_sums, scale = _kernels()
        return (
            add.as_torch_op("tl_jit_test::add"),
            row_sums.as_torch_op("tl_jit_test::row_sums"),
            scale.as_torch_op("tl_jit_test::scale_in_place"),
        )
    finally:
        mp.undo()


def test_the_schema_comes_from_the_manifest(ops: tuple[Any, Any, Any]) -> None:
    add, row_sums, scale = ops
    assert str(torch.ops.tl_jit_test.add.default._schema).endswith(
        "add(Tensor A, Tensor B) -> Tensor"
    )
    assert "Tensor(a!) A" in str(torch.ops.tl_jit_test.scale_in_place.default._schema)
    x = torch.arange(6, dtype=torch.float32)
    np.testing.assert_array_equal(add(x, x).numpy(), 2 * x.numpy())
    y = x.clone()
    assert scale(y) is None
    np.testing.assert_array_equal(y.numpy(), 2 * x.numpy())
    # The fake implementation: shapes and dtypes without running the kernel.
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fake = row_sums(torch.empty(7, 4))
        assert tuple(fake.shape) == (7,) and fake.dtype == torch.float32


def test_torch_compile_fullgraph_traces_two_kernels_without_a_graph_break(
    ops: tuple[Any, Any, Any],
) -> None:
    add, row_sums, scale = ops

    def pipeline(x: Any, y: Any) -> Any:
        total = add(x.reshape(-1), y.reshape(-1)).reshape(x.shape)
        sums = row_sums(total)
        scale(sums)  # in place on an intermediate
        return torch.relu(sums) + 1.0

    torch._dynamo.reset()
    x = torch.randn(5, 4)
    y = torch.randn(5, 4)
    expected = pipeline(x, y)
    explained = torch._dynamo.explain(pipeline)(x, y)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(pipeline, fullgraph=True, dynamic=True, backend="aot_eager")
    np.testing.assert_allclose(compiled(x, y).numpy(), expected.numpy(), rtol=1e-6)
    # Another size runs through the same graph (the dims are symbolic).
    x2, y2 = torch.randn(9, 4), torch.randn(9, 4)
    np.testing.assert_allclose(compiled(x2, y2).numpy(), pipeline(x2, y2).numpy(), rtol=1e-6)
    # The inputs were not written (only the intermediate was scaled in place).
    assert torch.equal(x, x.clone())


def test_a_scalar_parameter_is_an_op_argument(cache_dir: Path) -> None:
    @tl_jit.jit(out_idx=[-1], target="c")
    def scale_by(N):
        @T.prim_func
        def main(A: T.Tensor((N,), "float32"), alpha: T.float32, B: T.Tensor((N,), "float32")):
            with T.Kernel(1, threads=1) as _:
                for i in T.serial(N):
                    B[i] = A[i] * alpha

        return main

    op = scale_by(8).as_torch_op("tl_jit_test::scale_by")
    assert str(op._opoverload._schema).endswith("(Tensor A, float alpha) -> Tensor")
    x = torch.arange(8, dtype=torch.float32)
    compiled = torch.compile(lambda v: op(v, 2.5) + 1, fullgraph=True, backend="aot_eager")
    np.testing.assert_allclose(compiled(x).numpy(), x.numpy() * 2.5 + 1)


@pytest.mark.slow
def test_torch_compile_with_inductor(ops: tuple[Any, Any, Any]) -> None:
    add, row_sums, _ = ops

    def pipeline(x: Any, y: Any) -> Any:
        return row_sums(add(x.reshape(-1), y.reshape(-1)).reshape(x.shape)) * 2

    x, y = torch.randn(6, 4), torch.randn(6, 4)
    compiled = torch.compile(pipeline, fullgraph=True)
    np.testing.assert_allclose(compiled(x, y).numpy(), pipeline(x, y).numpy(), rtol=1e-6)


def test_bad_names_and_mutates_are_refused(ops: tuple[Any, Any, Any], cache_dir: Path) -> None:
    add_kernel = _kernels()[0]
    with pytest.raises(TypeError, match="as_torch_op name"):
        add_kernel.as_torch_op("")
    with pytest.raises(ValueError, match="namespace must be an ASCII Python identifier"):
        add_kernel.as_torch_op("bad-ns::add")
    # Was a UnicodeDecodeError out of torch.
    with pytest.raises(ValueError, match="op name must be an ASCII Python identifier"):
        add_kernel.as_torch_op("tl_jit_test::ünï")
    # aten::add registered here broke every later torch.compile in the process.
    for name in ("aten::add", "prims::foo", "_internal::foo"):
        with pytest.raises(ValueError, match=r"the namespace .* is torch's own"):
            add_kernel.as_torch_op(name)
    import torch

    other = torch.library.Library("tl_jit_other", "DEF")
    other.define("taken(Tensor x) -> Tensor")
    with pytest.raises(ValueError, match="already an operator another library registered"):
        add_kernel.as_torch_op("tl_jit_other::taken")
    with pytest.raises(ValueError, match=r"mutates: \['Z'\]"):
        add_kernel.as_torch_op("tl_jit_test::add_z", mutates=["Z"])
    # The same kernel under its name again: the same op.
    assert add_kernel.as_torch_op("tl_jit_test::add") is ops[0]
    with pytest.raises(ValueError, match="already registered for another kernel"):
        _kernels()[1].as_torch_op("tl_jit_test::add")
