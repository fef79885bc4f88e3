"""The in-memory memo follows what a kernel's builder reads: change a module global, a
class attribute, a closure value, a dict's item, a helper's defaults or the helper
itself, and the next call builds the kernel for the new value; change nothing and the
call is a memo hit (docs/cache.md, "In memory")."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
import threading
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.canonical
import tl_jit.language as T
from tl_jit.digest_guard import FunctionDigest, guard_of
from tl_jit.keys import frontend_key

BUILDERS = """
import tljit_fake_backend as fb
import tl_jit

SCALE = 2.0
CONFIG = {"factor": 2.0}

class Cfg:
    FACTOR = 2.0

def helper(factor=2.0):
    return factor

@tl_jit.jit(out_idx=-1, target="llvm")
def by_global(n):
    return fb.make_scale(n, SCALE)

@tl_jit.jit(out_idx=-1, target="llvm")
def by_class(n):
    return fb.make_scale(n, Cfg.FACTOR)

@tl_jit.jit(out_idx=-1, target="llvm")
def by_dict(n):
    return fb.make_scale(n, CONFIG["factor"])

@tl_jit.jit(out_idx=-1, target="llvm")
def by_helper(n):
    return fb.make_scale(n, helper())

@tl_jit.jit(out_idx=-1, target="llvm")
def by_getattr(n):
    return fb.make_scale(n, getattr(memo_settings, "FACTOR"))

def closing_over(factor):
    def set_factor(value):
        nonlocal factor
        factor = value

    @tl_jit.jit(out_idx=-1, target="llvm")
    def by_closure(n):
        return fb.make_scale(n, factor)

    return by_closure, set_factor
"""


def _load(path: Path, name: str, source: str) -> types.ModuleType:
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def builders(
    tmp_path: Path, fake_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> types.ModuleType:
    monkeypatch.setenv("TL_DISABLE_CACHE", "1")  # every memory miss builds
    settings = _load(tmp_path / "memo_settings.py", "memo_settings", "FACTOR = 2.0\n")
    module = _load(tmp_path / "memo_builders.py", "memo_builders", BUILDERS)
    module.memo_settings = settings
    return module


def _factor(kernel: Any) -> float:
    return float(kernel(np.ones(8, np.float32))[0])


def _counting_builds(builder: Any) -> list[int]:
    """A list that grows by one each time ``builder`` builds (not found in memory)."""
    builds: list[int] = []
    compile_fresh = builder._compile_fresh

    def counted(*args: Any) -> Any:
        builds.append(1)
        return compile_fresh(*args)

    builder._compile_fresh = counted
    return builds


def _check_follows(builder: Any, change: Any) -> None:
    """2x, then ``change(5.0)`` gives 5x, ``change(2.0)`` 2x again from memory."""
    builds = _counting_builds(builder)
    assert _factor(builder(8)) == 2.0
    assert _factor(builder(8)) == 2.0
    assert len(builds) == 1
    change(5.0)
    assert _factor(builder(8)) == 5.0
    assert len(builds) == 2
    change(2.0)
    assert _factor(builder(8)) == 2.0  # the first kernel, still in memory
    assert _factor(builder(8)) == 2.0
    assert len(builds) == 2


def test_a_changed_module_global_builds_again(builders: types.ModuleType) -> None:
    _check_follows(builders.by_global, lambda v: setattr(builders, "SCALE", v))


def test_a_changed_class_attribute_builds_again(builders: types.ModuleType) -> None:
    _check_follows(builders.by_class, lambda v: setattr(builders.Cfg, "FACTOR", v))


def test_a_dict_item_changed_in_place_builds_again(builders: types.ModuleType) -> None:
    _check_follows(builders.by_dict, lambda v: builders.CONFIG.__setitem__("factor", v))


def test_a_changed_closure_value_builds_again(builders: types.ModuleType) -> None:
    by_closure, set_factor = builders.closing_over(2.0)
    _check_follows(by_closure, set_factor)


def test_a_helpers_changed_default_builds_again(builders: types.ModuleType) -> None:
    _check_follows(
        builders.by_helper,
        lambda v: setattr(builders.helper, "__defaults__", (v,)),
    )


def test_a_redefined_helper_builds_again(builders: types.ModuleType) -> None:
    original = builders.helper

    def redefine(value: float) -> None:
        if value == 2.0:
            builders.helper = original
        else:
            exec(f"def helper(factor={value}):\n    return factor\n", builders.__dict__)

    _check_follows(builders.by_helper, redefine)


def test_getattr_with_a_literal_name_is_keyed(builders: types.ModuleType) -> None:
    settings = builders.memo_settings
    before = frontend_key(builders.by_getattr.func, {"n": 8}, {"target": "llvm"})
    settings.FACTOR = 3.0
    assert frontend_key(builders.by_getattr.func, {"n": 8}, {"target": "llvm"}) != before
    settings.FACTOR = 2.0
    _check_follows(builders.by_getattr, lambda v: setattr(settings, "FACTOR", v))


def test_an_unchanged_state_hits_without_recomputing_the_digest(
    builders: types.ModuleType,
) -> None:
    builds = _counting_builds(builders.by_global)
    kernel = builders.by_global(8)
    computed = builders.by_global._digest.computed
    for _ in range(20):
        assert builders.by_global(8) is kernel
    assert builders.by_global._digest.computed == computed
    assert len(builds) == 1


def test_a_builder_reading_an_array_recomputes_its_digest_on_every_call() -> None:
    table = np.ones(4, np.float32)

    def reads_array() -> float:
        return float(table[0])

    digest = FunctionDigest(reads_array)
    first = digest.current()
    assert guard_of(reads_array).volatile
    assert digest.current() == first
    table[0] = 7.0  # in place: identity cannot see it, the recomputed digest does
    assert digest.current() != first


# --------------------------------------------------------------------------- eager
EAGER = """
import tl_jit
import tl_jit.language as T

