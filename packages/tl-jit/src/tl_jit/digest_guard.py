"""What a builder's `function_digest` read, checked by identity: the in-memory memo's
validity test.

The in-memory memo (a ``@jit`` builder's kernels, an eager function's specializations
and its dispatcher) keys a kernel on the call's arguments and on the digest of the
function (`tl_jit.canonical.function_digest`: code, defaults, closure, the globals and
module attributes it reads, recursively). Computing the digest costs far more than a
memo hit, so the digest is computed once and a `DigestGuard` is recorded beside it:
every place the digest read a value from (a namespace entry, a class body entry, a
function's ``__code__`` or defaults, a closure cell, a list's or dict's items) with the
object found there. While every one of them still holds the same object (``is``), the
digest cannot differ and the memo hit stands; when one differs the digest is computed
again (docs/cache.md, "In memory").

Values whose contents identity cannot vouch for (numpy arrays, torch tensors, objects
rendered by a ``repr`` of unknown mutability) make the guard *volatile*: the digest is
recomputed on every call. Objects with no faithful rendering (the digest raises
`Unkeyable` for them) are guarded by identity only: a change inside one is not seen.
"""

from __future__ import annotations

import enum
import itertools
import re
import sys
import types
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from operator import is_
from typing import Any

from tl_jit.canonical import _SCALAR_TYPES, Unkeyable, function_digest
from tl_jit.code_reads import global_loads
from tl_jit.source_reads import source_reads
from tl_jit.value_kinds import (
    CLASS_HOUSEKEEPING,
    ENUM_MEMBER_FIELDS,
    faithful_repr,
    generated_by_attrs,
    has_attribute,
    holds_its_state,
    is_compiler_module_name,
    is_library_module,
    is_user_type,
    slot_attributes,
    user_module,
)
from tl_runtime import fork_safety

__all__ = ["DigestGuard", "FunctionDigest", "function_parts", "guard_of", "same_parts"]

_MISSING: Any = object()
_EMPTY_CELL: Any = object()

#: Containers up to this size are compared item by item in the generated check.
_UNROLLED = 8

#: Values rendered by ``repr`` that cannot change in place (identity vouches for them).
_IMMUTABLE_BY_REPR = (range, slice, Fraction, Decimal, types.BuiltinFunctionType)


