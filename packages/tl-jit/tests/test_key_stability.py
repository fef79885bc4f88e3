"""Key stability: a key changes whenever the kernel could, and never otherwise.

Covers the front-end key (class and module attributes, Enum classes, static methods,
lossy reprs of compile-time values), the eager dispatcher (signed zeros, NaN, equal
values of different types), environment variables a builder reads, and the proof a
front-end record must carry (docs/cache.md).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import subprocess
import sys
import textwrap
import types
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T
from tl_jit.cache import CacheWarning
from tl_jit.keys import Unkeyable, canonical_value, frontend_key


def _load(path: Path, name: str, source: str) -> types.ModuleType:
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _key(module: types.ModuleType, name: str = "build", **arguments: Any) -> str:
    return frontend_key(getattr(module, name), arguments, {"target": "c"})


# ----------------------------------------------------------------- front-end key: globals
CLASS_BUILDER = """
import enum

class Config:
    BLOCK = 32

    @staticmethod
    def tile(n):
        return n // 4

class Mode(enum.Enum):
    FAST = 1
    SAFE = 2

def build(n):
    return Config.tile(n) * Config.BLOCK, Mode.FAST.value
"""


def test_a_class_attribute_the_builder_reads_changes_the_key(tmp_path: Path) -> None:
    module = _load(tmp_path / "ks_class.py", "ks_class", CLASS_BUILDER)
    first = _key(module, n=64)
    module.Config.BLOCK = 64
    assert _key(module, n=64) != first
    module.Config.BLOCK = 32
    assert _key(module, n=64) == first  # the same class body: the same key


def test_a_static_method_of_a_class_the_builder_reads_changes_the_key(tmp_path: Path) -> None:
    module = _load(tmp_path / "ks_static.py", "ks_static", CLASS_BUILDER)
    first = _key(module, n=64)
    module.Config.tile = staticmethod(lambda n: n // 8)
    assert _key(module, n=64) != first


def test_an_enum_member_value_changes_the_key(tmp_path: Path) -> None:
    first = _key(_load(tmp_path / "ks_enum1.py", "ks_enum1", CLASS_BUILDER), n=64)
    changed = CLASS_BUILDER.replace("FAST = 1", "FAST = 3")
    assert _key(_load(tmp_path / "ks_enum1.py", "ks_enum1", changed), n=64) != first


RENDERED_BY_THEIR_CLASSES = """
import collections

class Meta(type):
    def __getattr__(cls, name):
        return SCALE

class Config(metaclass=Meta):
    pass

class Options(tuple):
    pass

SCALE = 2.0
OPTIONS = Options((1,))
OPTIONS.block = 32
FILL = collections.defaultdict(int)

def build(n):
    return n * Config.scale, OPTIONS.block, FILL["missing"]
