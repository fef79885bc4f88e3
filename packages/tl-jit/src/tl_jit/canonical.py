"""Canonical, process-independent renderings of the values a kernel's construction reads.

The front-end key, the eager specialization key and the in-memory memo render every
compile-time value here. The rule (docs/cache.md): a rendering must change whenever
the kernel built from the value could, and never otherwise. So a value is rendered
by what it holds, never by a ``repr`` that can drop parts of it; a value with no
such rendering raises `Unkeyable` and its call is keyed by its IR instead (always
correct, only slower).
"""

from __future__ import annotations

import collections
import enum
import functools
import hashlib
import json
import re
import sys
import types
from collections.abc import Mapping
from typing import Any

from tl_jit.code_reads import code_digest, global_loads
from tl_jit.source_reads import source_reads
from tl_jit.value_kinds import (
    CLASS_HOUSEKEEPING,
    ENUM_MEMBER_FIELDS,
    faithful_repr,
    generated_by_attrs,
    has_attribute,
    held_state,
    holds_its_state,
    is_compiler_module_name,
    is_library_module,
    is_user_type,
    native_state_base,
    user_module,
)
from tl_runtime.tensor_views import torch_tensor_type

__all__ = [
    "Unkeyable",
    "canonical_value",
    "function_digest",
    "is_compiler_module_name",
    "is_library_module",
    "sha_of",
]


