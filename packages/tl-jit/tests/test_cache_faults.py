"""Fault injection on the disk cache: hostile keys and records, swapped or linked entries,
unsafe permissions, a clear during a build, deep manifests. Each must be refused or healed,
never followed."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import stat
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tl_jit import cache as cache_module
from tl_jit.cache import CacheWarning, KernelCache
from tl_jit.errors import CacheError


@pytest.fixture(autouse=True)
def _forget_kernels_afterwards() -> Iterator[None]:
    """Leave no kernel of this file's private caches in the jit function's memory."""
    yield
    import tljit_scale_kernel as module

    module.scale._kernels.clear()


def _fresh(module: Any, n: int, factor: float) -> Any:
    """Call the jit kernel with the in-memory memo emptied (as a new process would)."""
    module.scale._kernels.clear()
    return module.scale(n, factor)


def _memo_of(cache_dir: Path, ir_key: str) -> Path:
    memos = [
        p
        for p in (cache_dir / "frontend").glob("*.json")
        if json.loads(p.read_text())["ir_key"] == ir_key
    ]
    assert len(memos) == 1, memos
    return memos[0]


def _rewrite_memo(memo: Path, **fields: object) -> None:
    record = json.loads(memo.read_text())
    record.update(fields)
    memo.write_text(json.dumps(record))


def test_keys_are_digests_never_paths(tmp_path: Path) -> None:
    store = KernelCache(tmp_path / "cache")
    for bad in ("../../victim", "/etc", "A" * 64, "a" * 63, "a" * 64 + "/..", ""):
        with pytest.raises(CacheError, match="sha256 hex digest"):
            store.entry_path(bad)
        with pytest.raises(CacheError, match="sha256 hex digest"):
            store.read_record("frontend", bad)
    assert cache_module.is_cache_key("0123456789abcdef" * 4)


def test_memo_with_a_traversal_key_touches_nothing(fake_backend: Any, cache_dir: Path) -> None:
    import tljit_scale_kernel as module

    kernel = _fresh(module, 64, 3.0)
    victim = cache_dir.parent / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    _rewrite_memo(_memo_of(cache_dir, kernel.cache_key), ir_key="../../victim")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = _fresh(module, 64, 3.0)
    assert (victim / "precious.txt").read_text() == "keep me"
    assert any("not a sha256 hex digest" in str(w.message) for w in caught)
    a = np.ones(64, np.float32)
    np.testing.assert_allclose(again(a), 3 * a)


def test_memo_with_an_absolute_path_loads_nothing_from_there(
    fake_backend: Any, cache_dir: Path, tmp_path: Path
) -> None:
    import tljit_scale_kernel as module

    kernel = _fresh(module, 64, 3.0)
    elsewhere = tmp_path / "elsewhere"
    _fresh(module, 64, 5.0).export(elsewhere)
    _rewrite_memo(_memo_of(cache_dir, kernel.cache_key), ir_key=str(elsewhere))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = _fresh(module, 64, 3.0)
    assert any("not a sha256 hex digest" in str(w.message) for w in caught)
    a = np.ones(64, np.float32)
    np.testing.assert_allclose(again(a), 3 * a)


def test_memo_copied_from_another_kernel_is_ignored(fake_backend: Any, cache_dir: Path) -> None:
    import tljit_scale_kernel as module

    three, five = _fresh(module, 64, 3.0), _fresh(module, 64, 5.0)
    shutil.copyfile(_memo_of(cache_dir, five.cache_key), _memo_of(cache_dir, three.cache_key))
    a = np.ones(64, np.float32)
    np.testing.assert_allclose(_fresh(module, 64, 3.0)(a), 3 * a)


def test_entry_holding_another_kernel_is_discarded(fake_backend: Any, cache_dir: Path) -> None:
    """An intact entry under the wrong key (swapped directories) fails: it records its key."""
    import tljit_scale_kernel as module

    three, five = _fresh(module, 64, 3.0), _fresh(module, 64, 5.0)
    entry = cache_dir / "kernels" / three.cache_key
    shutil.rmtree(entry)
    shutil.copytree(cache_dir / "kernels" / five.cache_key, entry)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = _fresh(module, 64, 3.0)
    assert any("records tl_jit.cache_key" in str(w.message) for w in caught)
    a = np.ones(64, np.float32)
    np.testing.assert_allclose(again(a), 3 * a)


def test_symlinked_entry_is_discarded_not_followed(
    fake_backend: Any, cache_dir: Path, tmp_path: Path
) -> None:
    import tljit_scale_kernel as module

    three = _fresh(module, 64, 3.0)
    entry = cache_dir / "kernels" / three.cache_key
    outside = tmp_path / "outside"
    shutil.copytree(entry, outside)
    shutil.rmtree(entry)
    entry.symlink_to(outside, target_is_directory=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = _fresh(module, 64, 3.0)
    assert any("symlink" in str(w.message) for w in caught)
    assert outside.is_dir() and (outside / "manifest.json").is_file()
    assert entry.is_dir() and not entry.is_symlink()
    np.testing.assert_allclose(again(np.ones(64, np.float32)), 3)


def test_deeply_nested_manifest_is_discarded(fake_backend: Any, cache_dir: Path) -> None:
    import tljit_scale_kernel as module

    key = _fresh(module, 64, 3.0).cache_key
    (cache_dir / "kernels" / key / "manifest.json").write_text("[" * 200_000 + "]" * 200_000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert KernelCache(cache_dir).load(key) is None
    assert [w.category for w in caught] == [CacheWarning]
    assert not (cache_dir / "kernels" / key).exists()


@pytest.mark.parametrize("where", ["root", "kernels"])
def test_cache_writable_by_others_is_refused(
    fake_backend: Any, cache_dir: Path, where: str
) -> None:
    import tljit_scale_kernel as module

    target = cache_dir if where == "root" else cache_dir / "kernels"
    target.mkdir(parents=True)
    target.chmod(0o777)
    module.scale._kernels.clear()
    with pytest.raises(CacheError, match="writable by other users") as info:
        _fresh(module, 64, 3.0)
    assert str(target) in str(info.value) and "0777" in str(info.value)
    assert not list((cache_dir / "kernels").glob("*")) if where == "kernels" else True


def test_everything_created_is_private(fake_backend: Any, cache_dir: Path) -> None:
    import tljit_scale_kernel as module

    os.umask(0o022)
    _fresh(module, 64, 3.0)
    for directory, dirnames, filenames in os.walk(cache_dir):
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700, directory
        for name in filenames:
            mode = stat.S_IMODE(os.stat(os.path.join(directory, name)).st_mode)
            assert mode == 0o600, (directory, name, oct(mode))
        del dirnames


def test_clear_during_a_build_does_not_break_it(tmp_path: Path) -> None:
    store = KernelCache(tmp_path / "cache")
    key, other = "1" * 64, "2" * 64
    import tl_runtime

    def write(directory: Path, *, clear_midway: bool) -> None:
        directory.mkdir()
        (directory / "lib.so").write_bytes(b"x")
        if clear_midway:
            assert KernelCache(tmp_path / "cache").clear() == 1  # another process's clear
        manifest = tl_runtime.Manifest(
            name="k",
            entry_symbol="k",
            params=(tl_runtime.ParamSpec(name="A", dtype="float32", shape=(4,)),),
            target={"kind": "llvm"},
            library="lib.so",
        )
        tl_runtime.write_artifact(directory, manifest, ["lib.so"])

    store.get_or_build(other, lambda d: write(d, clear_midway=False))
    entry = store.get_or_build(key, lambda d: write(d, clear_midway=True))
    tl_runtime.read_manifest(entry, verify=True)
    assert not store.entry_path(other).exists()
    assert [p.name for p in (tmp_path / "cache" / "kernels").iterdir()] == [key]


def test_clear_spares_live_staging_and_removes_dead_leftovers(tmp_path: Path) -> None:
    store = KernelCache(tmp_path / "cache")

    def build(directory: Path) -> None:
        directory.mkdir()
        (directory / "manifest.json").write_text("{}")

    store.get_or_build("3" * 64, build)
    tmp = tmp_path / "cache" / "tmp"
    live = tmp / f"{'4' * 16}-{os.getpid()}-abcdef01"
    dead = tmp / f"{'4' * 16}-999999999-abcdef01"
    trash = tmp / "trash-0123"
    for directory in (live, dead, trash):
        directory.mkdir()
    assert store.clear() == 1
    assert live.is_dir() and not dead.exists() and not trash.exists()
    assert (tmp_path / "cache" / "kernels").is_dir()


def _build_forever(root: str, key: str, started: str) -> None:
    def build(directory: Path) -> None:
        directory.mkdir()
        (directory / "half-written").write_bytes(b"x" * 1000)
        Path(started).write_text("building")
        time.sleep(600)

    KernelCache(Path(root)).get_or_build(key, build)


def test_kill_during_a_build_leaves_nothing_in_use(tmp_path: Path) -> None:
    """kill -9 of a builder: its lock dies with it, no entry appears, the next build works."""
    root, key, started = tmp_path / "cache", "5" * 64, tmp_path / "started"
    context = multiprocessing.get_context("spawn")
    builder = context.Process(target=_build_forever, args=(str(root), key, str(started)))
    builder.start()
    deadline = time.monotonic() + 120
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), "the builder never started"
    os.kill(builder.pid, signal.SIGKILL)
    builder.join(30)
    store = KernelCache(root)
    assert not store.entry_path(key).exists()
    assert store.load(key) is None
    leftovers = list((root / "tmp").iterdir())
    assert len(leftovers) == 1 and str(builder.pid) in leftovers[0].name

    def build(directory: Path) -> None:
        directory.mkdir()
        (directory / "manifest.json").write_text("{}")

    entry = store.get_or_build(key, build)  # the dead builder's lock does not block
    assert (entry / "manifest.json").read_text() == "{}"
    store.clear()
    assert not any((root / "tmp").iterdir()), "the dead build's staging directory remains"


class _Hung(Exception):
    pass


def _within(seconds: float) -> Any:
    """A context that fails the test (instead of hanging the suite) when its body blocks."""
    import contextlib

    @contextlib.contextmanager
    def guard() -> Iterator[None]:
        def expire(_signum: int, _frame: Any) -> None:
            raise _Hung(f"blocked for more than {seconds} s")

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    return guard()


def test_a_huge_record_is_absent_not_read_whole(fake_backend: Any, cache_dir: Path) -> None:
    """A front-end record grown to gigabytes (a sparse file) was read whole into memory
    on the next call; now it is an absent record, and the call builds and rewrites it."""
    import tljit_scale_kernel as module

    two = _fresh(module, 64, 2.0)
    memo = _memo_of(cache_dir, two.cache_key)
    from tl_jit.cache_files import MAX_RECORD_BYTES, read_regular_file

    with open(memo, "r+b") as handle:
        handle.truncate(MAX_RECORD_BYTES + 1)
    with pytest.raises(OSError, match="beyond"):
        read_regular_file(memo)
    with open(memo, "r+b") as handle:
        handle.truncate(4 << 30)
    a = np.ones(64, np.float32)
    with _within(60):
        np.testing.assert_allclose(_fresh(module, 64, 2.0)(a), 2 * a)
    assert memo.stat().st_size < 1 << 20  # written again


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_special_files_in_the_cache_are_never_waited_on(fake_backend: Any, cache_dir: Path) -> None:
    """A FIFO put where a front-end record, the memo secret, a kernel entry or a lock
    belongs: each read or removal blocked forever (open() of a FIFO waits for a writer)."""
    import tljit_scale_kernel as module

    two = _fresh(module, 64, 2.0)
    memo = _memo_of(cache_dir, two.cache_key)
    a = np.ones(64, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWarning)
        memo.unlink()
        os.mkfifo(memo)
        with _within(60):
            np.testing.assert_allclose(_fresh(module, 64, 2.0)(a), 2 * a)  # rebuilt key
        memo.unlink()
        secret = cache_dir / "memo.key"
        secret.unlink()
        os.mkfifo(secret)
        from tl_jit import record_proof

        record_proof._secrets.clear()
        with _within(60):
            np.testing.assert_allclose(_fresh(module, 64, 2.0)(a), 2 * a)  # memo off
        secret.unlink()
        record_proof._secrets.clear()
        lock = cache_dir / "locks" / f"{two.cache_key}.lock"
        if lock.exists():
            lock.unlink()
        lock.mkdir()  # a lock replaced by a directory: filelock's raw IsADirectoryError
        shutil.rmtree(cache_dir / "kernels" / two.cache_key)
        with _within(60):
            np.testing.assert_allclose(_fresh(module, 64, 2.0)(a), 2 * a)
        fifo_entry = cache_dir / "kernels" / ("3" * 64)
        os.mkfifo(fifo_entry)
        with _within(60):
            assert KernelCache(cache_dir).clear() >= 2
        assert not os.path.lexists(fifo_entry)
        assert not list((cache_dir / "tmp").glob("trash-*"))