"""


@pytest.mark.parametrize(
    "change",
    [
        "module.SCALE = 5.0",  # read through the user's metaclass's __getattr__
        "module.OPTIONS.block = 64",  # an attribute held by a tuple subclass
        "module.FILL.default_factory = float",  # a defaultdict's factory
    ],
)
def test_what_a_class_supplies_changes_the_key_and_the_in_memory_digest(
    tmp_path: Path, change: str
) -> None:
    """A user's metaclass, a container subclass's attributes and a defaultdict's factory
    were left out of the key and of the in-memory guard: the old kernel came back."""
    from tl_jit.digest_guard import FunctionDigest

    module = _load(tmp_path / "ks_supplied.py", "ks_supplied", RENDERED_BY_THEIR_CLASSES)
    first = _key(module, n=64)
    digest = FunctionDigest(module.build)
    before = digest.current()
    assert digest.current() == before and digest.computed == 1  # the guard holds
    exec(change, {"module": module})
    assert _key(module, n=64) != first
    assert digest.current() != before


def test_a_class_docstring_does_not_change_the_key(tmp_path: Path) -> None:
    first = _key(_load(tmp_path / "ks_doc.py", "ks_doc", CLASS_BUILDER), n=64)
    documented = CLASS_BUILDER.replace("    BLOCK = 32", '    """Tiles."""\n    BLOCK = 32')
    assert _key(_load(tmp_path / "ks_doc.py", "ks_doc", documented), n=64) == first


def _keys_in_processes(
    directory: Path, module: str, source: str, arguments: str, seeds: tuple[int, ...]
) -> set[str]:
    """The front-end key of ``module.build(**arguments)`` computed in a new process per
    hash seed (the module written from ``source`` into ``directory``)."""
    (directory / f"{module}.py").write_text(textwrap.dedent(source))
    code = (
        f"import {module}\nfrom tl_jit.keys import frontend_key\n"
        f"print(frontend_key({module}.build, {arguments}, {{'target': 'c'}}))\n"
    )
    return {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=directory,
            capture_output=True,
            text=True,
            check=True,
            env={
                "PYTHONPATH": str(directory),
                "PATH": "/usr/bin:/bin",
                "PYTHONHASHSEED": str(seed),
            },
        ).stdout.strip()
        for seed in seeds
    }


def test_the_key_of_a_class_reading_builder_is_the_same_in_every_process(tmp_path: Path) -> None:
    keys = _keys_in_processes(tmp_path, "ks_proc", CLASS_BUILDER, "{'n': 64}", (1, 2))
    assert len(keys) == 1 and len(keys.pop()) == 64


# -------------------------------------------------------- compile-time values: lossy reprs
@dataclasses.dataclass
class Tiling:
    block: int
    hint: int = dataclasses.field(default=0, repr=False)


def test_a_dataclass_field_hidden_from_repr_changes_the_rendering() -> None:
    assert repr(Tiling(64, 1)) == repr(Tiling(64, 2))
    assert canonical_value(Tiling(64, 1)) != canonical_value(Tiling(64, 2))
    assert canonical_value(Tiling(64, 1)) == canonical_value(Tiling(64, 1))


class Options(tuple):  # type: ignore[type-arg]
    """A tuple subclass whose instances carry attributes a builder may read."""

    scale: float


def test_a_container_subclass_renders_with_its_class_and_attributes() -> None:
    """A tuple, list, set or dict subclass was keyed by its class's name and its items:
    the attributes set on it, a defaultdict's factory and the class's own methods were
    left out, so two calls that build different kernels shared one."""
    import collections

    first, second = Options((1,)), Options((1,))
    first.scale, second.scale = 2.0, 5.0
    assert canonical_value(first) != canonical_value(second)
    assert canonical_value(first) != canonical_value((1,))
    point = collections.namedtuple("point", "x y")
    assert canonical_value(point(1, 2)) != canonical_value((1, 2))
    assert canonical_value(point(1, 2)) == canonical_value(point(1, 2))
    ints = collections.defaultdict(int, a=1)
    lists = collections.defaultdict(list, a=1)
    assert canonical_value(ints) != canonical_value(lists)
    assert canonical_value(collections.OrderedDict(a=1)) != canonical_value({"a": 1})
    # The renderings of plain containers are what they were (keys on disk stay valid).
    assert canonical_value((1, [2.0], {"a": {3}})) == [
        "tuple",
        [1, ["list", [{"float": "0x1.0000000000000p+1"}]], ["dict", [["a", ["set", [3]]]]]],
    ]
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)  # was a RecursionError; a call with it skips the memo
    with pytest.raises(Unkeyable, match="contains itself"):
        canonical_value(cyclic)


class OneSlot(list):  # type: ignore[type-arg]
    __slots__ = "scale"  # a string: one slot named scale


class PrivateSlot:
    __slots__ = ("__scale",)  # stored as _PrivateSlot__scale

    def __init__(self, scale: float) -> None:
        self.__scale = scale


class HidesKeys(dict):  # type: ignore[type-arg]
    """Iterates without its private keys (a builder reads them with dict.__getitem__)."""

    def __iter__(self) -> Any:
        return (k for k in dict.__iter__(self) if not k.startswith("_"))

    def items(self) -> Any:
        return [(k, v) for k, v in dict.items(self) if not k.startswith("_")]


class ShowsFirst(tuple):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        return iter(tuple.__getitem__(self, slice(0, 1)))


def _pair(make: Any) -> tuple[Any, Any]:
    return make(2.0), make(5.0)


def _one_slot(scale: float) -> OneSlot:
    value = OneSlot([1])
    value.scale = scale
    return value


def _hidden_key(scale: float) -> HidesKeys:
    value = HidesKeys(a=1)
    value["_scale"] = scale
    return value


@pytest.mark.parametrize(
    "make",
    [
        _one_slot,
        PrivateSlot,
        _hidden_key,
        lambda scale: ShowsFirst((1, scale)),
        lambda scale: types.SimpleNamespace(w=np.full(2000, scale)),  # its repr elides
        lambda scale: 2**20000 + int(scale),  # str() of it raises: the key refused the call
    ],
    ids=["str-slots", "private-slot", "hidden-keys", "own-iter", "namespace", "huge-int"],
)
def test_state_a_value_hides_from_its_repr_or_iteration_changes_the_rendering(make: Any) -> None:
    """Values whose state the rendering missed (a second round on the containers fix):
    two that build different kernels shared one key."""
    first, second = _pair(make)
    assert json.dumps(canonical_value(first)) != json.dumps(canonical_value(second))
    assert canonical_value(make(2.0)) == canonical_value(first)


def test_a_set_and_a_frozenset_and_an_elided_repr_render_apart() -> None:
    assert canonical_value({2.0}) != canonical_value(frozenset({2.0}))
    deque = __import__("collections").deque
    big = np.zeros(2000)
    other = big.copy()
    other[1000] = 1.0  # in the part numpy's repr elides
    assert canonical_value(deque([big])) != canonical_value(deque([other]))


class UserDeque(__import__("collections").deque):  # type: ignore[type-arg]
    pass


class UserDecimal(__import__("decimal").Decimal):
    pass


class Flags(__import__("enum").IntFlag):
    R = 4
    W = 2


@pytest.mark.parametrize(
    "make",
    [
        lambda v: UserDeque([v]),  # its items live in deque's C storage, not __dict__
        lambda v: UserDecimal(str(v)),
        lambda v: __import__("re").compile("a" * 300 + str(v)),  # its repr cuts at 200
        lambda v: __import__("functools").partial(max, np.array([2.0 + v * 1e-9])),
        lambda v: Flags(8 if v == 2.0 else 16),  # Flag values with no name of their own
    ],
    ids=["deque-subclass", "decimal-subclass", "long-pattern", "partial-array", "flag"],
)
def test_values_a_repr_or_a_dict_leaves_state_out_of_render_apart_or_not_at_all(make: Any) -> None:
    """User subclasses of C types (deque, Decimal, date, bytearray, array), library objects
    keyed by a repr that drops or rounds state (a torch module's weights, an array inside a
    partial, a long pattern) and unnamed Flag values shared one key."""
    try:
        first, second = canonical_value(make(2.0)), canonical_value(make(5.0))
    except Unkeyable:
        return  # no key at all: the call skips the memo, always correct
    assert json.dumps(first) != json.dumps(second)


def test_a_torch_module_is_not_keyed_by_its_repr() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(Unkeyable, match="not rendered by what it holds"):
        canonical_value(torch.nn.Linear(2, 2))
    assert canonical_value(torch.float16) != canonical_value(torch.float32)


GUARDED_CHANGES = """
import enum
import numpy as np


