"""The eager style of ``@tl_jit.jit``: binding, specialization, caching, outputs, errors.

Every kernel here builds for the ``c`` target (tiny kernels, a fraction of a second
each); the ported TileLang tests and the suite's kernels in eager form live in
integration_tests/eager.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T
from tl_jit.eager import EagerJITFunction

SCALE = 2.0
PRELUDE_RUNS: list[int] = []


def _add_kernel() -> Any:
    @tl_jit.jit(target="c")
    def add(A, B, dtype: T.dtype = T.float32, unroll: int = 1):
        N = T.const("N")
        A: T.Tensor[[N], dtype]
        B: T.Tensor[[N], dtype]
        C = T.empty((N,), dtype)
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                C[i] = A[i] + B[i] * unroll
        return C

    return add


def test_an_eager_function_binds_t_const_from_the_tensors_and_returns_its_output(
    cache_dir: Path,
) -> None:
    add = _add_kernel()
    assert isinstance(add, EagerJITFunction)
    a = np.arange(8, dtype=np.float32)
    b = np.ones(8, dtype=np.float32)
    np.testing.assert_array_equal(add(a, b), a + b)
    # A second call with the same signature is served by the generated dispatcher,
    # the function of the partial the object is (the object keeps its class).
    assert add._call.__code__.co_filename.startswith("<eager dispatch")
    assert type(add) is EagerJITFunction
    np.testing.assert_array_equal(add(b, a), a + b)
    assert len(add._specializations) == 1
    # Another T.const value, another kernel; template arguments by position or name.
    np.testing.assert_array_equal(add(a[:4], b[:4]), a[:4] + b[:4])
    np.testing.assert_array_equal(add(a, b, T.float32, 3), a + 3 * b)
    np.testing.assert_array_equal(add(a, b, unroll=3), a + 3 * b)
    assert len(add._specializations) == 3


def test_a_t_dynamic_dim_stays_symbolic_in_one_kernel(cache_dir: Path) -> None:
    @tl_jit.jit(target="c")
    def scale(A, factor: float = 2.0):
        N = T.dynamic("N")
        A: T.Tensor[[N], T.float32]
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                A[i] = A[i] * factor

    for n in (3, 5, 8):
        x = np.arange(n, dtype=np.float32)
        assert scale(x) is None  # no T.empty: writes its argument in place
        np.testing.assert_array_equal(x, 2 * np.arange(n, dtype=np.float32))
    assert len(scale._specializations) == 1


def test_a_tensor_of_another_dtype_is_refused_naming_the_parameter_without_recompiling(
    cache_dir: Path,
) -> None:
    add = _add_kernel()
    a = np.ones(4, dtype=np.float32)
    add(a, a)
    with pytest.raises(TypeError, match=r"parameter 'A'.*float32.*float64"):
        add(a.astype(np.float64), a)
    with pytest.raises(TypeError, match=r"parameter 'B'.*float32.*float64"):
        add(np.ones(5, np.float32), np.ones(5, np.float64))
    assert len(add._specializations) == 2  # the float64 call compiled nothing new for A


def test_tensors_that_disagree_on_a_t_const_are_refused_naming_the_parameter(
    cache_dir: Path,
) -> None:
    add = _add_kernel()
    with pytest.raises(ValueError, match=r"parameter 'B'.*N == 8.*\[4\]"):
        add(np.ones(8, np.float32), np.ones(4, np.float32))
    add(np.ones(8, np.float32), np.ones(8, np.float32))
    # Cache hit on A's size: the kernel's own argument check names B.
    with pytest.raises(ValueError, match="parameter 'B'"):
        add(np.ones(8, np.float32), np.ones(4, np.float32))


def test_missing_or_non_array_arguments_are_clear_type_errors(cache_dir: Path) -> None:
    add = _add_kernel()
    with pytest.raises(TypeError, match="'B'"):
        add(np.ones(8, np.float32))
    with pytest.raises(TypeError, match=r"parameter 'B': expected an array"):
        add(np.ones(8, np.float32), [1.0] * 8)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'Q'.*T.const symbols: N"):
        add(np.ones(8, np.float32), np.ones(8, np.float32), Q=3)


class _CannotExport:
    """A DLPack producer whose export fails (as a read-only array's does for DLPack < 1.0)."""

    shape = (8,)

    def __dlpack__(self, **_kwargs: Any) -> Any:
        raise BufferError("Cannot export readonly array")

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def test_an_array_that_cannot_be_read_is_refused_naming_the_parameter(cache_dir: Path) -> None:
    """A read-only masked array, or a producer whose export fails, raised a bare
    BufferError naming no parameter while the call's dims were read."""
    add = _add_kernel()
    readonly = np.ones(8, np.float32)
    readonly.setflags(write=False)
    masked = np.ma.masked_array(readonly, mask=np.zeros(8, bool))
    with pytest.raises(TypeError, match=r"parameter 'A': expected an array without a mask"):
        add(masked, np.ones(8, np.float32))
    with pytest.raises(TypeError, match=r"parameter 'B': expected .*export"):
        add(np.ones(8, np.float32), _CannotExport())


def _unused_const() -> Any:
    @tl_jit.jit(target="c")
    def unused(A):
        N, M = T.const("N M")  # noqa: RUF059 - M unused: the error under test
        A: T.Tensor[[N], T.float32]
        with T.Kernel(1, threads=1) as _:
            A[0] = 1.0

    return unused


def _expression_const() -> Any:
    @tl_jit.jit(target="c")
    def doubled(A):
        N = T.const("N")
        A: T.Tensor[[N * 2], T.float32]
        with T.Kernel(1, threads=1) as _:
            A[0] = 1.0

    return doubled


@pytest.mark.parametrize("factory", [_unused_const, _expression_const])
def test_a_t_const_never_used_directly_in_a_shape_is_an_error(
    cache_dir: Path, factory: Any
) -> None:
    kernel = factory()
    with pytest.raises(tl_jit.language.KernelSyntaxError, match=r"never a dim .* by itself"):
        kernel(np.ones(8, np.float32))


def test_outputs_come_back_in_return_order_and_must_all_be_returned(cache_dir: Path) -> None:
    @tl_jit.jit(target="c")
    def split(A):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        low = T.empty((N,), T.float32)
        count = T.empty((N,), T.int32)
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                low[i] = A[i] - 1.0
                count[i] = i
        return count, low

    a = np.arange(4, dtype=np.float32)
    count, low = split(a)
    np.testing.assert_array_equal(count, np.arange(4, dtype=np.int32))
    np.testing.assert_array_equal(low, a - 1)
    assert [p.name for p in split.compile(N=4).params] == ["A", "count", "low"]

    @tl_jit.jit(target="c")
    def forgets(A):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        out = T.empty((N,), T.float32)
        with T.Kernel(1, threads=1) as _:
            out[0] = A[0]

    with pytest.raises(tl_jit.language.KernelSyntaxError, match=r"must be returned.*out"):
        forgets(a)


def test_compile_ahead_of_time_binds_t_const_by_keyword(cache_dir: Path) -> None:
    add = _add_kernel()
    kernel = add.compile(N=6)
    a = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(kernel(a, a), 2 * a)
    func = add.get_tir(N=6, unroll=2)
    assert [str(p.name) for p in func.params] == ["A", "B", "C"]
    assert "6" in func.script()
    with pytest.raises(TypeError, match=r"T.const 'N' is read from A.shape\[0\]"):
        add.compile()
    kernels = add.par_compile([{"N": 2}, {"N": 3, "unroll": 2}])
    assert [k.params[0].shape for k in kernels if k is not None] == [(2,), (3,)]


def test_t_const_sizes_are_checked_against_32_bit_indices_naming_them(cache_dir: Path) -> None:
    """Sizes a kernel cannot index are refused naming the T.const or the parameter, where
    TVM's own error said only "Literal value ... exceeds range of int32"; numpy's integers
    are sizes too."""
    add = _add_kernel()
    with pytest.raises(
        ValueError, match=r"T.const 'N': expected at most 2147483647 .*got N=1099511627776"
    ):
        add.compile(N=2**40)
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (2**31,), (0,))
    with pytest.raises(ValueError, match=r"T.const 'N'.* got A.shape\[0\] = 2147483648"):
        add(huge, huge)
    kernel = add.compile(N=np.int64(6))
    a = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(kernel(a, a), 2 * a)

    @tl_jit.jit(target="c")
    def rows(A):
        M, N = T.const("M N")
        A: T.Tensor[[M, N], T.float32]
        B = T.empty((M,), T.float32)
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(M):
                B[i] = A[i, 0]
        return B

    wide = np.lib.stride_tricks.as_strided(np.zeros(4, np.float32), (2**31 - 1, 4), (0, 4))
    with pytest.raises(ValueError, match=r"parameter 'A': expected at most 2147483647 elements"):
        rows(wide)


