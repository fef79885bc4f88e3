"""Tile and scalar allocations in their memory scopes."""

from __future__ import annotations

from typing import Any

from tvm import tirx
from tvm.script.ir_builder import tirx as _IB

from tl_ir.dtypes import normalize_dtype as _normalize_dtype
from tl_ir.errors import KernelTypeError
from tl_ir.language._launch import active_kernel
from tl_ir.language._operands import as_value, check_shape, scalar_wrapper
from tl_ir.scopes import FRAGMENT as _FRAGMENT
from tl_ir.scopes import GLOBAL as _GLOBAL
from tl_ir.scopes import LOCAL as _LOCAL
from tl_ir.scopes import LOCAL_VAR as _LOCAL_VAR
from tl_ir.scopes import SCOPES as _SCOPES
from tl_ir.scopes import SHARED_DYN as _SHARED_DYN

__all__ = ["alloc_fragment", "alloc_global", "alloc_local", "alloc_shared", "alloc_var"]


def _check_scope(scope: Any, where: str) -> None:
    """Refuse a scope no target knows (TVM passed ``scope="bogus"`` on to its code
    generators, which stopped with an internal error)."""
    if not isinstance(scope, str) or scope not in _SCOPES:
        raise KernelTypeError(
            f"{where}: scope must be one of {', '.join(map(repr, _SCOPES))}, got {scope!r}"
        )


def _alloc(shape: Any, dtype: Any, scope: str, where: str) -> Any:
    dims = check_shape(shape, where)
    _check_scope(scope, where)
    return _IB.alloc_buffer(dims, _normalize_dtype(dtype), scope=scope)


def alloc_shared(shape: Any, dtype: Any, scope: str = _SHARED_DYN) -> Any:
    """A block-shared tile (scope ``shared.dyn``); only inside ``T.Kernel``."""
    active_kernel("T.alloc_shared (a block-shared tile)")
    return _alloc(shape, dtype, scope, "T.alloc_shared(shape, dtype)")


def alloc_fragment(shape: Any, dtype: Any, scope: str = _FRAGMENT) -> Any:
    """A tile distributed over the block's threads (scope ``local.fragment``); only
    inside ``T.Kernel``."""
    active_kernel("T.alloc_fragment (a fragment is distributed over a block's threads)")
    return _alloc(shape, dtype, scope, "T.alloc_fragment(shape, dtype)")


def alloc_local(shape: Any, dtype: Any, scope: str = _LOCAL) -> Any:
    """A thread-private array (scope ``local``)."""
    return _alloc(shape, dtype, scope, "T.alloc_local(shape, dtype)")


def alloc_var(dtype: Any, init: Any = None, scope: str = _LOCAL_VAR) -> Any:
    """A thread-private scalar variable (a ``(1,)`` buffer of scope ``local.var``).

    Reading the name gives its current value; ``x = expr`` stores into it. It is set
    to ``init`` where it is declared (zero without ``init``, as in TileLang).
    """
    name = _normalize_dtype(dtype)
    _check_scope(scope, "T.alloc_var(dtype)")
    buffer = _IB.alloc_buffer((1,), name, scope=scope)
    _IB.buffer_store(buffer, as_value(0 if init is None else init, name), [0])
    return scalar_wrapper(tirx.BufferLoad(buffer, [0]))


def alloc_global(shape: Any, dtype: Any, scope: str = _GLOBAL) -> Any:
    """A global-memory workspace (scope ``global``) shared by every block of the
    kernel, allocated for the duration of one call; usually outside ``T.Kernel``."""
    return _alloc(shape, dtype, scope, "T.alloc_global(shape, dtype)")
