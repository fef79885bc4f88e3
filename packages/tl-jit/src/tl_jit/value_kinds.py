"""What kind of value a key renders, and where a value keeps what it holds.

The predicates and readers `tl_jit.canonical` (the key's rendering) and
`tl_jit.digest_guard` (the in-memory guard) share, so the two read a value the same way:
which modules are the compiler's, an installed library's or the user's; which classes
are the user's; a value's own attributes (its ``__dict__`` and slots, as Python stores
them); a base class that keeps its value in C, out of any attribute; which types a
``repr`` renders whole; which methods attrs wrote.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import fractions
import pathlib
import sys
import types
import uuid
from typing import Any

from tl_jit.versions import COMPILER_PACKAGES


def user_module(value: object) -> bool:
    """A module of the user's code (the compiler's and installed ones are versioned)."""
    return isinstance(value, types.ModuleType) and not (
        is_compiler_module(value) or is_library_module(value)
    )


_VERSIONED_TOP_LEVEL = frozenset(COMPILER_PACKAGES) | {"tvm", "tvm_ffi"}


def is_compiler_module(module: types.ModuleType) -> bool:
    """Whether ``module`` belongs to the compiler packages or tvm."""
    # The compiler packages and tvm are covered by compiler_versions(): their sources
    # are fingerprinted (or versioned) as a whole, so their attributes need no keying.
    return is_compiler_module_name(module.__name__)


def is_compiler_module_name(name: str) -> bool:
    """Whether the module named ``name`` belongs to the compiler packages or tvm."""
    top = name.partition(".")[0]
    return top in _VERSIONED_TOP_LEVEL or top.startswith("tl_codegen_")


def is_library_module(module: types.ModuleType) -> bool:
    """Whether ``module`` is installed (site-packages) or part of the standard library."""
    # Installed third-party or standard-library modules (numpy, math): what their
    # attributes are is fixed by their installed version, not by the user's code.
    path = getattr(module, "__file__", None) or ""
    return "site-packages" in path or "dist-packages" in path or path.startswith(sys.base_prefix)


def generated_by_attrs(func: types.FunctionType) -> bool:
    """Whether attrs wrote ``func`` (a class's ``__init__``, ``__eq__``...)."""
    return func.__code__.co_filename.startswith("<attrs generated")


#: Entries of a class body that say nothing about what the class computes.
CLASS_HOUSEKEEPING = frozenset(
    {
        "__dict__",
        "__weakref__",
        "__module__",
        "__doc__",
        "__qualname__",
        "__firstlineno__",
        "__static_attributes__",
        "__annotations__",
        "__dataclass_fields__",
        "__dataclass_params__",
        "__match_args__",
        "__attrs_attrs__",
        "__orig_bases__",
        "__parameters__",
        "_abc_impl",  # abc's per-class cache (its repr shows an address)
        "__attrs_props__",  # attrs' class options (their repr shows a function's address)
        # abc's set of abstract names, in hash-seed order: the methods themselves are
        # rendered (it made the key differ in every new process).
        "__abstractmethods__",
    }
)


def is_user_type(cls: type) -> bool:
    """A class defined in the user's code (not builtins, the compiler, or a library)."""
    name = cls.__module__
    if name == "builtins" or is_compiler_module_name(name):
        return False
    module = sys.modules.get(name)
    return module is None or not is_library_module(module)


def holds_its_state(value: object) -> bool:
    """Whether ``value`` is rendered by its attributes: an instance of the user's
    class, or a dataclass or attrs instance (whose fields are its state)."""
    cls = type(value)
    if dataclasses.is_dataclass(value) or hasattr(cls, "__attrs_attrs__"):
        return True
    return is_user_type(cls) and (has_attribute(value, "__dict__") or hasattr(cls, "__slots__"))


def slot_attributes(cls: type) -> list[str]:
    """The attribute names of ``cls``'s slots, base classes' included, as Python stores
    them: ``__slots__ = "scale"`` is one slot (not five letters), and a private slot
    ``__s`` of class ``C`` is the attribute ``_C__s``."""
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot in ("__dict__", "__weakref__"):
                continue
            if slot.startswith("__") and not slot.endswith("__"):
                slot = f"_{klass.__name__.lstrip('_')}{slot}"
            names.append(slot)
    return names


def has_attribute(value: object, name: str) -> bool:
    """``hasattr`` that a ``__getattr__`` raising anything (a KeyError from a
    dict-backed object) answers with False instead of failing the key."""
    try:
        return hasattr(value, name)
    except Exception:
        return False


def held_state(value: object) -> dict[str, Any]:
    """The attributes ``value`` holds itself: its ``__dict__`` and its filled slots."""
    state: dict[str, Any] = dict(getattr(value, "__dict__", {}))
    for slot in slot_attributes(type(value)):
        if has_attribute(value, slot):
            state[slot] = getattr(value, slot)
    return state


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement (or a C spec)


def native_state_base(cls: type) -> type | None:
    """The first base of ``cls`` (other than ``object``, the user's classes and Python
    classes) whose instances hold state in C (``decimal.Decimal``, ``datetime.date``,
    ``collections.deque``, ``bytearray``, ``array.array``); None when there is none.
    An instance of a user subclass of one is not rendered by its ``__dict__`` alone."""
    for klass in cls.__mro__:
        if klass is object or is_user_type(klass):
            continue
        if not klass.__flags__ & _HEAP_TYPE:
            return klass  # a static C type
        module = sys.modules.get(klass.__module__)
        origin = getattr(module, "__file__", None)
        if not isinstance(origin, str) or not origin.endswith(".py"):
            return klass  # defined in C (a built-in or extension module)
    return None


ENUM_MEMBER_FIELDS = frozenset({"__objclass__", "_name_", "_sort_order_", "_value_"})


#: Value types whose ``repr`` states everything they hold (exact types only).
_FAITHFUL_REPR_TYPES: tuple[type, ...] = (
    range,
    slice,
    decimal.Decimal,
    fractions.Fraction,
    datetime.date,
    datetime.datetime,
    datetime.time,
    datetime.timedelta,
    datetime.timezone,
    uuid.UUID,
)
_NAMEDTUPLE_FIELD: type = type(vars(collections.namedtuple("_Field", "a"))["a"])
_FAITHFUL_REPR_TYPES += (_NAMEDTUPLE_FIELD,)  # a namedtuple's field: its index and doc


def faithful_repr(value: Any) -> bool:
    """Whether ``value``'s repr renders it whole: the value types above, paths, the
    compiler's and tvm's objects (versioned with every key), and torch's and numpy's
    dtype and device objects (a numpy dtype without metadata)."""
    kind = type(value)
    if kind in _FAITHFUL_REPR_TYPES or isinstance(value, pathlib.PurePath):
        return kind.__module__ in (
            "builtins",
            "collections",
            "_collections",
            "decimal",
            "fractions",
            "datetime",
            "uuid",
            "pathlib",
        )
    module = kind.__module__
    if is_compiler_module_name(module):
        return True
    top = module.partition(".")[0]
    if top == "torch":
        return kind.__name__ in ("dtype", "device")
    if top == "numpy":
        return isinstance(value, _numpy_dtype_type()) and getattr(value, "metadata", None) is None
    return False


def _numpy_dtype_type() -> type:
    numpy = sys.modules.get("numpy")
    dtype = getattr(numpy, "dtype", None)
    return dtype if isinstance(dtype, type) else type(None)
