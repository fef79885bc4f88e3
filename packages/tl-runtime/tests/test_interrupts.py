"""Ctrl-C held off during imports that cannot be undone, and kept a KeyboardInterrupt across
tvm_ffi (tl_runtime.interrupts)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from tl_runtime.interrupts import interrupts_held

# A test runner started in the background (``cmd &`` in a non-interactive shell, nohup)
# inherits SIGINT ignored, and Python then installs no handler: each test here (and each
# child it starts) sets the handler a terminal's Python has.
DEFAULT_SIGINT = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"


@pytest.fixture(autouse=True)
def python_handles_sigint() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_sigint_inside_the_block_is_raised_when_it_ends() -> None:
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_held():
            signal.raise_signal(signal.SIGINT)
            steps.append("after the signal")
        steps.append("after the block")  # pragma: no cover - the interrupt comes first
    assert steps == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_nothing_is_raised_without_a_signal_and_the_handler_is_put_back() -> None:
    with interrupts_held(), interrupts_held():  # nested: the outer block holds
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_nested_block_holds_until_the_outer_one_ends() -> None:
    steps = []
    with pytest.raises(KeyboardInterrupt), interrupts_held():
        with interrupts_held():
            signal.raise_signal(signal.SIGINT)
        steps.append("inner ended")
    assert steps == ["inner ended"]


def test_the_callers_own_handler_gets_the_signal_after_the_block() -> None:
    seen: list[int] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        seen.append(signum)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        with interrupts_held():
            signal.raise_signal(signal.SIGINT)
            assert seen == []
        assert seen == [signal.SIGINT]
        assert signal.getsignal(signal.SIGINT) is handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_an_ignored_sigint_stays_ignored() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts_held():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_another_thread_runs_its_block_unchanged() -> None:
    handlers = []

    def body() -> None:
        with interrupts_held():
            handlers.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert handlers == [signal.default_int_handler]


def _run(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", DEFAULT_SIGINT + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


def test_a_held_package_is_imported_whole_then_the_interrupt_comes(tmp_path: Path) -> None:
    """A package interrupted halfway through its import (after registering something
    a second import would refuse) is imported whole; KeyboardInterrupt follows it."""
    package = tmp_path / "slowpkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            import builtins, signal
            if getattr(builtins, "slowpkg_registered", False):
                raise RuntimeError("slowpkg: already registered")
            builtins.slowpkg_registered = True
            signal.raise_signal(signal.SIGINT)
            from slowpkg import part
            DONE = part.VALUE
            """
        )
    )
    (package / "part.py").write_text("VALUE = 42\n")
    code = """
        import sys
        sys.path.insert(0, ".")
        from tl_runtime.interrupts import hold_interrupts_while_importing
        hold_interrupts_while_importing("slowpkg")
        try:
            import slowpkg
        except KeyboardInterrupt:
            print("interrupted after the import")
        import slowpkg
        print("value", slowpkg.DONE)
        """
    done = _run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["interrupted after the import", "value 42"]


def test_without_holding_the_same_package_breaks_the_process(tmp_path: Path) -> None:
    """The failure the hold prevents (so the test above can fail)."""
    package = tmp_path / "slowpkg2"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import builtins, signal\n"
        "if getattr(builtins, 'slowpkg2_registered', False):\n"
        "    raise RuntimeError('slowpkg2: already registered')\n"
        "builtins.slowpkg2_registered = True\n"
        "signal.raise_signal(signal.SIGINT)\n"
    )
    code = """
        import sys
        sys.path.insert(0, ".")
        try:
            import slowpkg2
        except KeyboardInterrupt:
            pass
        import slowpkg2
        """
    done = _run(code, tmp_path)
    assert done.returncode != 0 and "already registered" in done.stderr


def test_a_keyboard_interrupt_raised_under_tvm_ffi_comes_back_as_itself() -> None:
    """A Python function called from native code through tvm_ffi raises KeyboardInterrupt:
    the caller gets KeyboardInterrupt (tvm_ffi alone turns it into a RuntimeError)."""
    tvm_ffi = pytest.importorskip("tvm_ffi")
    import tl_runtime  # noqa: F401 - installs the registration

    def interrupted() -> None:
        raise KeyboardInterrupt

    function = tvm_ffi.convert(interrupted)
    with pytest.raises(KeyboardInterrupt):
        function()