class DigestGuard:
    """The reads a `function_digest` made, each with the object it found, checked by
    one generated expression (``__g1[__g2] is __g3 and __g4.cell_contents is __g5 ...``).

    Attributes:
        volatile: some value read can change in place (an array, an object of unknown
            mutability): identity cannot vouch for the digest, it must be recomputed.
        expression: once sealed, the check as a Python expression over `namespace`
            (names starting with ``__g``; it assigns ``__gi``), for code that inlines
            it (the eager dispatcher); an exception raised evaluating it means false.
        namespace: the objects `expression` reads, by name.
    """

    def __init__(self) -> None:
        self._terms: list[str] = []
        self.namespace: dict[str, Any] = {"__g_is": is_, "__g_empty": _empty}
        self.volatile = False
        self.expression = "True"
        self.holds: Callable[[], bool] = _always
        # A function's __code__ and defaults are audited reads (each calls tl_runtime's
        # audit hook); once that hook counts assignments, one count replaces them all.
        self._writes_counted = fork_safety.attribute_writes_counted()
        self._writes = fork_safety.attribute_writes
        self.namespace["__g_fork_safety"] = fork_safety

    def _name(self, value: Any) -> str:
        name = f"__g{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def entry(self, mapping: Any, key: Any) -> Any:
        """Read ``mapping[key]`` (`_MISSING` when absent) and record what was found."""
        found = mapping.get(key, _MISSING)
        where, name = self._name(mapping), self._name(key)
        if found is _MISSING:
            self._terms.append(f"{name} not in {where}")
        else:  # a subscript is cheaper than a call of .get (KeyError: changed)
            self._terms.append(f"{where}[{name}] is {self._name(found)}")
        return found

    def attribute(self, owner: Any, name: str) -> Any:
        """Read ``owner.<name>`` and record what was found."""
        assert name.isidentifier()
        found = getattr(owner, name, _MISSING)
        self._terms.append(f"{self._name(owner)}.{name} is {self._name(found)}")
        return found

    def function_attribute(self, function: types.FunctionType, name: str) -> Any:
        """Read a function's ``__code__``, ``__defaults__`` or ``__kwdefaults__`` (whose
        assignments are audited events) and record what was found."""
        if self._writes_counted:
            return getattr(function, name)
        return self.attribute(function, name)

    def cell(self, cell: types.CellType) -> Any:
        """Read a closure cell (`_EMPTY_CELL` when empty) and record what was found."""
        try:
            found = cell.cell_contents
        except ValueError:
            self._terms.append(f"__g_empty({self._name(cell)})")
            return _EMPTY_CELL
        self._terms.append(f"{self._name(cell)}.cell_contents is {self._name(found)}")
        return found

    def size(self, container: Any) -> None:
        """Record how many entries ``container`` holds."""
        self._terms.append(f"len({self._name(container)}) == {len(container)}")

    def order(self, container: Any) -> None:
        """Record ``container``'s items in their order (compared by identity)."""
        name = self._name(container)
        items = tuple(container)
        size = f"len({name}) == {len(items)}"
        if len(items) > _UNROLLED:
            self._terms.append(f"{size} and all(map(__g_is, {name}, {self._name(items)}))")
        elif isinstance(container, list):  # one subscript per item
            checks = (f"{name}[{i}] is {self._name(item)}" for i, item in enumerate(items))
            self._terms.append(" and ".join([size, *checks]))
        else:  # a dict's keys, a set's items: one next() per item (map and all cost more)
            first = f"__gi := iter({name})"
            checks = (
                f"next({first if i == 0 else '__gi'}) is {self._name(item)}"
                for i, item in enumerate(items)
            )
            self._terms.append(" and ".join([size, *checks]))

    def seal(self) -> DigestGuard:
        """Generate `holds`: True while every read still finds the object it found (then
        the digest stands, unless the guard is `volatile`)."""
        if self._writes_counted:
            # the count is a value of the namespace, not of the text: guards of the same
            # reads have the same expression (the eager dispatcher compiles it once)
            self.namespace["__g_writes"] = self._writes
            self._terms.insert(0, "__g_fork_safety.attribute_writes == __g_writes")
        else:
            self._terms.insert(0, "not __g_fork_safety.attribute_writes_counted()")
        expression = self.expression = " and ".join(self._terms)
        names = ", ".join(self.namespace)
        # The recorded objects are the maker's parameters, so `holds` reads them as
        # closure cells (faster than the globals of generated code).
        source = (
            f"def make({names}):\n"
            "    def holds():\n"
            f"        try:\n            return {expression}\n"
            "        except Exception:\n            return False\n"
            "    return holds\n"
        )
        scope: dict[str, Any] = {}
        exec(compile(source, "<tl_jit digest guard>", "exec"), scope)
        self.holds = scope["make"](**self.namespace)
        return self

    def __len__(self) -> int:
        return len(self._terms)


def _always() -> bool:
    return True