class Holder:
    def __init__(self):
        self.scale = 2.0


class Coord(enum.Enum):
    PX = 0

    def __new__(cls, value):
        member = object.__new__(cls)
        member._value_ = value
        member.unit = 2.0
        return member


def helper():
    return 0.0


helper.scale = 2.0
HOLDER = Holder()
POLY = np.poly1d([1.0, 2.0])


def build(n):
    return HOLDER.scale, Coord.PX.unit, helper.scale + helper()


def build_with_poly(n):
    return POLY.coeffs[0]
"""


@pytest.mark.parametrize(
    "change",
    [
        "module.HOLDER.__dict__ = {'scale': 5.0}",  # the dict replaced: not an audited write
        "module.Coord.PX.unit = 5.0",  # an enum member's own attribute
        "module.helper.scale = 5.0",  # a function's attribute
    ],
)
def test_the_in_memory_guard_sees_what_the_key_renders(tmp_path: Path, change: str) -> None:
    """The guard said "holds" (or the key left the value out) while what the builder
    reads had changed: the old kernel came back in memory. A library object that a repr
    would render (a poly1d changed in place) is now no key at all: nothing is memoized."""
    from tl_jit.digest_guard import UNMEMOIZED, FunctionDigest

    module = _load(tmp_path / "ks_guarded.py", "ks_guarded", GUARDED_CHANGES)
    digest = FunctionDigest(module.build)
    before = digest.current()
    assert len(before) == 64
    exec(change, {"module": module})
    assert digest.current() != before
    assert FunctionDigest(module.build_with_poly).current() == UNMEMOIZED


SET_LITERAL = """
import abc
import typing