def sha_of(parts: Mapping[str, Any]) -> str:
    """sha256 hex digest of the canonical JSON text of ``parts``."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Unkeyable(Exception):
    """A value has no stable canonical rendering (e.g. an object whose repr holds an address)."""


def canonical_value(value: object, *, _seen: frozenset[int] = frozenset()) -> Any:
    """A JSON-compatible, process-independent rendering of a compile-time value.

    Rendered by what the value holds:

    - None, bool, int, str as themselves (JSON keeps ``true`` and ``1`` apart); a
      float by its hex form (``0.0`` and ``-0.0`` differ, every NaN is one value),
      a complex by its two parts, bytes by their hex; a subclass of one of them
      (``numpy.float64``, a user's ``int`` subclass) by its class and that value;
    - tuples, lists, dicts and sets element by element (type included), dicts and
      sets in their iteration order (a builder that iterates one follows it);
    - numpy arrays and scalars, and torch tensors, by dtype, shape and a sha256 of
      their bytes (their ``repr`` rounds and elides);
    - functions by `function_digest` (code, source, defaults, closure, globals);
      modules by name;
    - classes defined in the user's code by everything in their body (attributes,
      methods and static/class methods by their code, properties, nested classes)
      and their bases; Enum classes by their members' names and values and their
      methods; an Enum member by its class and name;
    - instances of the user's classes, dataclasses and attrs classes by their class
      and every attribute they hold (``field(repr=False)`` included);
    - classes and functions of the compiler packages, tvm and installed libraries
      by their qualified name (their versions are part of every key);
    - any other object by its type and ``repr`` when that shows no address.

    Raises:
        Unkeyable: no faithful rendering exists (an object whose ``repr`` shows an
            address, an object-dtype array, a sparse or quantized tensor...).
    """
    if value is None or type(value) in (bool, str):
        return value
    if type(value) is int:
        return _int_rendering(value)
    if isinstance(value, enum.Enum):  # before int and str: an IntEnum member is an int
        name = value.name
        if name is None or name not in type(value).__members__:
            # A Flag combination with no name of its own (``Perm(8)``): by its value.
            return {"enum": [_class_rendering(type(value), _seen), name, value._value_]}
        return {"enum": [_class_rendering(type(value), _seen), name]}
    if type(value) in _SCALAR_TYPES:
        return _scalar_rendering(value)
    if isinstance(value, tuple(_SCALAR_TYPES)):  # a subclass (numpy.float64, a user int)
        base = next(t for t in _SCALAR_TYPES if isinstance(value, t))
        if base is str and is_compiler_module_name(type(value).__module__):
            return str.__str__(value)  # a dtype object is its name: T.float16 == "float16"
        rendering = {
            "subclass": _class_rendering(type(value), _seen),
            "value": _scalar_rendering(_EXACT[base](value)),
        }
        state = getattr(value, "__dict__", None)
        if state:  # attributes the user's subclass set on the value
            rendering["state"] = canonical_value(dict(sorted(state.items())), _seen=_seen)
        return rendering
    if isinstance(value, tuple | list | set | frozenset | dict):
        if id(value) in _seen:
            # A container holding itself (``l.append(l)``): a marker could not say which
            # of its enclosing containers repeats, so such a value has no key.
            raise Unkeyable(f"a {type(value).__name__} that contains itself has no rendering")
        inner = _seen | {id(value)}
        # Sets and dicts in iteration order: a builder that iterates one builds its kernel
        # in that order ({"a": 2, "b": 3} and {"b": 3, "a": 2} are equal, their kernels not).
        # Read through the built-in type's own methods: a subclass's __iter__ or items()
        # may hide elements the builder reads.
        if isinstance(value, dict):
            items: Any = [
                [canonical_value(k, _seen=inner), canonical_value(v, _seen=inner)]
                for k, v in dict.items(value)
            ]
        else:
            items = [canonical_value(v, _seen=inner) for v in _elements(value)]
        plain = type(value)
        if plain in (tuple, list, dict):
            return [plain.__name__, items]
        if plain is set:
            return ["set", items]
        if plain is frozenset:
            return ["frozenset", items]
        return _container_subclass(value, items, inner)
    if isinstance(value, types.ModuleType):
        return {"module": value.__name__}
    if isinstance(value, types.FunctionType):
        if id(value) in _seen:
            return {"function": value.__qualname__}
        return {"function": function_digest(value, _seen=_seen | {id(value)})}
    if isinstance(value, type):
        return _class_rendering(value, _seen)
    if has_attribute(value, "__array_interface__") and has_attribute(value, "tobytes"):
        return _array_rendering(value, _seen)
    if _is_torch_tensor(value):
        return _tensor_rendering(value)
    if isinstance(value, types.BuiltinFunctionType):
        return {"object": f"{getattr(value, '__module__', '')}.{value.__qualname__}"}
    if holds_its_state(value):
        return _instance_rendering(value, _seen)
    if isinstance(value, types.SimpleNamespace):
        return {"namespace": canonical_value(dict(sorted(vars(value).items())), _seen=_seen)}
    special = _library_value(value, _seen)
    if special is not None:
        return special
    text = repr(value)
    if " at 0x" in text or text.startswith("<"):
        raise Unkeyable(f"{type(value).__name__} value {text[:60]} has no stable rendering")
    if "..." in text:  # an elided repr (numpy's of a large array inside it): lossy
        raise Unkeyable(f"{type(value).__name__} value {text[:60]} has an elided repr")
    if not faithful_repr(value):
        # A library object's repr may leave state out (a torch module's weights, an
        # array rounded inside a partial's repr, a long pattern cut short): no key.
        raise Unkeyable(
            f"{type(value).__module__}.{type(value).__qualname__} value {text[:60]} is not "
            "rendered by what it holds"
        )
    return {"object": f"{type(value).__module__}.{type(value).__qualname__}: {text}"}


def _library_value(value: Any, seen: frozenset[int]) -> Any:
    """Library objects rendered by their parts: a ``functools.partial`` (function,
    arguments, keywords), a ``collections.deque`` (items, maxlen), a compiled regular
    expression (pattern, flags); None for anything else."""
    kind = type(value)
    if kind is functools.partial:
        return {
            "partial": [
                canonical_value(value.func, _seen=seen),
                canonical_value(value.args, _seen=seen),
                canonical_value(dict(value.keywords), _seen=seen),
            ]
        }
    if kind is collections.deque:
        if id(value) in seen:
            raise Unkeyable("a deque that contains itself has no rendering")
        items = [canonical_value(v, _seen=seen | {id(value)}) for v in list(value)]
        return {"deque": [items, value.maxlen]}
    if kind is re.Pattern:
        return {"pattern": [canonical_value(value.pattern, _seen=seen), int(value.flags)]}
    return None


#: Scalars rendered by what they hold (bool, int and str exactly are themselves).
_SCALAR_TYPES: tuple[type, ...] = (bool, int, str, float, complex, bytes)


#: The value a subclass instance holds, read past any override of its conversions.
_EXACT: dict[type, Any] = {
    bool: bool,
    int: int.__int__,
    str: str.__str__,
    float: float.__float__,
    complex: lambda value: complex(value.real, value.imag),
    bytes: bytes,
}


_BIG = 1 << 64


def _int_rendering(value: int) -> Any:
    """An int as itself; one of 64 bits or more by its hex digits (JSON and ``str`` refuse
    ints of more than 4300 decimal digits, and the key must not refuse a legal call)."""
    if -_BIG < value < _BIG:
        return value
    return {"int": hex(value)}


def _scalar_rendering(value: Any) -> Any:
    """A value of exactly one of `_SCALAR_TYPES`."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return _int_rendering(value)
    if isinstance(value, float):
        return {"float": value.hex()}  # 0.0 and -0.0 apart, every NaN one value
    if isinstance(value, complex):
        return {"complex": [value.real.hex(), value.imag.hex()]}
    return {"bytes": value.hex()}