def test_a_zero_size_for_a_t_const_names_the_parameter_and_t_dynamic(cache_dir: Path) -> None:
    add = _add_kernel()
    empty = np.zeros(0, np.float32)
    with pytest.raises(
        ValueError,
        match=r"parameter 'A': expected a positive size for T.const "
        r"'N' \(its shape\[0\]\), got shape \[0\]; .*T.dynamic",
    ):
        add(empty, empty)


def test_a_t_const_given_by_keyword_is_blamed_as_such(cache_dir: Path) -> None:
    add = _add_kernel()
    a = np.zeros(3, np.float32)
    with pytest.raises(
        ValueError,
        match=r"expected shape\[0\] == N == 5 \(T.const 'N' given as N=5\), got shape \[3\]",
    ):
        add(a, a, N=5)


def test_strided_tensor_strides_are_in_elements(cache_dir: Path) -> None:
    @tl_jit.jit(target="c")
    def copy(A, B):
        N, M, S = T.const("N M S")
        A: T.StridedTensor[[N, M], [S, 2], T.float32]
        B: T.Tensor[[N, M], T.float32]
        with T.Kernel(1, threads=1) as _:
            for i, j in T.grid(N, M):
                B[i, j] = A[i, j]

    base = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
    view = base[:, ::2]  # element strides (6, 2); numpy says (24, 8) bytes
    out = np.zeros((4, 3), np.float32)
    copy(view, out)
    np.testing.assert_array_equal(out, view)
    assert copy.get_tir(view, out).params[0].ty.strides[0] == 6


