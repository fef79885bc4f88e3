"""Kernel parameters: ``T.Tensor`` annotations, their alignment, and symbolic dims."""

from __future__ import annotations

import builtins as _builtins
from typing import Any

from tvm.script import tirx as _tvm_T

from tl_ir.dtypes import bits as _dtype_bits
from tl_ir.dtypes import is_int as _is_int
from tl_ir.dtypes import normalize_dtype as _normalize_dtype
from tl_ir.errors import KernelDtypeError, TileLangError
from tl_ir.frontend import current_state as _current_state
from tl_ir.frontend import symbolic as _symbolic
from tl_ir.language._operands import check_shape, locate_at_caller

__all__ = ["Buffer", "Tensor", "dynamic", "param_alignment", "symbolic"]


class _TensorAnnotation:
    """``T.Tensor((M, K), dtype)``: the annotation of a tensor parameter (alias ``T.Buffer``);
    with ``data`` (a buffer or its ``.data``), inside a kernel body, a view of that
    buffer's memory (see ``T.view``)."""

    def __call__(self, shape: Any, dtype: Any = "float32", data: Any = None, **kwargs: Any) -> Any:
        if data is not None:
            # TileLang's T.Tensor(shape, dtype, A.data) in a kernel body: a view of A.
            from tl_ir.language._views import make_view

            return make_view(shape, dtype, data, "T.Tensor(shape, dtype, data)")
        return self._make(shape, dtype, kwargs)

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], list | tuple):
            return self._make(item[0], item[1], {})
        if isinstance(item, tuple) and len(item) == 2 and _names_a_dtype(item[1]):
            return self._make((item[0],), item[1], {})  # T.Tensor[n, dtype]: one dim
        return self._make(item, "float32", {})

    def _make(self, shape: Any, dtype: Any, kwargs: dict[str, Any]) -> Any:
        try:
            dims = check_shape(shape, "T.Tensor(shape, dtype)", allow_zero=True)
            name = _normalize_dtype(dtype)
            # Kernels assume only element alignment of a tensor parameter's data pointer
            # (see docs/language.md): callers' ordinary arrays (numpy's sit 16 bytes past a
            # 64-byte boundary) then run without a copy. ``align=`` asks for more.
            kwargs.setdefault("align", param_alignment(name))
            return _tvm_T.Buffer(dims, name, **kwargs)
        except TileLangError as err:
            if _current_state() is None:
                # Annotations are evaluated when Python defines the kernel function,
                # before the parser runs: locate the error at the annotation's line
                # (frames: locate_at_caller, _make, __call__/__getitem__, the kernel).
                locate_at_caller(err, depth=3)
            raise


def _names_a_dtype(value: Any) -> bool:
    """Whether ``value`` is a dtype (a name, a ``T.float32`` object, numpy's or torch's),
    not a dim: ``T.Tensor[n, T.float32]`` is one dim of float32, ``T.Tensor[4, 8]`` two dims."""
    if isinstance(value, bool | int) or not (
        isinstance(value, str | type)
        or hasattr(value, "_dtype_str")
        or type(value).__module__ in ("torch", "numpy")
    ):
        return False
    try:
        _normalize_dtype(value)
    except TileLangError:
        return False
    return True


def param_alignment(dtype: Any) -> int:
    """The byte alignment a tensor parameter of ``dtype`` declares unless ``align=`` is given.

    It is the element size in bytes (1 for sub-byte types such as ``bool``), so any array
    whose elements are naturally aligned is accepted without a copy.

    Raises:
        UnknownDtypeError: ``dtype`` is not a dtype of the language.
    """
    return _builtins.max(1, _dtype_bits(dtype) // 8)


#: Tensor parameter annotation: ``A: T.Tensor((M, K), "float16")``.
Tensor = _TensorAnnotation()
Buffer = Tensor


def _dim_dtype(dtype: Any, spelled: str) -> str:
    """``dtype`` of a symbolic dim as its name: an integer type (``float32`` was taken
    and failed later in ``T.Tensor`` without naming the dtype).

    Raises:
        UnknownDtypeError: not a dtype.
        KernelDtypeError: not an integer dtype (named).
    """
    name = _normalize_dtype(dtype)
    if not _is_int(name):
        raise KernelDtypeError(
            f"{spelled}(name, dtype=...): expected an integer dtype for a symbolic dim "
            f"(int32, int64...), got {name}"
        )
    return name


def symbolic(name: str, dtype: str = "int32") -> Any:
    """A named symbolic dim (an ``int32`` Var) usable in shapes; the same name in one
    kernel build gives the same Var. Raises `KernelTypeError` for a bad name,
    `KernelDtypeError` for a dtype that is not an integer type."""
    return _symbolic(name, _dim_dtype(dtype, "T.symbolic"))


def dynamic(name: str, dtype: str = "int32") -> Any:
    """`symbolic` as TileLang's eager style spells it (``N = T.dynamic("N")``)."""
    return _symbolic(name, _dim_dtype(dtype, "T.dynamic"), spelled="T.dynamic")