def _array_rendering(array: Any, seen: frozenset[int]) -> Any:
    """numpy arrays and scalars: their repr elides the middle of large arrays, so the
    bytes are hashed; an object array's bytes are addresses, so it has no rendering.
    A subclass of ``numpy.ndarray`` (``numpy.matrix``, whose ``*`` multiplies matrices; a
    masked array, whose mask the bytes leave out) adds its class and the attributes its
    instances hold."""
    if getattr(array.dtype, "hasobject", False):
        raise Unkeyable("a numpy array of Python objects has no stable rendering")
    digest = hashlib.sha256(array.tobytes(order="C")).hexdigest()
    rendering: list[Any] = [str(array.dtype), list(array.shape), digest]
    kind = type(array)
    numpy = sys.modules.get("numpy")
    if numpy is None or (kind is not numpy.ndarray and not isinstance(array, numpy.generic)):
        held = dict(sorted(getattr(array, "__dict__", {}).items()))
        rendering += [f"{kind.__module__}.{kind.__qualname__}", canonical_value(held, _seen=seen)]
    return {"array": rendering}


def _is_torch_tensor(value: object) -> bool:
    # Never an AttributeError while another thread is still importing torch.
    tensor = torch_tensor_type()
    return tensor is not None and isinstance(value, tensor)


def _tensor_rendering(tensor: Any) -> Any:
    """A torch tensor by dtype, shape and a sha256 of its values (its repr rounds and
    elides); the device is left out (the same values on another device build the same
    kernel)."""
    import torch

    if tensor.layout != torch.strided or tensor.is_quantized or tensor.is_nested:
        raise Unkeyable(f"a torch tensor with layout {tensor.layout} has no stable rendering")
    if tensor.device.type == "meta":
        raise Unkeyable("a torch tensor on the meta device has no values to render")
    flat = tensor.detach().resolve_conj().resolve_neg().to("cpu").contiguous().reshape(-1)
    # As bytes always: numpy has no float8 (a module-level float8 tensor made the key,
    # and so the factory call, raise TypeError).
    raw = flat.view(torch.uint8)
    digest = hashlib.sha256(raw.numpy().tobytes()).hexdigest()
    return {"tensor": [str(tensor.dtype), list(tensor.shape), digest]}


def _instance_rendering(value: object, seen: frozenset[int]) -> Any:
    native = native_state_base(type(value))
    if native is not None:
        raise Unkeyable(
            f"{type(value).__qualname__} value: its {native.__qualname__} base holds state no "
            "rendering reads"
        )
    if id(value) in seen:
        return {"instance": type(value).__qualname__}
    inner = seen | {id(value)}
    state = held_state(value)
    return {
        "instance": _class_rendering(type(value), inner),
        "state": canonical_value(dict(sorted(state.items())), _seen=inner),
    }


def _elements(value: Any) -> list[Any]:
    """A tuple's, list's, set's or frozenset's elements as its built-in type holds them
    (never through a subclass's own ``__iter__``)."""
    bases: tuple[Any, ...] = (tuple, list, frozenset, set)
    for base in bases:
        if isinstance(value, base):
            return list(base.__iter__(value))
    return list(value)


