"""Helpers shared by the tl-passes tests (unique module name: the suite uses importlib mode)."""

from __future__ import annotations

from tvm import tirx


def copy_func(n: int = 8, name: str = "main") -> tirx.PrimFunc:
    """A PrimFunc ``(A, B)`` whose body is the loop ``B[i] = A[i] * 1 + 0`` (simplifiable)."""
    a = tirx.decl_buffer((n,), "float32", name="A")
    b = tirx.decl_buffer((n,), "float32", name="B")
    i = tirx.Var("i", "int32")
    value = tirx.Add(
        tirx.Mul(tirx.BufferLoad(a, [i]), tirx.const(1.0, "float32")), tirx.const(0.0, "float32")
    )
    body = tirx.For(i, 0, n, tirx.ForKind.SERIAL, tirx.BufferStore(b, value, [i]))
    return tirx.PrimFunc([a, b], body).with_attrs({"global_symbol": name, "tir.noalias": True})