SHIFT = 1.0
OFFSETS = {"shift": 0.0}

class Step:
    SIZE = 0.0

@tl_jit.jit(target="c")
def shift(A):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    C = T.empty((N,), T.float32)
    with T.Kernel(1, threads=1) as _:
        for i in T.serial(N):
            C[i] = A[i] + SHIFT + Step.SIZE + OFFSETS["shift"]
    return C

def closing_over(amount):
    def set_amount(value):
        nonlocal amount
        amount = value

    @tl_jit.jit(target="c")
    def add(A):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        C = T.empty((N,), T.float32)
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                C[i] = A[i] + amount
        return C

    return add, set_amount
"""


def test_an_eager_kernel_follows_globals_class_attributes_dicts_and_closures(
    tmp_path: Path, cache_dir: Path
) -> None:
    module = _load(tmp_path / "memo_eager.py", "memo_eager", EAGER)
    a = np.zeros(4, np.float32)

    def result() -> float:
        return float(module.shift(a)[0])

    assert result() == 1.0
    assert result() == 1.0  # the dispatcher's entry
    module.SHIFT = 2.0
    assert result() == 2.0
    module.Step.SIZE = 10.0
    assert result() == 12.0
    module.OFFSETS["shift"] = 100.0
    assert result() == 112.0
    assert result() == 112.0
    module.SHIFT, module.Step.SIZE, module.OFFSETS["shift"] = 1.0, 0.0, 0.0
    compiled = len(module.shift._specializations)
    assert result() == 1.0  # from memory
    assert len(module.shift._specializations) == compiled == 4
    computed = module.shift._digest.computed
    for _ in range(10):
        assert result() == 1.0
    assert module.shift._digest.computed == computed  # hits: no digest recomputed

    add, set_amount = module.closing_over(1.0)
    assert float(add(a)[0]) == 1.0
    assert float(add(a)[0]) == 1.0
    set_amount(3.0)
    assert float(add(a)[0]) == 3.0


def test_the_eager_dispatcher_serves_nothing_once_a_read_changed(
    tmp_path: Path, cache_dir: Path
) -> None:
    module = _load(tmp_path / "memo_eager2.py", "memo_eager2", EAGER)
    a = np.zeros(4, np.float32)
    module.shift(a)
    module.shift(a)
    assert len(module.shift._fast) == 1
    module.SHIFT = 4.0
    assert float(module.shift(a)[0]) == 4.0
    assert len(module.shift._fast) == 1  # rebuilt for the new digest only
    for shift in (1.0, 4.0, 1.0, 4.0, 2.0):
        module.SHIFT = shift
        assert float(module.shift(a)[0]) == shift
        assert float(module.shift(a)[0]) == shift  # the new dispatcher's entry
    # Each new guard gets a dispatcher; guards over the same reads share its code (one
    # more where the first guard was made before the fork-safety hook counted writes).
    assert len(module.shift._binding._compiled) <= 2


def test_a_helpers_code_swapped_in_place_builds_again(builders: types.ModuleType) -> None:
    original = builders.helper.__code__
    five = compile("def five(factor=2.0):\n    return 5.0\n", "<five>", "exec")
    swapped = next(c for c in five.co_consts if isinstance(c, types.CodeType))

    def swap(value: float) -> None:
        builders.helper.__code__ = original if value == 2.0 else swapped

    _check_follows(builders.by_helper, swap)


def test_function_attribute_writes_are_counted_once_the_hook_is_added(
    builders: types.ModuleType,
) -> None:
    from tl_runtime import fork_safety

    builders.by_global(8)  # a build: the fork-safety audit hook is added
    assert fork_safety.attribute_writes_counted()
    before = fork_safety.attribute_writes
    builders.helper.__defaults__ = (3.0,)
    assert fork_safety.attribute_writes == before + 1


def test_a_value_with_no_rendering_is_guarded_by_identity() -> None:
    def reads_lock() -> object:
        return lock

    lock = threading.Lock()  # its repr shows an address: no rendering
    digest = FunctionDigest(reads_lock)
    first = digest.current()
    assert first.startswith("unkeyable#")
    assert not guard_of(reads_lock).volatile
    assert digest.current() == first and digest.computed == 1  # a hit: no recompute
    lock = threading.Lock()  # rebinding the closure value is seen: a new name
    assert digest.current() not in (first, "") and digest.computed == 2


def test_an_eager_kernels_defaults_and_code_assigned_in_place_are_followed(
    tmp_path: Path, cache_dir: Path
) -> None:
    module = _load(
        tmp_path / "memo_eager3.py",
        "memo_eager3",
        """
        import tl_jit
        import tl_jit.language as T

        @tl_jit.jit(target="c")
        def fill(A, value: float = 1.0):
            N = T.const("N")
            A: T.Tensor[[N], T.float32]
            C = T.empty((N,), T.float32)
            with T.Kernel(1, threads=1) as _:
                for i in T.serial(N):
                    C[i] = A[i] + value
            return C
        """,
    )
    a = np.zeros(4, np.float32)
    assert float(module.fill(a)[0]) == 1.0
    assert float(module.fill(a)[0]) == 1.0  # the dispatcher's entry
    module.fill.func.__defaults__ = (5.0,)
    assert float(module.fill(a)[0]) == 5.0
    assert float(module.fill(a)[0]) == 5.0


def test_a_builders_own_defaults_assigned_in_place_are_bound(builders: types.ModuleType) -> None:
    @tl_jit.jit(out_idx=-1, target="llvm")
    def by_default(n: int, factor: float = 2.0) -> Any:
        return builders.fb.make_scale(n, factor)

    assert _factor(by_default(8)) == 2.0
    by_default.func.__defaults__ = (5.0,)
    assert _factor(by_default(8)) == 5.0
    assert _factor(by_default(8, 2.0)) == 2.0


# --------------------------------------------------------------------------- threads
def _stall_first_digest(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Make the first `function_digest` computed off the main thread wait (at most 0.5 s)
    until another thread computes one too. Returned: an event set once that first one
    is waiting."""
    from tl_jit import digest_guard

    real = digest_guard.function_digest
    waiting, another = threading.Event(), threading.Event()
    stalled: list[threading.Thread] = []

    def stalling(func: types.FunctionType) -> str:
        me = threading.current_thread()
        if not stalled and me is not threading.main_thread():
            stalled.append(me)
            waiting.set()
            another.wait(0.5)
        elif stalled and me is not stalled[0]:
            another.set()
        return real(func)

    monkeypatch.setattr(digest_guard, "function_digest", stalling)
    return waiting