def _container_subclass(value: Any, items: Any, seen: frozenset[int]) -> Any:
    """A subclass of tuple, list, set or dict (a namedtuple, an OrderedDict, a user's
    ``class Opts(tuple)``): its class (a user's by its body: its methods and class
    attributes may be what the builder reads), its items, and the attributes the value
    holds besides them (``opts.scale`` set on the instance; a defaultdict's factory).
    ``seen`` holds the value itself."""
    state = held_state(value)
    factory = getattr(value, "default_factory", None) if isinstance(value, dict) else None
    if factory is not None and "default_factory" not in state:
        state["default_factory"] = factory
    return {
        "container": _class_rendering(type(value), seen),
        "items": items,
        "state": canonical_value(dict(sorted(state.items())), _seen=seen),
    }


def _member_attributes(member: enum.Enum, seen: frozenset[int]) -> list[Any]:
    """What an Enum member holds besides its name and value (``obj.unit = u`` set in
    the enum's ``__new__``, as Python's docs show); empty for a plain member."""
    held = {k: v for k, v in vars(member).items() if k not in ENUM_MEMBER_FIELDS}
    return [global_value(dict(sorted(held.items())), seen)] if held else []


#: Class-body sets without an order of their own (rendered sorted: their iteration
#: order follows the hash seed).
_UNORDERED_CLASS_SETS = frozenset({"__slots__", "__required_keys__", "__optional_keys__"})


def _class_rendering(cls: type, seen: frozenset[int]) -> Any:
    """A class: by name for builtins, the compiler and libraries; by its body otherwise."""
    name = f"{cls.__module__}.{cls.__qualname__}"
    if not is_user_type(cls):
        return {"object": name}
    if id(cls) in seen:
        return {"class": name}
    inner = seen | {id(cls)}
    if issubclass(cls, enum.Enum):
        members = [
            [m.name, global_value(m.value, inner), *_member_attributes(m, inner)]
            for m in cls.__members__.values()
        ]
        methods = [
            [key, _class_entry(entry, inner)]
            for key, entry in sorted(vars(cls).items())
            if isinstance(entry, _CODE_ENTRIES) and key not in cls.__members__
        ]
        return {"enum": name, "members": members, "methods": methods}
    body = [
        [key, _class_entry(entry, inner)]
        if not (key in _UNORDERED_CLASS_SETS and isinstance(entry, set | frozenset))
        else [key, sorted(map(str, entry))]  # names with no order of their own
        for key, entry in sorted(vars(cls).items())
        if key not in CLASS_HOUSEKEEPING
    ]
    bases = [_class_rendering(base, inner) for base in cls.__bases__ if base is not object]
    rendering = {"class": name, "bases": bases, "body": body}
    if "__attrs_attrs__" in vars(cls):
        rendering["attrs"] = _attrs_fields(cls, inner)
    meta = type(cls)
    if meta is not type and is_user_type(meta):
        # A metaclass of the user's own can supply the class's attributes (its
        # ``__getattr__``, properties): what it computes them from is in its body.
        rendering["meta"] = _class_rendering(meta, inner)
    return rendering


_CODE_ENTRIES = (types.FunctionType, staticmethod, classmethod, property)


def _class_entry(entry: object, seen: frozenset[int]) -> Any:
    """One entry of a class body: methods by their code, descriptors by their parts."""
    if isinstance(entry, staticmethod | classmethod):
        return [type(entry).__name__, global_value(entry.__func__, seen)]
    if isinstance(entry, property):
        return ["property", [global_value(f, seen) for f in (entry.fget, entry.fset, entry.fdel)]]
    if isinstance(entry, types.MemberDescriptorType | types.GetSetDescriptorType):
        return ["slot"]
    return global_value(entry, seen)


def _attrs_fields(cls: type, seen: frozenset[int]) -> Any:
    """An attrs class's fields: names, defaults (a ``Factory`` by its factory) and
    converters, what its generated methods are written from."""
    fields = []
    for field in cls.__attrs_attrs__:  # type: ignore[attr-defined]
        default = field.default
        factory = getattr(default, "factory", None)
        if factory is not None:
            default = {"factory": [global_value(factory, seen), default.takes_self]}
        elif type(default).__name__ == "_Nothing":
            default = "NOTHING"
        else:
            default = global_value(default, seen)
        converter = field.converter
        fields.append(
            [field.name, default, None if converter is None else global_value(converter, seen)]
        )
    return fields


