"""What an eager call's arguments are, as the binder and the dispatcher read them: an
array's dims and strides in elements, how messages name a value's type, and whether a
dispatcher key may be matched by equality."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tl_jit.value_kinds import is_user_type

__all__ = ["array_dims", "describe", "exact_key", "stride_in_elements"]


def _contiguous(shape: Sequence[int]) -> tuple[int, ...]:
    strides: list[int] = []
    step = 1
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides))


def stride_in_elements(value: Any, axis: int) -> int:
    """``value``'s stride along ``axis`` in elements (numpy's are in bytes)."""
    stride = getattr(value, "stride", None)
    if callable(stride):
        return int(stride(axis))
    return int(value.strides[axis] // value.itemsize)


def array_dims(value: Any) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """``(shape, strides in elements)`` of an array argument: numpy, torch, any DLPack
    producer, or a ``T.Tensor((M, N), dtype)`` placeholder; None for anything else.

    Raises:
        BufferError, TypeError, ValueError, RuntimeError: a DLPack producer that cannot
            export itself (what its ``__dlpack__`` raised; the binder names the parameter).
    """
    shape = getattr(value, "shape", None)
    if shape is None:
        return None
    module = type(value).__module__
    if (module == "numpy" or module.startswith("numpy.")) and hasattr(value, "itemsize"):
        # numpy arrays and their subclasses (a masked array, a matrix): the call's checks
        # refuse those a kernel cannot take, by name; exporting one could fail first.
        itemsize = int(value.itemsize) or 1
        return tuple(int(d) for d in shape), tuple(int(s) // itemsize for s in value.strides)
    stride = getattr(value, "stride", None)
    if callable(stride) and hasattr(value, "__dlpack__"):  # torch
        return tuple(int(d) for d in shape), tuple(int(s) for s in stride())
    ty = getattr(value, "ty", None)
    if ty is not None and hasattr(ty, "shape"):  # a T.Tensor placeholder (a TVM buffer)
        try:
            dims = tuple(int(d) for d in ty.shape)
        except (TypeError, ValueError):
            return None
        strides = tuple(int(s) for s in ty.strides) if len(ty.strides) else _contiguous(dims)
        return dims, strides
    if hasattr(value, "__dlpack__"):
        import tvm_ffi

        tensor = tvm_ffi.from_dlpack(value, require_alignment=0)
        return tuple(int(d) for d in tensor.shape), tuple(int(s) for s in tensor.strides)
    return None


def describe(value: object) -> str:
    """The type of ``value`` as messages name it."""
    kind = type(value)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    return name


_EXACT_SCALARS = (str, int, bool, type(None))


def _exact_item(item: object) -> bool:
    kind = type(item)
    if kind in _EXACT_SCALARS:
        return True
    if isinstance(item, type):
        # A class of the user's may change its body between calls (``Cfg.SCALE = 5``):
        # equal is then not the same kernel. Built-in and library classes stay put.
        return not is_user_type(item)
    if kind is float:
        # 0.0 == -0.0 (same hash) build different kernels; NaN != NaN (a new entry per call)
        return item == item and item != 0.0
    if kind is tuple:
        # Ints and strings, or their classes: the dispatcher's key follows a tuple template
        # by the classes of its elements (``(int, int)``), which equal only each other.
        return all(
            type(element) in (int, str) or element in (int, str)
            for element in item  # type: ignore[attr-defined]
        )
    # dtype objects (the compiler's, numpy's, torch's): equal means the same dtype
    module = kind.__module__.partition(".")[0]
    return module in ("tl_ir", "tvm_ffi", "tvm", "numpy", "torch") and kind.__name__ in (
        "dtype",
        "DataType",
    )


def exact_key(key: tuple[Any, ...]) -> bool:
    """Whether the dispatcher may serve ``key``'s kernel to every call with an equal key.

    The dispatcher's key is a tuple of raw values (each template value followed by its
    class, then the ``T.const`` dims): a dictionary finds an entry by ``==``, so the key
    qualifies only when equal values cannot build different kernels: strings, ints,
    bools, None, built-in and library classes (a user's class body can change), floats
    other than zero and NaN, tuples of ints or strings, and dtype objects. Any other key
    is looked up through the faithful specialization key (`tl_jit.canonical`) on every
    call instead.
    """
    return all(_exact_item(item) for item in key)