def _empty(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - reading it is the test
    except ValueError:
        return True
    return False


#: The digest of a function whose kernels must not be memoized in memory (see
#: `FunctionDigest`).
UNMEMOIZED = "unmemoized"
_unkeyable_serial = itertools.count()


class FunctionDigest:
    """A function's digest for the in-memory memo, recomputed only when its guard fails.

    `current` is ``function_digest(func)`` as of now, ``"opaque"`` for a callable that is
    not a Python function. Where the digest raises `Unkeyable` (the function reads a
    value with no faithful rendering: a lock, a dataclass with a ``default_factory``),
    it is a name of its own for each guard (``"unkeyable#N"``): while the guard holds,
    nothing the function reads was rebound, so its kernels stand; once it fails, the
    next name starts an empty table. With a volatile guard it is `UNMEMOIZED`: nothing
    may be memoized in memory, and the kernel is found by its IR key.

    Thread-safe: the guard and the digest computed under it are published together, as
    one tuple (`state`), so a thread never pairs a guard with a digest it did not vouch
    for (par_compile computes keys in worker threads: a thread that saw the new guard
    before the digest was stored took the previous digest, or none).
    """

    def __init__(self, func: object) -> None:
        self.func = func
        #: (the guard, the digest computed under it); None before the first `current`.
        self.state: tuple[DigestGuard, str] | None = None
        self.computed = 0  # how many times the digest was computed (tests, benchmarks)

    @property
    def guard(self) -> DigestGuard | None:
        """The guard of the digest last computed (None before the first `current`)."""
        state = self.state
        return None if state is None else state[0]

    def current(self) -> str:
        """The digest now: one identity check per read on the common path."""
        return self.current_state()[1]

    def current_state(self) -> tuple[DigestGuard, str]:
        """The digest now with the guard that vouches for it (one consistent pair)."""
        state = self.state
        if state is not None:
            guard = state[0]
            if not guard.volatile and guard.holds():
                return state
        func = self.func
        if not isinstance(func, types.FunctionType):
            state = (DigestGuard(), "opaque")  # nothing to read: always holds
        else:
            # The guard is built before the digest, so a read changed in between is
            # caught at the next check; a volatile guard that holds is kept.
            guard = state[0] if state is not None and state[0].holds() else guard_of(func)
            self.computed += 1
            try:
                digest = function_digest(func)
            except Unkeyable:
                # No digest: the kernels memoized under this guard are its own (a fresh
                # name, kept while the guard holds), or none where the guard cannot say
                # when what the function reads changed.
                digest = UNMEMOIZED if guard.volatile else f"unkeyable#{next(_unkeyable_serial)}"
            state = (guard, digest)
        self.state = state
        return state


def function_parts(func: object) -> tuple[Any, ...]:
    """What reading a function's signature reads besides its source: its code, defaults
    and keyword defaults (audited reads: for slow paths, not per hit)."""
    return (
        getattr(func, "__code__", None),
        getattr(func, "__defaults__", None),
        getattr(func, "__kwdefaults__", None),
    )


def same_parts(now: tuple[Any, ...], then: tuple[Any, ...]) -> bool:
    """Whether two `function_parts` hold the same objects (an equal tuple of defaults
    may hold other objects: compared by identity)."""
    return len(now) == len(then) and all(a is b for a, b in zip(now, then, strict=True))


def guard_of(func: types.FunctionType) -> DigestGuard:
    """The guard over everything `function_digest` ``(func)`` reads (built before the
    digest, so a read changed in between is caught at the next check)."""
    guard = DigestGuard()
    _Walker(guard).function(func)
    return guard.seal()


#: How the generated check and the walk read a container's items.
_ITEM_ACCESS = ("__iter__", "__len__", "__getitem__", "__contains__", "get", "keys", "items")


def _reads_its_own_way(cls: type) -> bool:
    """Whether a subclass of a built-in container defines its own item access."""
    for klass in cls.__mro__:
        if klass in (tuple, frozenset, list, set, dict, object):
            return False
        if any(name in klass.__dict__ for name in _ITEM_ACCESS):
            return True
    return False


class _Walker:
    """Mirrors `tl_jit.canonical`'s walk, recording reads instead of rendering values."""

    def __init__(self, guard: DigestGuard) -> None:
        self.guard = guard
        self.seen: set[int] = set()
        self.classes: set[int] = set()
        self.functions: set[int] = set()

    def entry(self, mapping: Any, key: Any) -> Any:
        return self.guard.entry(mapping, key)

    def attribute(self, owner: Any, name: str) -> Any:
        return self.guard.attribute(owner, name)

    def order(self, container: Any) -> None:
        self.guard.order(container)

    def function(self, func: types.FunctionType) -> None:
        if id(func) in self.functions:
            return
        self.functions.add(id(func))
        code = self.guard.function_attribute(func, "__code__")
        if generated_by_attrs(func):
            return  # written by attrs from the class's fields, which the class walk reads
        self.value(self.guard.function_attribute(func, "__defaults__"))
        self.value(self.guard.function_attribute(func, "__kwdefaults__"))
        for cell in func.__closure__ or ():
            contents = self.guard.cell(cell)
            if contents is not _EMPTY_CELL:
                self.value(contents)
        if any(name != "__wrapped__" for name in vars(func)):
            # Attributes set on the function (``f.scale = 2``), as the digest renders them.
            # None set: no term (each would cost every memo hit; docs/cache.md).
            self.value(self.attribute(func, "__dict__"))
        _, source_names, source_attributes = source_reads(code)
        namespace = func.__globals__
        loaded = global_loads(code)
        for name in sorted(loaded | source_names):
            if name not in namespace and name not in loaded:
                # Absent and never loaded as a global (an attribute name, a local, a string
                # constant): a global of that name defined later changes the digest, not
                # what the function reads.
                continue
            found = self.entry(namespace, name)
            if found is not _MISSING:
                self.value(found)
        for owner_name, *path in sorted(source_attributes):
            owner = namespace.get(owner_name)
            for attribute_name in path:
                if not user_module(owner):
                    break
                owner = self.entry(owner.__dict__, attribute_name)
                if owner is _MISSING:
                    break
            if owner is not _MISSING:
                self.value(owner)

    def value(self, value: Any) -> None:
        if value is None or type(value) in _SCALAR_TYPES:
            return
        if id(value) in self.seen:
            return
        self.seen.add(id(value))
        if isinstance(value, enum.Enum):
            self.klass(type(value))
            if any(name not in ENUM_MEMBER_FIELDS for name in vars(value)):
                # A member holding attributes of its own (``obj.unit = u`` in the enum's
                # ``__new__``): watched as the key renders them; a plain member costs no term.
                self.state(value)
        elif isinstance(value, str) and is_compiler_module_name(type(value).__module__):
            return  # a dtype object: rendered as its name (its cached slots are not read)
        elif isinstance(value, _SCALAR_TYPES):  # a subclass instance: its class and state
            self.klass(type(value))
            self.state(value)
        elif isinstance(value, tuple | frozenset | list | set | dict):
            self.container(value)
        elif isinstance(value, types.ModuleType):
            return  # rendered by its name; attributes read through it are walked above
        elif isinstance(value, types.FunctionType):
            owner = sys.modules.get(value.__module__)
            if not is_compiler_module_name(value.__module__) and not (
                owner is not None and is_library_module(owner)
            ):
                self.function(value)
        elif isinstance(value, type):
            self.klass(value)
        elif (has_attribute(value, "__array_interface__") and has_attribute(value, "tobytes")) or (
            type(value).__module__.partition(".")[0] == "torch" and has_attribute(value, "data_ptr")
        ):
            self.guard.volatile = True  # contents change in place
        elif holds_its_state(value):
            self.attribute(value, "__class__")
            self.klass(type(value))
            self.state(value)
        else:
            self.opaque(value)

    def container(self, value: Any) -> None:
        """A tuple, list, set or dict: its items (and the order of a mutable one); a
        subclass's class, held attributes and a defaultdict's factory too, as
        `tl_jit.canonical` renders them. A subclass with its own way to read its items
        (``__iter__``, ``__len__``, ``__getitem__``, ``get``...) makes the guard
        volatile: the generated check reads through those and could see other items
        than its contents."""
        plain = type(value) in (tuple, frozenset, list, set, dict)
        if not plain and _reads_its_own_way(type(value)):
            self.guard.volatile = True
            return
        if isinstance(value, tuple | frozenset):
            for item in value:
                self.value(item)
        elif isinstance(value, list | set):
            self.order(value)
            for item in value:
                self.value(item)
        else:
            self.order(value)
            for key in value:
                self.value(key)
                self.value(self.entry(value, key))
        if plain:
            return
        self.attribute(value, "__class__")
        self.klass(type(value))
        self.state(value)
        if isinstance(value, dict) and has_attribute(value, "default_factory"):
            self.value(self.attribute(value, "default_factory"))

    def opaque(self, value: Any) -> None:
        """A value rendered by ``repr`` (or by nothing: an address)."""
        wrapped = getattr(value, "__wrapped__", None)
        if isinstance(wrapped, types.FunctionType):
            self.attribute(value, "__wrapped__")
            self.function(wrapped)
            return
        kind = type(value)
        if is_compiler_module_name(kind.__module__) or isinstance(value, _IMMUTABLE_BY_REPR):
            return
        if faithful_repr(value) or kind is re.Pattern:
            return  # immutable value objects (a date, a path, a dtype, a device)
        text = repr(value)
        if " at 0x" in text or text.startswith("<"):
            return  # no faithful rendering: guarded by identity only (docs/cache.md)
        # Anything else may change in place where identity cannot see it (a torch
        # module's attributes, a poly1d's coefficients, a deque): recomputed every call.
        self.guard.volatile = True

    def state(self, value: Any) -> None:
        held = getattr(value, "__dict__", None)
        if isinstance(held, dict):
            # The dict itself too: ``obj.__dict__ = {...}`` replaces it (no audited write).
            self.value(self.attribute(value, "__dict__"))
        for slot in slot_attributes(type(value)):
            self.value(self.attribute(value, slot))

    def klass(self, cls: type) -> None:
        if not is_user_type(cls) or id(cls) in self.classes:
            return
        self.classes.add(id(cls))
        body = cls.__dict__
        self.guard.size(body)  # with the entries: an entry added or deleted is seen
        for key in body:
            if key not in CLASS_HOUSEKEEPING:
                found = self.entry(body, key)
                if isinstance(found, staticmethod | classmethod):
                    self.value(found.__func__)
                elif isinstance(found, property):
                    for accessor in (found.fget, found.fset, found.fdel):
                        self.value(accessor)
                else:
                    self.value(found)
        for base in self.attribute(cls, "__bases__"):
            if base is not object:
                self.klass(base)
        # A user's metaclass is rendered with the class. No term of its own: a class's
        # ``__class__`` is assigned only through ``object.__setattr__``, an audited write
        # the guard counts (a term per class would cost every memo hit).
        meta = type(cls)
        if meta is not type:
            self.klass(meta)