import attrs


@attrs.frozen
class Tile:
    block: int = 64
    extra: list = attrs.Factory(list)


class Options(typing.TypedDict, total=False):
    block: int
    warps: int
    stages: int

class Op(abc.ABC):
    @abc.abstractmethod
    def scale(self): ...
    @abc.abstractmethod
    def name(self): ...

class Double(Op):
    __slots__ = {"first", "second", "third"}
    def scale(self): return 2.0
    def name(self): return "double"

def build(dtype, tile: Tile = Tile(), options: Options | None = None):
    factor = Double().scale()
    return factor if dtype in {"float16", "bfloat16", "float32", "float64"} else 3.0
"""


def test_a_set_literal_in_the_builder_keys_the_same_under_every_hash_seed(tmp_path: Path) -> None:
    """``x in {...}`` compiles to a frozenset constant whose repr follows the hash seed,
    and so did an ABC's ``__abstractmethods__``, a ``__slots__`` set in a class body and
    a TypedDict's key sets; an attrs instance had no key at all (its generated methods
    read attrs' helpers): every new process missed the front-end memo."""
    keys = _keys_in_processes(
        tmp_path, "ks_setlit", SET_LITERAL, "{'dtype': 'float32'}", (1, 2, 3, 4)
    )
    assert len(keys) == 1, keys


def test_a_value_keyed_while_another_thread_imports_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch is in sys.modules before it defines Tensor: a key made then raised
    AttributeError (an autotune search with a thread executor lost good configurations)."""
    from tl_runtime.tensor_views import in_place_write_marker, is_torch_type

    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    assert canonical_value(Tiling(64, 1)) == canonical_value(Tiling(64, 1))
    assert canonical_value(np.ones(2)) is not None
    assert not is_torch_type(np.ndarray) and in_place_write_marker(np.ndarray) is None


def test_torch_tensors_are_rendered_by_their_values_not_their_repr() -> None:
    torch = pytest.importorskip("torch")
    a = torch.zeros(2000)
    b = a.clone()
    b[1000] = 1.0  # in the part repr elides
    c = torch.tensor([1.0, 2.5])
    d = torch.tensor([1.00001, 2.5])  # below repr's rounding
    assert repr(a) == repr(b) and repr(c) == repr(d)
    renderings = {json.dumps(canonical_value(t)) for t in (a, b, c, d)}
    assert len(renderings) == 4
    assert canonical_value(a) == canonical_value(torch.zeros(2000))
    assert canonical_value(a) != canonical_value(torch.zeros(2000, dtype=torch.float64))


def test_equal_values_of_different_types_and_signed_zeros_render_apart() -> None:
    values = [1, 1.0, True, 0.0, -0.0, complex(0.0, 0.0), complex(0.0, -0.0)]
    renderings = [json.dumps(canonical_value(v)) for v in values]
    assert len(set(renderings)) == len(values)
    assert canonical_value(math.nan) == canonical_value(float("nan"))


def test_an_object_array_and_an_address_repr_are_unkeyable() -> None:
    with pytest.raises(Unkeyable):
        canonical_value(np.array([object()], dtype=object))
    with pytest.raises(Unkeyable):
        canonical_value(object())


def test_an_array_subclass_renders_with_its_class_and_what_it_holds() -> None:
    """``numpy.matrix`` multiplies with ``*``: a builder computing with one builds another
    kernel than with a plain array of the same bytes. A masked array's mask is not in
    its bytes. A plain array's rendering is unchanged."""
    plain = np.array([[1.0, 1.0], [0.0, 1.0]])
    assert canonical_value(plain) != canonical_value(np.matrix(plain))
    assert canonical_value(plain) == canonical_value(plain.copy())
    assert list(canonical_value(plain)) == ["array"] and len(canonical_value(plain)["array"]) == 3
    hidden = np.ma.masked_array([1.0, 2.0], mask=[False, True])
    shown = np.ma.masked_array([1.0, 2.0], mask=[False, False])
    assert canonical_value(hidden) != canonical_value(shown)
    assert canonical_value(hidden) == canonical_value(
        np.ma.masked_array([1.0, 2.0], mask=[False, True])
    )