@pytest.mark.parametrize("moment", ["first", "after a change"])
def test_a_thread_never_takes_a_digest_the_guard_it_sees_does_not_vouch_for(
    monkeypatch: pytest.MonkeyPatch, moment: str
) -> None:
    # A thread computing the digest used to publish its new guard before the digest:
    # another thread then found the guard holding and took the digest stored before
    # (none at first: "", after a change: the stale digest, so the old kernel).
    scale = 2.0

    def reads() -> float:
        return scale

    digest = FunctionDigest(reads)
    if moment == "after a change":
        digest.current()
        scale = 5.0
    expected = tl_jit.canonical.function_digest(reads)
    waiting = _stall_first_digest(monkeypatch)
    worker = threading.Thread(target=digest.current)
    worker.start()
    assert waiting.wait(10)  # the worker is computing the digest
    assert digest.current() == expected
    worker.join(10)
    assert digest.current() == expected


def test_par_compile_keys_each_specialization_under_the_digest(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # integration_tests/eager: test_jit2_gemm_ptr counted 3 specializations where
    # par_compile had built 2 (one compile thread keyed its kernel under the digest "").
    module = _load(tmp_path / "memo_eager4.py", "memo_eager4", EAGER)
    _stall_first_digest(monkeypatch)
    kernels = module.shift.par_compile(
        [(T.Tensor((4,), T.float32),), (T.Tensor((8,), T.float32),)], num_workers=2
    )
    assert all(k is not None for k in kernels)
    for n in (4, 8):
        assert float(module.shift(np.zeros(n, np.float32))[0]) == 1.0
    assert len(module.shift._specializations) == 2


def test_a_dtype_default_is_guarded_by_its_name() -> None:
    # A compiler dtype is rendered as its name; the tvm dtype it caches in a slot (set
    # lazily, on its first conversion) is not an input and fails no guard.
    dtype = type(T.float16)("float32")

    def reads(d: Any = dtype) -> Any:
        return d

    digest = FunctionDigest(reads)
    digest.current()
    dtype._tvm_ffi_dtype = type(dtype._tvm_ffi_dtype)("float32")
    digest.current()
    assert digest.computed == 1


@pytest.mark.parametrize("size", [1, 3, 12])  # up to 8 items the check is unrolled
def test_a_reordered_dict_list_or_set_is_seen(size: int) -> None:
    table = {f"k{i}": i for i in range(size)}
    items = list(range(size))
    keyed = {1: "one"}

    def reads() -> Any:
        return table, items, keyed

    digest = FunctionDigest(reads)
    seen = {digest.current()}
    table["k0"] = table.pop("k0")  # the same items, another order (for size > 1)
    seen.add(digest.current())
    assert len(seen) == (2 if size > 1 else 1)
    items.insert(0, items.pop())
    seen.add(digest.current())
    assert len(seen) == (3 if size > 1 else 1)
    del keyed[1]
    keyed[True] = "one"  # an equal key of another type: keyed[1] still finds it
    seen.add(digest.current())
    assert len(seen) == (4 if size > 1 else 2)
    computed = digest.computed
    assert digest.current() in seen and digest.computed == computed  # unchanged: a hit


def test_an_attribute_named_like_a_global_is_not_a_read(tmp_path: Path) -> None:
    # integration_tests/eager: gemm_ptr calls T.gemm, and its module defines a kernel
    # named gemm; "gemm" is in gemm_ptr's co_names, which keyed it on that kernel too.
    module = _load(
        tmp_path / "named_like.py",
        "named_like",
        """
        import math

        floor = 2.0

        def reads():
            return math.floor(1.5)
        """,
    )
    digest = FunctionDigest(module.reads)
    first = digest.current()
    module.floor = 3.0
    assert digest.current() == first and digest.computed == 1
    assert tl_jit.canonical.function_digest(module.reads) == first


# ----------------------------------------------------------- reads with no digest
UNKEYABLE = """
import dataclasses, threading
import tljit_fake_backend as fb
import tl_jit
import tl_jit.language as T

SCALE = 2.0
LOCK = threading.Lock()  # no faithful rendering: the function has no digest


@dataclasses.dataclass
class Settings:
    offset: float = 0.0
    history: list = dataclasses.field(default_factory=list)


SETTINGS = Settings()


@tl_jit.jit(out_idx=-1, target="llvm")
def classic(n):
    assert LOCK is not None
    return fb.make_scale(n, SCALE + SETTINGS.offset)


@tl_jit.jit(target="c")
def eager(A):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    C = T.empty((N,), T.float32)
    amount = SCALE + SETTINGS.offset + (0.0 if LOCK is None else 0.0)
    with T.Kernel(1, threads=1) as _:
        for i in T.serial(N):
            C[i] = A[i] + amount
    return C
"""


def _check_follows_without_digest(module: types.ModuleType, result: Any) -> None:
    """``result()`` follows SCALE, SETTINGS (in place, rebound) and LOCK, and hits
    memory while nothing changes."""
    assert result() == 2.0
    assert result() == 2.0
    module.SCALE = 3.0
    assert result() == 3.0
    module.SETTINGS.offset = 1.0  # in place
    assert result() == 4.0
    module.SETTINGS = module.Settings(offset=2.0)  # rebound
    assert result() == 5.0
    module.LOCK = threading.Lock()
    module.SCALE = 2.0
    assert result() == 4.0
    assert result() == 4.0


def test_a_function_with_no_digest_still_follows_what_it_reads(
    tmp_path: Path, fake_backend: Any
) -> None:
    """A read with no faithful rendering (a lock; a dataclass with a default_factory)
    leaves the function without a digest. Its in-memory kernels used to be filed under
    one name ("unkeyable") whatever else it read: a changed global, class attribute or
    rebound value kept returning the first kernel (issue 24, in-memory memo)."""
    module = _load(tmp_path / "memo_unkeyable.py", "memo_unkeyable", UNKEYABLE)
    builds = _counting_builds(module.classic)
    _check_follows_without_digest(module, lambda: _factor(module.classic(8)))
    assert len(builds) == 5  # the last call came from memory


def test_an_eager_kernel_with_no_digest_still_follows_what_it_reads(
    tmp_path: Path, cache_dir: Path
) -> None:
    """As above, for an eager kernel (its table and its generated dispatcher)."""
    module = _load(tmp_path / "memo_unkeyable2.py", "memo_unkeyable2", UNKEYABLE)
    a = np.zeros(4, np.float32)
    _check_follows_without_digest(module, lambda: float(module.eager(a)[0]))
    computed = module.eager._digest.computed
    assert float(module.eager(a)[0]) == 4.0
    assert module.eager._digest.computed == computed  # nothing changed: from memory
