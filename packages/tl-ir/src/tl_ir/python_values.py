"""Plain Python values assigned in a kernel body stay Python values.

TileLang programs name dtypes and other settings inside a kernel body
(``accum_dtype = T.float32``, ``dt = "float16"``, ``scale = None``) and then pass the
name where a dtype or option goes (``T.alloc_fragment((M, N), accum_dtype)``,
``T.cast(x, dt)``). TVM's kernel parser turns every assigned value into a kernel
variable, which fails for a dtype (``Cannot automatically inference the type``) and
makes a string a ``StringImm`` no dtype argument accepts. In a kernel parsed by
`tl_ir.prim_func` (the classic ``@T.prim_func`` body and the eager body alike), a
value `is_plain_python` accepts is bound as the Python value itself; numbers and
kernel expressions keep TVM's meaning (a number assigned in a classic body stays a
mutable kernel scalar).
"""

from __future__ import annotations

from typing import Any

import tvm_ffi
from tvm.script import tirx as _tvm_T

from tl_ir.frontend import current_state

__all__ = ["install", "is_plain_python"]


def is_plain_python(value: Any) -> bool:
    """Whether ``value`` is a Python object the kernel parser has no meaning for as a
    kernel value (a dtype, a string, ``None``, a dict, a set, a class, a function):
    assigned in a kernel body it stays a Python value. Numbers, sequences and TVM
    objects are not in this group."""
    if isinstance(value, tvm_ffi.Object) or getattr(type(value), "_is_meta_class", False):
        return False
    if isinstance(value, _tvm_T.scalar_wrapper):
        return False
    return (
        value is None
        or isinstance(value, str | dict | set | frozenset | type)
        or (callable(value) and not isinstance(value, bool | int | float))
    )


def install() -> None:
    """Wrap the kernel parser's binding of an assigned value (once per process): in a
    `tl_ir.prim_func` parse, a plain Python value (also one element of an unpacked
    tuple, ``dt, acc = "float16", T.float32``) is bound as itself."""
    from tvm.script.parser.tirx import parser

    original = parser.bind_assign_value
    if getattr(original, "_tl_python_values", False):
        return

    def bind_assign_value(self: Any, node: Any, var_name: str, value: Any, **kwargs: Any) -> Any:
        if current_state() is not None and is_plain_python(value):
            return value
        return original(self, node, var_name, value, **kwargs)

    bind_assign_value._tl_python_values = True  # type: ignore[attr-defined]
    parser.bind_assign_value = bind_assign_value