# ------------------------------------------------------------------- the eager dispatcher
def _typed_kernel() -> Any:
    @tl_jit.jit(target="c")
    def typed(A, k=1):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        C = T.empty((N,), T.float32)
        # What the body builds depends on the template value's type, as user code may.
        step = 100.0 if isinstance(k, bool) else 1.0 if isinstance(k, int) else 10.0
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                C[i] = A[i] + step
        return C

    return typed


class Named(str):
    """A str subclass whose instances carry an attribute the body reads."""

    scale: float


class Settings:
    SCALE = 2.0


def _reading_kernel() -> Any:
    @tl_jit.jit(target="c")
    def reads(A, k):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        C = T.empty((N,), T.float32)
        step = k.scale if isinstance(k, str) else k.SCALE  # what the template value holds
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                C[i] = A[i] + step
        return C

    return reads


def test_the_dispatcher_follows_a_class_and_a_str_subclass_template(cache_dir: Path) -> None:
    """A user's class as a template argument was an exact dispatcher key (its body can
    change: ``Settings.SCALE = 5``), and a str subclass was keyed by its text alone:
    both returned the first kernel."""
    reads = _reading_kernel()
    a = np.zeros(4, np.float32)
    first, second = Named("x"), Named("x")
    first.scale, second.scale = 2.0, 5.0
    assert reads(a, first)[0] == 2.0
    assert reads(a, second)[0] == 5.0
    assert reads(a, Settings)[0] == 2.0
    assert reads(a, Settings)[0] == 2.0  # through the dispatcher
    Settings.SCALE = 5.0
    try:
        assert reads(a, Settings)[0] == 5.0
        assert reads(a, Settings)[0] == 5.0
    finally:
        Settings.SCALE = 2.0


def test_the_dispatcher_keeps_one_true_and_one_point_zero_apart(cache_dir: Path) -> None:
    typed = _typed_kernel()
    a = np.zeros(4, np.float32)
    for _ in range(2):  # the second round runs through the generated dispatcher
        np.testing.assert_array_equal(typed(a, 1), a + 1)
        np.testing.assert_array_equal(typed(a, 1.0), a + 10)
        np.testing.assert_array_equal(typed(a, True), a + 100)
    assert len(typed._specializations) == 3


def test_the_dispatcher_keeps_equal_tuples_of_other_element_types_apart(
    cache_dir: Path,
) -> None:
    """(1,) == (True,) == (1.0,): a tuple's elements are keyed by their classes too."""

    @tl_jit.jit(target="c")
    def flagged(A, flags=(1,)):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        first = flags[0]
        step = 100.0 if first is True else (10.0 if isinstance(first, float) else 1.0)
        C = T.empty((N,), T.float32)
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                C[i] = A[i] + step
        return C

    a = np.zeros(4, np.float32)
    for _ in range(2):  # the second round runs through the generated dispatcher
        np.testing.assert_array_equal(flagged(a, (1,)), a + 1)
        np.testing.assert_array_equal(flagged(a, (True,)), a + 100)
        np.testing.assert_array_equal(flagged(a, (1.0,)), a + 10)
        np.testing.assert_array_equal(flagged(a, (True, "x")), a + 100)
        np.testing.assert_array_equal(flagged(a, (1, "x")), a + 1)
    assert len(flagged._specializations) == 5
    # Tuples of ints and strings are served by the dispatcher's table (they never were:
    # the class item of their key, a tuple of types, was not taken as exact; ~47 us a
    # call through the slow path instead of ~2 us); (True,) and (1.0,) are not.
    table = flagged._fast_state[2]
    assert sorted(key[0] for key in table) == [(1,), (1, "x")], list(table)


def _fill_kernel() -> Any:
    @tl_jit.jit(target="c")
    def fill(A, value=1.0):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        C = T.empty((N,), T.float32)
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                C[i] = A[i] * value
        return C

    return fill


def test_the_dispatcher_keeps_signed_zeros_apart(cache_dir: Path) -> None:
    fill = _fill_kernel()
    a = np.ones(4, np.float32)
    for _ in range(2):
        assert not np.signbit(fill(a, 0.0)).any()
        assert np.signbit(fill(a, -0.0)).all()
    assert len(fill._specializations) == 2


