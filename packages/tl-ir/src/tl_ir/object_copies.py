"""Copying and pickling TVM objects without killing the process.

apache-tvm 0.27 serializes its objects through ``tvm_ffi``'s ``__reduce__``, which
crashes the interpreter with a segmentation fault (in ``ToJSONGraph``) for every IR
object (an expression such as ``T.symbolic``'s variable, a type, a statement, a
``PrimFunc``) and for any container holding one, so ``pickle.dumps``, ``copy.copy``
and ``copy.deepcopy`` of any of them ended the process. `install` (run when `tl_ir`
is imported) makes:

* IR objects (``tvm.ir.base.Node``, ``tvm.tirx.stmt.Stmt`` and their kin, which are
  immutable: every change builds a new object) their own copy: ``__copy__`` and
  ``__deepcopy__`` return the object itself;
* pickling (and copying through ``__reduce__``) raise ``TypeError`` naming the object
  for anything but the objects known to serialize (targets, source spans) and
  containers of them, as Python does for an unpicklable object, so a worker pool,
  ``multiprocessing`` or a user's ``pickle`` fails instead of crashing.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm.tirx import stmt as tirx_stmt
from tvm.tirx.expr import CommReducer, IterVar

__all__ = ["install"]

#: IR classes whose objects are immutable: a copy is the object itself.
_IMMUTABLE_IR = (tvm.ir.base.Node, tirx_stmt.Stmt, IterVar, CommReducer)

#: Objects tvm_ffi serializes without crashing (their fields are strings and numbers).
_SERIALIZABLE = (
    tvm.target.Target,
    tvm.ir.base.Span,
    tvm.ir.base.SourceName,
    tvm.ir.base.SequentialSpan,
)

_SEQUENCES = (tvm_ffi.container.Array, tvm_ffi.container.List)
_MAPPINGS = (tvm_ffi.container.Map, tvm_ffi.container.Dict)

_original_reduce: Any = None


def _itself(obj: Any, memo: Any = None) -> Any:
    return obj


def _check_serializable(obj: Any) -> None:
    """Raise ``TypeError`` when ``obj`` is, or holds, an object tvm_ffi cannot
    serialize."""
    if isinstance(obj, _SEQUENCES):
        for item in obj:
            _check_serializable(item)
    elif isinstance(obj, _MAPPINGS):
        for key, value in obj.items():
            _check_serializable(key)
            _check_serializable(value)
    elif isinstance(obj, tvm_ffi.core.Object) and not isinstance(obj, _SERIALIZABLE):
        raise TypeError(
            f"cannot pickle a TVM object ({type(obj).__module__}.{type(obj).__qualname__}): "
            "tvm 0.27 cannot serialize IR objects; pass plain Python values (ints, strings, "
            "dtype names) to other processes and build the IR there"
        )


def _guarded_reduce(obj: Any) -> Any:
    _check_serializable(obj)
    return _original_reduce(obj)


def install() -> None:
    """Install the copy and pickle behaviour above (idempotent)."""
    global _original_reduce
    base = tvm_ffi.core.Object
    if _original_reduce is None:
        _original_reduce = base.__reduce__
    setattr(base, "__reduce__", _guarded_reduce)  # noqa: B010 - a method of TVM's class
    for cls in _IMMUTABLE_IR:
        setattr(cls, "__copy__", _itself)  # noqa: B010
        setattr(cls, "__deepcopy__", _itself)  # noqa: B010
