"""Front-end edge cases: PEP 563 annotations, exec-defined kernels, errors outside a
kernel body, decorator forms."""

# ruff: noqa: F841  (kernel bodies bind launch vars they do not use)
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
from tl_ir.errors import KernelDtypeError, KernelValueError
from tl_ir.interpret import run

DATA = Path(__file__).parent / "data"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"tl_ir_test_{name}", DATA / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pep563_module_with_symbolic_dim_and_scalar_param():
    module = _load("pep563_kernel")
    func = module.scale(8, 4)
    a, alpha, b = func.params
    assert a.ty.shape[0].same_as(b.ty.shape[0])
    assert str(alpha.ty.dtype) == "float32"
    x = np.arange(40, dtype=np.float32).reshape(5, 8)
    y = np.zeros_like(x)
    run(func, [x, 2.0, y])
    np.testing.assert_array_equal(y, 2 * x)


def test_kernel_defined_through_exec_is_a_syntax_error():
    namespace = {"T": T}
    source = (
        "def build():\n"
        "    @T.prim_func\n"
        "    def main(A: T.Tensor((4,), 'float32')):\n"
        "        A[0] = T.float32(0)\n"
        "    return main\n"
    )
    exec(compile(source, "<generated>", "exec"), namespace)
    with pytest.raises(tl_ir.KernelSyntaxError, match="cannot read the source"):
        namespace["build"]()


def test_decorator_with_options_and_non_function():
    def build():
        @T.prim_func(check_well_formed=False)
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                A[0] = T.float32(0)

        return main

    assert tl_ir.kernel_launch(build()) is not None
    with pytest.raises(tl_ir.KernelTypeError, match="expected a Python function"):
        T.prim_func(42)


def test_constructs_outside_a_kernel_body_raise_scope_errors():
    with pytest.raises(tl_ir.ScopeError, match=re.escape("inside a @T.prim_func")):
        T.Kernel(1).__enter__()
    with pytest.raises(tl_ir.ScopeError, match=re.escape("inside `with T.Kernel")):
        T.alloc_shared((4,), "float32")
    with pytest.raises(tl_ir.ScopeError):
        T.get_thread_binding()


def test_bad_kernel_arguments_are_type_errors():
    with pytest.raises(tl_ir.KernelTypeError, match="0 to 3 grid extents"):
        T.Kernel(1, 1, 1, 1)
    with pytest.raises(tl_ir.KernelTypeError, match="positive extent"):
        T.Kernel(0)
    with pytest.raises(tl_ir.KernelTypeError, match="threads"):
        T.Kernel(1, threads=(1, 2, 3, 4))
    with pytest.raises(tl_ir.KernelTypeError, match="num_stages"):
        T.Pipelined(4, num_stages=-1)
    with pytest.raises(tl_ir.KernelTypeError, match="2 order entries and 1 stage entries"):
        T.Pipelined(4, num_stages=2, order=[0, 1], stage=[0])
    with pytest.raises(tl_ir.KernelTypeError, match="identifier"):
        T.symbolic("not-a-name")
    # A float dim was taken, and failed later in T.Tensor without naming the dtype.
    with pytest.raises(
        KernelDtypeError,
        match=r"T.symbolic\(name, dtype=...\): expected an integer dtype.*got float32",
    ):
        T.symbolic("n", dtype="float32")
    with pytest.raises(KernelDtypeError, match=r"T.dynamic\(name, dtype=...\).*got bool"):
        T.dynamic("n", "bool")
    assert str(T.symbolic("n64", dtype=T.int64).ty.dtype) == "int64"
    with pytest.raises(tl_ir.UnknownDtypeError):
        T.Tensor((4,), "complex64")
    with pytest.raises(tl_ir.KernelTypeError, match="non-negative dims"):
        T.Tensor((-1, 4), "float32")


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ({"stage": [-5]}, r"stage=\[-5\]\): expected stages in \[0, 2147483646\].*got -5"),
        ({"stage": [10**12]}, r"expected stages in \[0, 2147483646\].*got 1000000000000"),
        ({"num_stages": 2, "stage": [0, 2]}, r"\[0, 1\] with num_stages=2, got 2 for statement 1"),
        ({"order": [0, 0], "stage": [0, 1]}, r"order=\[0, 0\]\).*got 0 for statements 0 and 1"),
        ({"order": [1, -1]}, r"order=\[1, -1\]\): expected non-negative.*got -1"),
    ],
)
def test_pipelined_schedule_values_are_checked(schedule, message):
    # They were accepted: stage=[10**12] made a pipeline 10**12 + 1 stages deep.
    with pytest.raises(KernelValueError, match=message):
        T.Pipelined(4, **schedule)
    T.Pipelined(4, order=[1, 0, 2], stage=[0, 0, 2])  # TileLang's own schedules pass
    T.Pipelined(4, num_stages=3, order=[2, 0, 1], stage=[0, 2, 2])


def test_unknown_name_on_T_is_reported():
    with pytest.raises(AttributeError, match="has no name 'no_such_thing'"):
        T.no_such_thing  # noqa: B018
    with pytest.raises(tl_ir.UnknownDtypeError, match="float8"):
        T.float8  # noqa: B018