def test_nan_calls_reuse_one_kernel_and_add_no_entries(cache_dir: Path) -> None:
    fill = _fill_kernel()
    a = np.ones(4, np.float32)
    for _ in range(5):
        assert np.isnan(fill(a, float("nan"))).all()
    assert len(fill._specializations) == 1
    assert len(fill._fast) == 0
    np.testing.assert_array_equal(fill(a, 2.0), a * 2)
    np.testing.assert_array_equal(fill(a, 2.0), a * 2)
    assert len(fill._fast) == 1  # an ordinary float still takes the fast path


# ------------------------------------------------------------------ environment variables
def _read_factor(form: str) -> float:
    import os

    if form == "item":
        return float(os.environ["KS_FACTOR"])
    if form == "get":
        return float(os.environ.get("KS_FACTOR", "0"))
    if form == "getenv":
        return float(os.getenv("KS_FACTOR") or "0")
    if form == "environb":  # the bytes view: it was not recorded
        return float(os.environb.get(b"KS_FACTOR", b"0"))
    if form == "getenvb":
        return float(os.getenvb(b"KS_FACTOR") or b"0")
    raise AssertionError(form)


@pytest.mark.parametrize("form", ["item", "get", "getenv", "environb", "getenvb"])
def test_a_builder_reading_an_environment_variable_rebuilds_when_it_changes(
    fake_backend: Any, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    monkeypatch.setenv("KS_FACTOR", "2")

    @tl_jit.jit(out_idx=-1, target="llvm")
    def scale(n: int) -> Any:
        return fake_backend.make_scale(n, _read_factor(form))

    a = np.ones(16, np.float32)
    np.testing.assert_allclose(scale(16)(a), 2 * a)
    monkeypatch.setenv("KS_FACTOR", "3")
    np.testing.assert_allclose(scale(16)(a), 3 * a)  # in memory
    scale._kernels.clear()  # as in a new process: the front-end record decides
    np.testing.assert_allclose(scale(16)(a), 3 * a)
    monkeypatch.setenv("KS_FACTOR", "2")
    scale._kernels.clear()
    np.testing.assert_allclose(scale(16)(a), 2 * a)


def test_a_builder_testing_whether_a_variable_is_set_rebuilds_when_it_changes(
    fake_backend: Any, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    monkeypatch.delenv("KS_TRIPLE", raising=False)

    @tl_jit.jit(out_idx=-1, target="llvm")
    def scale(n: int) -> Any:
        return fake_backend.make_scale(n, 3.0 if "KS_TRIPLE" in os.environ else 2.0)

    a = np.ones(16, np.float32)
    np.testing.assert_allclose(scale(16)(a), 2 * a)
    monkeypatch.setenv("KS_TRIPLE", "")
    np.testing.assert_allclose(scale(16)(a), 3 * a)
    scale._kernels.clear()
    np.testing.assert_allclose(scale(16)(a), 3 * a)


def test_a_builder_reading_no_variable_keeps_its_memo(fake_backend: Any, cache_dir: Path) -> None:
    @tl_jit.jit(out_idx=-1, target="llvm")
    def scale(n: int) -> Any:
        return fake_backend.make_scale(n, 2.0)

    first = scale(16)
    scale._kernels.clear()
    second = scale(16)
    assert second.cache_key == first.cache_key and second.prim_func is None  # a memo hit


def test_an_eager_body_reading_an_environment_variable_rebuilds_when_it_changes(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    monkeypatch.setenv("KS_SHIFT", "1")

    @tl_jit.jit(target="c")
    def shift(A):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        C = T.empty((N,), T.float32)
        amount = float(os.environ["KS_SHIFT"])
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                C[i] = A[i] + amount
        return C

    a = np.zeros(4, np.float32)
    np.testing.assert_array_equal(shift(a), a + 1)
    np.testing.assert_array_equal(shift(a), a + 1)
    monkeypatch.setenv("KS_SHIFT", "5")
    np.testing.assert_array_equal(shift(a), a + 5)


# ----------------------------------------------------------- a front-end record's proof
def test_a_record_naming_another_valid_entry_is_not_trusted(
    fake_backend: Any, cache_dir: Path
) -> None:
    @tl_jit.jit(out_idx=-1, target="llvm")
    def scale(n: int, factor: float) -> Any:
        return fake_backend.make_scale(n, factor)

    double = scale(16, 2.0)
    triple = scale(16, 3.0)
    records = {
        json.loads(p.read_text())["ir_key"]: p for p in (cache_dir / "frontend").glob("*.json")
    }
    double_record = records[double.cache_key]
    data = json.loads(double_record.read_text())
    data["ir_key"] = triple.cache_key  # the record now names the other kernel's valid entry
    double_record.write_text(json.dumps(data))
    scale._kernels.clear()
    a = np.ones(16, np.float32)
    with pytest.warns(CacheWarning, match="does not prove"):
        again = scale(16, 2.0)
    np.testing.assert_allclose(again(a), 2 * a)
    # The call rebuilt (found its own entry by its IR key) and wrote a record with a proof.
    scale._kernels.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(scale(16, 2.0)(a), 2 * a)


def test_a_record_copied_from_another_cache_root_is_not_trusted(
    fake_backend: Any, cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    @tl_jit.jit(out_idx=-1, target="llvm")
    def scale(n: int, factor: float) -> Any:
        return fake_backend.make_scale(n, factor)

    scale(16, 2.0)
    other = tmp_path / "other-cache"
    monkeypatch.setenv("TL_CACHE_DIR", str(other))
    scale._kernels.clear()
    scale(16, 2.0)  # the same kernel in another root, with that root's own secret
    for record in (cache_dir / "frontend").glob("*.json"):
        shutil.copy(record, other / "frontend" / record.name)
    scale._kernels.clear()
    with pytest.warns(CacheWarning, match="does not prove"):
        scale(16, 2.0)


def test_an_abstract_base_class_in_the_users_code_stays_keyable(tmp_path: Path) -> None:
    module = _load(
        tmp_path / "ks_abc.py",
        "ks_abc",
        """
        import abc

        class Base(abc.ABC):
            BLOCK = 16

            @abc.abstractmethod
            def size(self): ...

        def build(n):
            return n * Base.BLOCK
        """,
    )
    first = _key(module, n=4)
    module.Base.BLOCK = 32
    assert _key(module, n=4) != first


# ------------------------------------------- iteration order, scalar subclasses, submodules
def test_dicts_and_sets_are_keyed_in_their_iteration_order() -> None:
    # A builder that iterates a dict builds its kernel in that order: equal dicts (and
    # equal sets) in another order can build another kernel.
    assert canonical_value({"a": 2, "b": 3}) != canonical_value({"b": 3, "a": 2})
    assert canonical_value({"a": 2, "b": 3}) == canonical_value({"a": 2, "b": 3})
    first, second = {1, 9}, {9, 1}  # one hash bucket: iteration follows insertion
    assert list(first) != list(second)
    assert canonical_value(first) != canonical_value(second)


def test_a_dict_argument_in_another_order_builds_its_own_kernel(cache_dir: Path) -> None:
    @tl_jit.jit(out_idx=[-1], target="c")
    def weighted(N, weights):
        first, second = weights.values()

        @T.prim_func
        def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
            with T.Kernel(1, threads=1) as _bx:
                for i in T.serial(N):
                    B[i] = A[i] * first - second

        return main

    a = np.ones(4, np.float32)
    np.testing.assert_array_equal(weighted(4, {"a": 2.0, "b": 3.0})(a), np.full(4, -1.0))
    np.testing.assert_array_equal(weighted(4, {"b": 3.0, "a": 2.0})(a), np.full(4, 1.0))


def test_an_int_enum_member_and_scalar_subclasses_render_apart_from_plain_values() -> None:
    import enum

    class Mode(enum.IntEnum):
        FAST = 1

    class Other(enum.IntEnum):
        FAST = 1

    class Scaled(int):
        pass

    renderings = [
        json.dumps(canonical_value(v))
        for v in (1, Mode.FAST, Other.FAST, Scaled(1), 1.5, np.float64(1.5))
    ]
    assert len(set(renderings)) == len(renderings)
    assert canonical_value(Scaled(1)) == canonical_value(Scaled(1))
    tagged, other = Scaled(1), Scaled(1)
    tagged.unit = "ms"  # type: ignore[attr-defined]
    assert canonical_value(tagged) != canonical_value(other)
    # The compiler's dtype objects are their names (the same kernel either way).
    assert canonical_value(T.float16) == canonical_value("float16")


def test_an_attribute_read_through_a_user_submodule_changes_the_key(tmp_path: Path) -> None:
    package = tmp_path / "ks_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from . import sub\n")
    (package / "sub.py").write_text("BLOCK = 32\n")
    sys.path.insert(0, str(tmp_path))
    try:
        module = _load(
            tmp_path / "ks_chain.py",
            "ks_chain",
            "import ks_pkg\n\ndef build(n):\n    return ks_pkg.sub.BLOCK * n\n",
        )
        first = _key(module, n=2)
        module.ks_pkg.sub.BLOCK = 64
        assert _key(module, n=2) != first
        module.ks_pkg.sub.BLOCK = 32
        assert _key(module, n=2) == first
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("ks_pkg", "ks_pkg.sub", "ks_chain"):
            sys.modules.pop(name, None)


LOCALLY_ANNOTATED = """
import tl_jit
import tl_jit.language as T

@tl_jit.jit(target="c")
def add(A):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    C = T.empty((N,), T.float32)
    with T.Kernel(1, threads=1) as _:
        for i in T.serial(N):
            C[i] = A[i] + 1.0
    return C
"""


def test_an_edit_the_bytecode_leaves_out_changes_the_key(tmp_path: Path, cache_dir: Path) -> None:
    # A local annotation is not compiled, and code objects compare equal without their
    # file name: the edited function (a module loaded again from another file, a notebook
    # cell run again) has a code object equal to the first one's. The source read for the
    # key was cached by that equality, so the edit was keyed as the first kernel and its
    # call was handed the first kernel (float32: "expected dtype float32, got float64").
    first = _load(tmp_path / "annotated.py", "annotated", LOCALLY_ANNOTATED)
    assert float(first.add(np.ones(4, np.float32))[0]) == 2.0
    (tmp_path / "edited").mkdir()
    edited = _load(
        tmp_path / "edited" / "annotated.py",
        "annotated",
        LOCALLY_ANNOTATED.replace("A: T.Tensor[[N], T.float32]", "A: T.Tensor[[N], T.float64]"),
    )
    assert edited.add.func.__code__ == first.add.func.__code__  # what the cache keyed on
    values = {"eager": True, "templates": {}, "consts": {"N": 4}}
    assert frontend_key(edited.add.func, values, {"target": "c"}) != frontend_key(
        first.add.func, values, {"target": "c"}
    )
    assert float(edited.add(np.ones(4, np.float64))[0]) == 2.0


def test_the_memo_secret_appears_whole_to_every_racing_reader(tmp_path: Path) -> None:
    """Threads creating a fresh root's secret at once all get the same 32 bytes, with no
    warning: it used to be created empty and then written, so a reader in between saw 0
    bytes, warned that the (good) file was unusable and lost its record."""
    import threading

    from tl_jit import record_proof
    from tl_jit.cache import KernelCache

    def race(cache: KernelCache, readers: int) -> list[object]:
        got: list[object] = []
        start = threading.Barrier(readers)

        def read() -> None:
            start.wait()
            got.append(record_proof.secret(cache))

        threads = [threading.Thread(target=read) for _ in range(readers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return got

    for attempt in range(20):
        root = tmp_path / f"root{attempt}"
        record_proof._secrets.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = race(KernelCache(root), 8)
        assert not caught, [str(w.message) for w in caught]
        assert len(got) == 8 and len(set(map(repr, got))) == 1, got
        assert isinstance(got[0], bytes) and len(got[0]) == 32
        assert sorted(p.name for p in root.iterdir()) == ["memo.key"]


class DictBacked:
    """Attributes from a dict: a missing one raises KeyError (not AttributeError)."""

    def __init__(self) -> None:
        self.__dict__["_values"] = {"scale": 2.0}

    def __getattr__(self, name: str) -> Any:
        return self.__dict__["_values"][name]


DICT_BACKED = DictBacked()


def _reads_a_dict_backed_object(n: int) -> float:
    return DICT_BACKED.scale * n


def test_an_object_whose_getattr_raises_key_error_is_keyed() -> None:
    """``hasattr`` lets a KeyError through: the key (and the in-memory guard) failed with
    ``KeyError: '__array_interface__'`` although the builder itself runs."""
    from tl_jit.digest_guard import FunctionDigest

    first = canonical_value(DICT_BACKED)
    assert first == canonical_value(DICT_BACKED)
    assert len(FunctionDigest(_reads_a_dict_backed_object).current()) == 64