def test_a_macro_reads_shapes_from_its_tensors_and_returns_its_output(cache_dir: Path) -> None:
    @T.macro
    def doubled(A):
        (n,) = A.shape
        out = T.empty(n, dtype=A.dtype)
        assert n > 0, "empty input"
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(n):
                out[i] = A[i] * 2.0
        return out

    @tl_jit.jit(target="c")
    def twice(A):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        return doubled(A)

    a = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(twice(a), 2 * a)


def test_t_ptr_parameters_become_tensors_through_make_tensor(cache_dir: Path) -> None:
    @tl_jit.jit(target="c")
    def fill(A: T.ptr, N: int, value: float):
        A = T.make_tensor(A, (N,), T.float32)
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                A[i] = value

    a = np.zeros(4, np.float32)
    fill(a, 4, 1.5)
    np.testing.assert_array_equal(a, np.full(4, 1.5, np.float32))
    with pytest.raises(ValueError, match="parameter 'A'"):
        fill(np.zeros(3, np.float32), 4, 1.5)


def _scaled() -> Any:
    @tl_jit.jit(target="c")
    def scaled(A):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        PRELUDE_RUNS.append(N)
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                A[i] = A[i] * SCALE

    return scaled


def test_module_globals_the_body_reads_key_the_disk_cache(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = np.ones(4, np.float32)
    _scaled()(a)
    np.testing.assert_array_equal(a, np.full(4, 2.0, np.float32))
    monkeypatch.setitem(globals(), "SCALE", 3.0)
    b = np.ones(4, np.float32)
    _scaled()(b)  # a fresh function object: the disk memo must not return the 2.0 kernel
    np.testing.assert_array_equal(b, np.full(4, 3.0, np.float32))


def test_the_body_runs_once_per_compile_and_leaks_no_symbolic_dims(cache_dir: Path) -> None:
    from tl_ir import frontend

    PRELUDE_RUNS.clear()
    scaled = _scaled()
    for _ in range(3):
        scaled(np.ones(4, np.float32))
    assert PRELUDE_RUNS == [4]
    assert frontend._LOCAL.pending_symbolic == {}
    assert frontend.current_state() is None


def test_out_idx_is_refused_for_an_eager_function() -> None:
    with pytest.raises(ValueError, match="out_idx is for kernels returned by a builder"):

        @tl_jit.jit(out_idx=[-1])
        def kernel(A):
            A: T.Tensor[[4], T.float32]
            with T.Kernel(1, threads=1) as _:
                A[0] = 1.0


def test_a_classic_builder_is_not_routed_to_the_eager_front_end() -> None:
    @tl_jit.jit
    def builder(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=1) as _:
                A[0] = 1.0

        return main

    assert isinstance(builder, tl_jit.JITFunction)


def test_t_empty_inside_a_kernel_and_t_const_outside_an_eager_body_are_scope_errors(
    cache_dir: Path,
) -> None:
    @tl_jit.jit(target="c")
    def late(A):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        with T.Kernel(1, threads=1) as _:
            out = T.empty((N,), T.float32)
            out[0] = A[0]
        return out

    with pytest.raises(T.ScopeError, match="top level of the kernel body"):
        late(np.ones(4, np.float32))
    with pytest.raises(T.ScopeError, match=r"T.const"):
        T.const("N")


def test_dtype_spellings_are_one_specialization(cache_dir: Path) -> None:
    add = _add_kernel()
    a = np.ones(4, np.float32)
    for spelling in (T.float32, "float32", np.float32, np.dtype("float32")):
        np.testing.assert_array_equal(add(a, a, spelling), 2 * a)
    assert len(add._specializations) == 1
    with pytest.raises(TypeError, match="parameter 'dtype'"):
        add(a, a, "float33")


def test_autotune_tunes_a_local_eager_function_in_this_process(cache_dir: Path) -> None:
    add = _add_kernel()
    tuned = tl_jit.autotune(
        configs=[{"unroll": 1}, {"unroll": 2}],
        warmup=1,
        rep=2,
        ref_prog=lambda a, b: a + b,
    )(add)
    a = np.arange(8, dtype=np.float32)
    # unroll=2 computes a + 2b: it fails the check, so unroll=1 wins.
    with pytest.warns(tl_jit.AutotuneWarning, match="'unroll': 2"):
        np.testing.assert_array_equal(tuned(a, a), 2 * a)
    assert tuned.compile(a, a).config == {"unroll": 1}
    assert [r.error is None for r in tuned.results] == [True, False]


def test_parameters_named_like_the_dispatchers_locals_are_forwarded_as_given(
    cache_dir: Path,
) -> None:
    # The generated dispatcher's own locals (the kernel it looked up, the validity of the
    # lookup) must not shadow a parameter it forwards to the slow path: a template
    # parameter named ``kernel`` was forwarded as None on every miss.
    @tl_jit.jit(target="c")
    def scaled(A, kernel: int = 1, valid: int = 1):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        C = T.empty((N,), T.float32)
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                C[i] = A[i] * kernel + valid
        return C

    a = np.ones(4, np.float32)
    assert float(scaled(a)[0]) == 2.0
    assert float(scaled(a, 3)[0]) == 4.0  # a miss: the slow path binds kernel=3
    assert float(scaled(a, kernel=5, valid=0)[0]) == 5.0
    assert float(scaled(a, 3)[0]) == 4.0  # the dispatcher's entry


def test_a_scalar_declared_with_a_template_dtype_takes_that_dtype() -> None:
    # `x: dtype` (dtype a template parameter) was refused: "declared with 'dtype'".
    @tl_jit.jit(target="c")
    def shift(A: Any, x: Any = 2.0, dtype: T.dtype = "float32") -> Any:
        N = T.const("N")
        A: T.Tensor[[N], dtype]
        x: dtype
        C = T.empty((N,), dtype)
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                C[i] = A[i] + x
        return C

    assert shift(np.zeros(4, np.float32), 3.0).tolist() == [3.0] * 4
    assert shift(np.zeros(4, np.int32), 7, dtype="int32").tolist() == [7] * 4
    with pytest.raises(ValueError, match=r"parameter 'x': expected an int in"):
        shift(np.zeros(4, np.int32), 2**31, dtype="int32")


def test_a_const_only_an_output_has_is_given_by_keyword() -> None:
    # Was refused at every call: "T.const 'N' is never a dim of a declared tensor shape".
    @tl_jit.jit(target="c")
    def tile(A: Any) -> Any:
        M, N = T.const("M N")
        A: T.Tensor[[M], T.float32]
        C = T.empty((N,), T.float32)
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                C[i] = A[i % M] + 1.0
        return C

    a = np.arange(2, dtype=np.float32)
    for _ in range(2):  # the second round goes through the generated dispatcher
        assert tile(a, N=3).tolist() == [1.0, 2.0, 1.0]
        assert tile(a, N=5).tolist() == [1.0, 2.0, 1.0, 2.0, 1.0]
        assert tile(a, N=np.int64(1)).tolist() == [1.0]
    with pytest.raises(Exception, match=r"give it by keyword \(N=<int>\)"):
        tile(a)