def test_gemm_and_reduce_operand_errors_inside_kernels():
    def bad_gemm_c():
        @T.prim_func
        def main(A: T.Tensor((8, 8), "float32")):
            with T.Kernel(1, threads=32) as bx:
                a = T.alloc_shared((8, 4), "float32")
                b = T.alloc_shared((4, 8), "float32")
                c = T.alloc_fragment((8, 4), "float32")
                T.gemm(a, b, c)

        return main

    def bad_reduce_kind():
        @T.prim_func
        def main(A: T.Tensor((8, 8), "float32")):
            with T.Kernel(1, threads=32) as bx:
                t = T.alloc_fragment((8, 8), "float32")
                r = T.alloc_fragment((8,), "float32")
                T.reduce(t, r, 1, "mean")

        return main

    def bad_atomic():
        @T.prim_func
        def main(A: T.Tensor((8, 8), "float32")):
            with T.Kernel(1, threads=32) as bx:
                T.atomic_or(A[0, 0], 1)  # a float buffer (T.atomic_add(A, 1.0) is valid)

        return main

    with pytest.raises(tl_ir.ShapeMismatchError, match="expected C to be M x N"):
        bad_gemm_c()
    with pytest.raises(tl_ir.KernelTypeError, match="expected kind to be one of"):
        bad_reduce_kind()
    with pytest.raises(tl_ir.KernelTypeError, match="expected dst in an integer buffer"):
        bad_atomic()


def test_bug_inside_tl_ir_is_reported_as_internal_error(monkeypatch):
    import tl_ir.language as language

    # A helper called with the wrong arity fails inside tl_ir's own frame.
    monkeypatch.setattr(language._tile_ops, "check_same_tile", language._operands.fmt_extents)

    def build():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                T.copy(A, B)

        return main

    with pytest.raises(tl_ir.TileLangInternalError, match="internal error in tl_ir") as info:
        build()
    assert isinstance(info.value.__cause__, TypeError)
    assert "T.copy(A, B)" in info.value.source_line


def test_bad_annotation_is_located_in_both_annotation_forms():
    def call_form():
        @T.prim_func
        def main(A: T.Tensor((4,), "float99")):
            A[0] = T.float32(0)

        return main

    def subscript_form():
        @T.prim_func
        def main(A: T.Tensor[(4,), "float99"]):  # noqa: F821 (a dtype, not a name)
            A[0] = T.float32(0)

        return main

    for build in (call_form, subscript_form):
        with pytest.raises(tl_ir.UnknownDtypeError) as info:
            build()
        assert info.value.filename == __file__
        assert '"float99"' in info.value.source_line


@pytest.mark.parametrize("module_name", ["shadowed_global_kernel", "shadowed_global_pep563_kernel"])
def test_builder_arguments_used_only_in_annotations_shadow_module_globals(module_name):
    # The module defines globals N = 16 and dtype = "float64"; the builder's own
    # arguments are what the annotations name, as in Python's scoping.
    module = _load(module_name)
    for n in (64, 32):
        func = module.copy_kernel(n)
        assert [tuple(int(d) for d in p.ty.shape) for p in func.params] == [(n,), (n,)]
        assert [str(p.ty.dtype) for p in func.params] == ["float32", "float32"]
    assert str(module.copy_kernel(8, "int32").params[0].ty.dtype) == "int32"


def test_constant_out_of_bounds_element_is_a_build_error_naming_buffer_index_extent():
    def element():
        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                A[8] = T.float32(0)

        return main

    def tile():
        @T.prim_func
        def main(A: T.Tensor((8, 4), "float32"), B: T.Tensor((8, 4), "float32")):
            with T.Kernel(1, threads=1) as bx:
                T.copy(A[4:12, 0:4], B[0:8, 0:4])

        return main

    def negative_read():
        @T.prim_func
        def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                B[0] = A[-9]

        return main

    with pytest.raises(tl_ir.KernelTypeError, match=r"index 8 of buffer A .* \[-8, 8\).*got 8"):
        element()
    tile()  # a partial tile is legal: its outside part reads zeros and is not written
    # -1 is the last element (Python's and TileLang's rule); -9 is before the first.
    with pytest.raises(tl_ir.KernelTypeError, match=r"index -9 of buffer A"):
        negative_read()


def test_try_in_a_kernel_is_reported_at_the_try_line():
    def build():
        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                try:
                    A[0] = T.float32(0)
                except ValueError:
                    A[1] = T.float32(1)

        return main

    with pytest.raises(tl_ir.KernelSyntaxError, match="try/except is not supported") as info:
        build()
    assert info.value.source_line.strip() == "try:"
    assert info.value.lineno == build.__code__.co_firstlineno + 4


def _copy_then_reduce(T, src, staged, dst):
    # A plain Python helper issuing tile ops, as TileLang programs write them.
    T.copy(src, staged)
    T.reduce_sum(staged, dst, dim=1)


def test_tile_ops_issued_from_a_python_helper_are_kept():
    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            staged = T.alloc_fragment((4, 8), "float32")
            row = T.alloc_fragment((4,), "float32")
            _copy_then_reduce(T, A, staged, row)
            T.copy(row, B)

    assert [type(op).__name__ for op in tl_ir.tile_ops(main)] == ["CopyOp", "ReduceOp", "CopyOp"]
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    b = np.zeros(4, np.float32)
    run(main, [a, b])
    np.testing.assert_array_equal(b, a.sum(axis=1))