def function_digest(func: types.FunctionType, *, _seen: frozenset[int] = frozenset()) -> str:
    """sha256 over what building a kernel from ``func`` reads.

    Covered: its code (nested code included), its source text, defaults, closure values,
    the values of the module globals its code loads or its source names (constants, and
    functions by their own digest), and the values of attributes it reads from the
    user's own modules (``config.BLOCK``, through submodules: ``pkg.sub.BLOCK``; also
    ``getattr(config, "BLOCK")`` with a literal name). Attributes of the compiler packages and of
    installed libraries are covered by the version part of the key.

    Raises:
        Unkeyable: a closure value or a global it reads has no stable rendering (the
            caller then keys on the IR only, which is always correct).
    """
    if generated_by_attrs(func):
        # attrs writes __init__/__eq__... from the class's fields (rendered with the
        # class); their globals are attrs' helpers, and __hash__'s text holds a number
        # that follows the hash seed: by name only.
        return sha_of({"attrs": func.__qualname__})
    seen = _seen | {id(func)}
    source, source_names, source_attributes = source_reads(func.__code__)
    parts: dict[str, Any] = {"code": code_digest(func.__code__), "source": source}
    parts["defaults"] = canonical_value(func.__defaults__, _seen=seen)
    parts["kwdefaults"] = canonical_value(func.__kwdefaults__, _seen=seen)
    held = {k: v for k, v in vars(func).items() if k != "__wrapped__"}
    if held:  # attributes set on the function (``f.scale = 2``) a builder may read
        parts["attributes_held"] = global_value(dict(sorted(held.items())), seen)
    closure = []
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or (), strict=False):
        try:
            contents = cell.cell_contents
        except ValueError:  # an empty cell (name bound later)
            contents = None
        closure.append([name, global_value(contents, seen)])
    parts["closure"] = closure
    globals_used = []
    module_globals = func.__globals__
    for name in sorted(global_loads(func.__code__) | source_names):
        if name in module_globals:
            globals_used.append([name, global_value(module_globals[name], seen)])
    parts["globals"] = globals_used
    attributes_used = []
    for owner_name, *path in sorted(source_attributes):
        # Through the user's modules only (``config.BLOCK``, ``pkg.sub.BLOCK``): the value
        # at the end of the chain, or at the first step that is not such a module.
        owner = module_globals.get(owner_name)
        walked = [owner_name]
        for attribute in path:
            if not user_module(owner) or not hasattr(owner, attribute):
                break
            owner = getattr(owner, attribute)
            walked.append(attribute)
        if len(walked) > 1:
            attributes_used.append([".".join(walked), global_value(owner, seen)])
    parts["attributes"] = attributes_used
    return sha_of(parts)


def global_value(value: object, seen: frozenset[int] = frozenset()) -> Any:
    """A global's or closure value's rendering for the front-end key.

    A wrapper (``functools.wraps``: a ``@jit`` function, a decorated helper) is keyed by
    the function it wraps; objects from the compiler packages by their type (their code
    is versioned); anything else without a stable rendering makes the whole call
    unkeyable, so the kernel is looked up by its IR key rather than risk a stale one.
    """
    if isinstance(value, types.FunctionType):
        owner = sys.modules.get(value.__module__)
        if is_compiler_module_name(value.__module__) or (
            owner is not None and is_library_module(owner)
        ):
            return {"function": f"{value.__module__}.{value.__qualname__}"}
    try:
        return canonical_value(value, _seen=seen)
    except Unkeyable:
        wrapped = getattr(value, "__wrapped__", None)
        if isinstance(wrapped, types.FunctionType):
            if id(wrapped) in seen:
                return {"wraps": wrapped.__qualname__}
            return {"wraps": function_digest(wrapped, _seen=seen | {id(wrapped)})}
        if is_compiler_module_name(type(value).__module__):
            return {"opaque": f"{type(value).__module__}.{type(value).__qualname__}"}
        raise
