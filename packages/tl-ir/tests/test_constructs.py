# ruff: noqa: F841  (kernel bodies bind launch vars they do not use)
"""Each Tier 1 construct parses into the expected IR, checked through typed descriptions."""

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import tirx

import tl_ir
import tl_ir.language as T
from tl_ir import (
    AtomicOp,
    CopyOp,
    CumsumOp,
    FillOp,
    GemmOp,
    PrintOp,
    ReduceOp,
    buffer_scope,
    kernel_launch,
    loop_kind,
    loops,
    num_stages,
    tile_ops,
)


def _ints(values):
    return tuple(int(v) for v in values)


def _allocs(func):
    found = {}

    def visit(stmt):
        found[str(stmt.buffer.name)] = stmt.buffer

    tvm_ffi.structural_walk(func.body, (tirx.AllocBuffer, visit), order="pre")
    return found


def test_kernel_launch_grid_threads_and_vars():
    def build():
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float32")):
            with T.Kernel(4, 2, threads=(32, 4)) as (bx, by):
                tx = T.get_thread_binding(0)
                ty = T.get_thread_binding(1)
                A[by * 32 + ty, bx * 16 + tx % 16] = T.float32(1)

        return main

    launch = kernel_launch(build())
    assert launch is not None
    assert _ints(launch.grid) == (4, 2)
    assert _ints(launch.threads) == (32, 4)
    assert launch.num_threads == 128
    assert [str(v.name) for v in launch.block_vars] == ["bx", "by"]
    assert len(launch.thread_vars) == 2


def test_single_block_dim_binds_a_var():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32")):
        with T.Kernel(T.ceildiv(128, 32), threads=32) as bx:
            A[bx * 32 + T.get_thread_binding()] = T.float32(0)

    launch = kernel_launch(main)
    assert _ints(launch.grid) == (4,)
    assert launch.num_threads == 32


def test_scopes_of_allocations():
    @T.prim_func
    def main(A: T.Tensor((16, 16), "float16")):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((16, 16), "float16")
            f = T.alloc_fragment((16, 16), "float32")
            loc = T.alloc_local((4,), "int32")
            v = T.alloc_var("int32", init=3)
            T.copy(A, s)
            T.copy(s, f)
            loc[0] = v

    allocs = _allocs(main)
    assert buffer_scope(allocs["s"]) == "shared.dyn" and tl_ir.is_shared(allocs["s"])
    assert buffer_scope(allocs["f"]) == "local.fragment" and tl_ir.is_fragment(allocs["f"])
    assert buffer_scope(allocs["loc"]) == "local"
    assert buffer_scope(allocs["v"]) == "local.var"
    assert _ints(allocs["v"].ty.shape) == (1,)
    assert str(allocs["f"].ty.dtype) == "float32"
    assert tl_ir.is_global(main.params[0])


def test_loop_kinds_are_annotated():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment((8, 8), "float32")
            for k in T.Pipelined(4, num_stages=2):
                for i, j in T.Parallel(8, 8):
                    f[i, j] = A[k * 8 + i, j]
            for a in T.serial(2):
                for b in T.unroll(2):
                    for c in T.vectorized(4):
                        A[a, b * 4 + c] = f[0, 0]
            for s in T.serial(1, 9, 2):
                A[s, 0] = T.float32(0)
            for i2, j2 in T.grid(2, 2):
                A[i2, j2] = T.float32(1)

    kinds = [(str(lp.loop_var.name), loop_kind(lp)) for lp in loops(main)]
    assert kinds == [
        ("k", "pipelined"),
        ("i", "parallel"),
        ("j", "parallel"),
        ("a", "serial"),
        ("b", "unroll"),
        ("c", "vectorized"),
        ("s", "serial"),
        ("i2", "serial"),
        ("j2", "serial"),
    ]
    by_name = {str(lp.loop_var.name): lp for lp in loops(main)}
    assert num_stages(by_name["k"]) == 2
    assert num_stages(by_name["i"]) is None
    assert int(by_name["s"].min) == 1 and int(by_name["s"].step) == 2
    assert by_name["i"].kind == tirx.ForKind.SERIAL


def test_copy_three_operand_forms_record_extents():
    @T.prim_func
    def main(A: T.Tensor((100, 70), "float32"), C: T.Tensor((100, 70), "float32")):
        with T.Kernel(3, 4, threads=128) as (bx, by):
            s = T.alloc_shared((32, 32), "float32")
            T.copy(A[by * 32, bx * 32], s)
            T.copy(A[by * 32 : by * 32 + 32, bx * 32 : bx * 32 + 32], s)
            T.copy(s, C[by * 32, bx * 32])
            T.copy(A, C)

    ops = tile_ops(main)
    assert all(isinstance(op, CopyOp) for op in ops)
    anchored, sliced, store, whole = ops
    assert _ints(anchored.src.extents) == (32, 32)
    assert str(anchored.src.buffer.name) == "A" and str(anchored.dst.buffer.name) == "s"
    assert anchored.src.access == tl_ir.ACCESS_READ and anchored.dst.access == tl_ir.ACCESS_WRITE
    assert _ints(sliced.src.extents) == (32, 32)
    assert _ints(store.dst.extents) == (32, 32)
    assert str(store.dst.mins[0]) == "by * 32"
    assert _ints(whole.src.extents) == (100, 70) and whole.src.is_full


def test_copy_rank_alignment_with_unit_dims():
    @T.prim_func
    def main(A: T.Tensor((8, 64), "float32")):
        with T.Kernel(8, threads=64) as bx:
            row = T.alloc_shared((64,), "float32")
            T.copy(A[bx, 0], row)
            T.copy(A[bx, 0:64], row)

    anchored, sliced = tile_ops(main)
    assert _ints(anchored.src.extents) == (1, 64)
    assert _ints(sliced.src.extents) == (1, 64)


def test_fill_clear_gemm_reduce_cumsum_atomic_print():
    @T.prim_func
    def main(
        A: T.Tensor((32, 16), "float16"),
        B: T.Tensor((32, 16), "float16"),
        Out: T.Tensor((32,), "float32"),
    ):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((32, 16), "float16")
            b = T.alloc_shared((32, 16), "float16")
            c = T.alloc_fragment((32, 32), "float32")
            r = T.alloc_fragment((32,), "float32")
            T.fill(c, 1.5)
            T.clear(r)
            T.gemm(a, b, c, transpose_B=True, clear_accum=True)
            T.reduce_max(c, r, dim=1, clear=False)
            T.reduce(c, r, 1, "abssum")
            T.cumsum(c, dim=1, reverse=True)
            T.atomic_add(Out[0], r[0])
            T.atomic_max(Out[0:32], r)
            T.print(r[0], msg="r0")

    fill, clear, gemm, rmax, rabs, cs, add, amax, prt = tile_ops(main)
    assert isinstance(fill, FillOp) and float(fill.value.value) == 1.5
    assert isinstance(clear, FillOp) and float(clear.value.value) == 0.0
    assert str(clear.value.ty.dtype) == "float32"
    assert isinstance(gemm, GemmOp)
    assert (gemm.transpose_a, gemm.transpose_b, gemm.clear_accum) == (False, True, True)
    assert (int(gemm.M), int(gemm.N), int(gemm.K)) == (32, 32, 16)
    assert gemm.c.access == tl_ir.ACCESS_READ_WRITE
    assert isinstance(rmax, ReduceOp) and (rmax.kind, rmax.dim, rmax.clear) == ("max", 1, False)
    assert isinstance(rabs, ReduceOp) and (rabs.kind, rabs.dim, rabs.clear) == ("abssum", 1, True)
    assert isinstance(cs, CumsumOp) and (cs.dim, cs.reverse) == (1, True)
    assert cs.src.buffer.same_as(cs.dst.buffer)
    assert isinstance(add, AtomicOp) and add.kind == "add" and _ints(add.dst.extents) == (1,)
    assert isinstance(amax, AtomicOp) and amax.kind == "max"
    assert isinstance(amax.value, tl_ir.Region) and _ints(amax.value.extents) == (32,)
    assert isinstance(prt, PrintOp) and prt.msg == "r0"


def test_symbolic_dims_and_scalar_params():
    def build(N):
        M = T.symbolic("M")

        @T.prim_func
        def main(
            A: T.Tensor((M, N), "float32"),
            alpha: T.float32,
            B: T.Tensor((T.dynamic("M"), N), "float32"),
        ):
            with T.Kernel(T.ceildiv(M, 16), threads=128) as bx:
                t = T.alloc_fragment((16, N), "float32")
                T.copy(A[bx * 16, 0], t)
                for i, j in T.Parallel(16, N):
                    t[i, j] = t[i, j] * alpha
                T.copy(t, B[bx * 16, 0])

        return main

    f = build(32)
    a, alpha, b = f.params
    assert a.ty.shape[0].same_as(b.ty.shape[0])
    assert str(a.ty.shape[0].name) == "M" and str(a.ty.shape[0].ty.dtype) == "int32"
    assert str(alpha.ty.dtype) == "float32"
    f2 = build(32)
    assert not f2.params[0].ty.shape[0].same_as(a.ty.shape[0])


def test_distinct_symbolic_vars_of_one_name_are_rejected():
    from tvm import tirx as tx

    def build():
        m1, m2 = tx.Var("M", "int32"), tx.Var("M", "int32")

        @T.prim_func
        def main(A: T.Tensor((m1,), "float32"), B: T.Tensor((m2,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                B[0] = A[0]

        return main

    with pytest.raises(tl_ir.KernelTypeError, match="symbolic dim 'M'"):
        build()


def test_compile_time_if_is_resolved_and_runtime_control_flow_kept():
    def build(flag):
        @T.prim_func
        def main(A: T.Tensor((16,), "int32"), n: T.int32):
            with T.Kernel(1, threads=1) as bx:
                x = T.alloc_var("int32")
                x = 0
                if flag:
                    T.fill(A, 1)
                else:
                    T.fill(A, 2)
                while x < n:
                    x = x + 1
                if x > 4:
                    A[0] = x

        return main

    on, off = build(True), build(False)
    assert [int(op.value.value) for op in tile_ops(on)] == [1]
    assert [int(op.value.value) for op in tile_ops(off)] == [2]
    kinds = []

    tvm_ffi.structural_walk(
        on.body, ((tirx.While, tirx.IfThenElse), lambda s: kinds.append(type(s).__name__))
    )
    assert sorted(kinds) == ["IfThenElse", "While"]


def test_alloc_var_assignment_stores_into_the_var():
    @T.prim_func
    def main(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            acc = T.alloc_var("float32", init=0)
            for j in T.serial(8):
                acc = acc + A[j]
                A[j] = acc

    stores = []

    tvm_ffi.structural_walk(main.body, (tirx.BufferStore, stores.append))
    var_stores = [s for s in stores if buffer_scope(s.buffer) == "local.var"]
    assert len(var_stores) == 2  # the init and the assignment in the loop
    assert all(s.buffer.same_as(var_stores[0].buffer) for s in var_stores)


def test_math_names_and_hints():
    @T.prim_func
    def main(A: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=16) as bx:
            s = T.alloc_shared((4, 4), "float32")
            T.annotate_layout({s: lambda i, j: (j, i)})
            T.use_swizzle(8)
            for i, j in T.Parallel(4, 4):
                s[i, j] = T.clamp(
                    T.exp(A[i, j])
                    + T.exp2(A[i, j])
                    + T.log(T.abs(A[i, j]) + 1.0)
                    + T.sqrt(T.abs(A[i, j]))
                    + T.rsqrt(T.float32(2))
                    + T.tanh(A[i, j])
                    + T.sigmoid(A[i, j])
                    + T.sin(A[i, j])
                    + T.cos(A[i, j])
                    + T.pow(A[i, j], T.float32(2))
                    + T.floor(A[i, j])
                    + T.ceil(A[i, j])
                    + T.round(A[i, j])
                    + T.log2(T.float32(4))
                    + T.cast(T.floordiv(i, 2) + T.floormod(j, 2), "float32"),
                    T.float32(-1),
                    T.if_then_else(
                        i < j, T.max(A[i, j], 0.0), T.min(A[i, j], T.infinity("float32"))
                    ),
                )
            T.copy(s, A)

    assert "s" in main.attrs["tl.layout_map"]
    assert int(main.attrs["tl.swizzle_panel"]) == 8


def test_printer_shows_tile_op_names():
    @T.prim_func
    def main(A: T.Tensor((16, 16), "float32"), B: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32) as bx:
            T.copy(A, B)

    text = tl_ir.format_ir(main, regions="calls")
    assert "T.copy(T.region(A[0, 0], 1, 16, 16), T.region(B[0, 0], 2, 16, 16))" in text
    assert "T.copy(A[0:16, 0:16], B[0:16, 0:16])" in tl_ir.format_ir(main)
    with pytest.raises(ValueError, match="regions"):
        tl_ir.format_ir(main, regions="raw")
    assert "T.copy(" in str(main)
    (call,) = [c for c in _calls(main) if tl_ir.is_tile_op(c)]
    assert (
        tl_ir.format_tile_op(call) == "copy(src=A[0:0 + 16, 0:0 + 16], dst=B[0:0 + 16, 0:0 + 16])"
    )


def _calls(func):
    import tvm_ffi

    out = []
    tvm_ffi.structural_walk(func.body, (tvm.ir.Call, out.append))
    return out


def test_describe_rejects_other_calls():
    with pytest.raises(ValueError, match="tile-op"):
        tl_ir.describe(tirx.call_intrin("float32", "tirx.exp", tirx.const(1.0, "float32")))


def test_dtype_helpers():
    assert tl_ir.normalize_dtype("half") == "float16"
    assert tl_ir.normalize_dtype(T.float32) == "float32"
    assert tl_ir.normalize_dtype(np.float64) == "float64"
    assert tl_ir.bits("bfloat16") == 16 and tl_ir.bits("bool") == 1
    assert tl_ir.numpy_dtype("bfloat16") == np.dtype("uint16")
    assert tl_ir.numpy_dtype("int8") == np.dtype("int8")
    assert tl_ir.is_float("bfloat16") and not tl_ir.is_float("int32")
    assert tl_ir.is_int("uint8") and not tl_ir.is_int("bool")
    with pytest.raises(tl_ir.UnknownDtypeError, match="float17"):
        tl_ir.normalize_dtype("float17")
    assert set(tl_ir.DTYPE_NAMES) >= {
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "bool",
    }


def test_every_tier1_name_exists():
    names = """prim_func Tensor Buffer float16 bfloat16 float32 float64 int8 int16 int32 int64
    uint8 uint16 uint32 bool symbolic dynamic Kernel get_thread_binding alloc_shared
    alloc_fragment alloc_local alloc_var serial grid Parallel Pipelined unroll vectorized copy
    fill clear gemm reduce reduce_sum reduce_max reduce_min reduce_abssum reduce_absmax cumsum
    atomic_add atomic_max atomic_min exp exp2 log log2 sqrt rsqrt abs tanh sigmoid sin cos pow
    floor ceil round max min clamp if_then_else cast infinity ceildiv floordiv floormod print
    annotate_layout use_swizzle""".split()  # noqa: SIM905
    missing = [n for n in names if not hasattr(T, n)]
    assert missing == []
    assert T.Buffer is T.Tensor


def test_encode_is_the_inverse_of_describe():
    import dataclasses

    @T.prim_func
    def main(A: T.Tensor((32, 16), "float16"), Out: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((32, 16), "float16")
            c = T.alloc_fragment((32, 32), "float32")
            r = T.alloc_fragment((32,), "float32")
            T.copy(A, a)
            T.fill(c, 2.0)
            T.gemm(a, a, c, transpose_B=True)
            T.reduce_sum(c, r, dim=1, clear=False)
            T.cumsum(r, reverse=True)
            T.atomic_min(Out[0:32], r)
            T.print(r, msg="r")

    for call in [c for c in _calls(main) if tl_ir.is_tile_op(c)]:
        op = tl_ir.describe(call)
        assert tvm_ffi.structural_equal(tl_ir.encode(op), call)
    gemm = next(op for op in tile_ops(main) if isinstance(op, GemmOp))
    flipped = tl_ir.describe(tl_ir.encode(dataclasses.replace(gemm, clear_accum=True)))
    assert flipped.clear_accum and not gemm.clear_accum
    with pytest.raises(TypeError, match="tile-op dataclass"):
        tl_ir.encode("copy")


def test_symbolic_copy_extents_accepted_unless_provably_different():
    def build(offset):
        N = T.symbolic("N")

        @T.prim_func
        def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                T.copy(A[0:N], B[0 : N + offset])

        return main

    (op,) = tile_ops(build(0))
    assert op.src.extents[0].same_as(op.dst.extents[0]) or str(op.dst.extents[0]) == "N"
    assert op.src.is_full
    with pytest.raises(tl_ir.ShapeMismatchError, match="cannot match"):
        build(1)


def test_a_symbolic_dim_with_several_names_gives_a_tuple() -> None:
    """``T.dynamic("M N")`` or ``"M, N"`` (spelled like ``T.const("M N")``) gives one dim
    per name, as TileLang's; a bad name is refused under the spelling used."""
    from tl_ir.errors import KernelTypeError

    assert [str(d) for d in T.dynamic("M N")] == ["M", "N"]
    assert [str(d) for d in T.symbolic("M,N ,  K")] == ["M", "N", "K"]
    with pytest.raises(KernelTypeError, match=r"^T.dynamic\(name\): .*got 'M N-1'"):
        T.dynamic("M N-1")
    with pytest.raises(KernelTypeError, match=r"^T.symbolic\(name\): .*got 3"):
        T.symbolic(3)  # type: ignore[arg-type]
