"""Ctrl-C during a kernel's first call leaves the process able to compile and run again.

Two things go wrong when a ``KeyboardInterrupt`` lands at an arbitrary moment of a first
call, and both are handled here for the whole process:

- **An import cut short.** The first call imports the compiler stack lazily (tvm_ffi,
  which imports torch; tvm, which registers ml_dtypes' types; the ``tl_*`` packages).
  Python removes a module whose import raised, but not what it already registered
  elsewhere (torch's operators and C++ types, tvm's global functions, numpy dtypes), so
  every later import fails ("partially initialized module 'torch'", "already
  registered") until the process restarts. `hold_interrupts_while_importing` names
  packages whose top-level import then runs under `interrupts_held`: a SIGINT that
  arrives meanwhile is delivered when the import is over.
- **An interrupt inside a callback from native code.** tvm calls Python functions from
  C++ (pass bodies, IR visitors); a ``KeyboardInterrupt`` raised there crosses tvm_ffi as
  an error of a kind tvm_ffi does not know, and came back as a bare ``RuntimeError``
  (or was reported as a code-generation failure). `install` registers the kind with
  tvm_ffi, so it comes back as ``KeyboardInterrupt``.

Signals go to the main thread, so holding applies there only (an import in another
thread is not interrupted by a SIGINT). Where SIGINT's handler is not a Python function
(ignored, or the OS default), nothing is held: Python raises nothing then either.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from importlib.machinery import ModuleSpec
from types import FrameType, ModuleType
from typing import Any

from tl_runtime.import_hooks import spec_from_other_finders, wrap_execution

__all__ = ["hold_interrupts_while_importing", "install", "interrupts_held"]

_holding = False  # main thread only: whether an `interrupts_held` block is open
_held_packages: set[str] = set()
# name -> (spec, module) of a held import that ran whole and then raised the held interrupt
_finished: dict[str, tuple[ModuleSpec, ModuleType]] = {}
_install_lock = threading.Lock()


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Run the block with SIGINT held: one that arrives is delivered when it ends.

    In the main thread, where SIGINT's handler is a Python function (by default the one
    raising ``KeyboardInterrupt``), that handler is swapped for one that records the
    signal, and put back when the block ends, after which a recorded signal is passed to
    it (so ``KeyboardInterrupt`` is raised at the end of the block, not inside it).
    Nested blocks, other threads and other handlers run the block unchanged.
    """
    global _holding
    if _holding or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        yield
        return
    received: list[tuple[int, FrameType | None]] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        received.append((signum, frame))

    try:
        signal.signal(signal.SIGINT, hold)
    except ValueError:  # not the main interpreter's main thread
        yield
        return
    _holding = True
    try:
        yield
    finally:
        _holding = False
        if signal.getsignal(signal.SIGINT) is hold:  # not replaced inside the block
            signal.signal(signal.SIGINT, previous)
        if received:
            previous(*received[0])


class _HeldImports(importlib.abc.MetaPathFinder):
    """Finds a named top-level package with the other finders and runs its module under
    `interrupts_held` (the package's own imports run inside that).

    A SIGINT held that way is delivered as ``KeyboardInterrupt`` when the module has run
    to its end, which is still inside the import machinery: it drops the module from
    ``sys.modules`` as for any import that raised. The module is kept here instead, and
    the next import of the name gets it back without running it a second time."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in _held_packages:
            return None
        finished = _finished.pop(fullname, None)
        if finished is not None:
            return _spec_of_finished(*finished)
        spec = spec_from_other_finders(self, fullname, path, target)
        if spec is None:
            return None

        def held(execute: Callable[[ModuleType], None], module: ModuleType) -> None:
            ran = False
            try:
                with interrupts_held():
                    execute(module)
                    ran = True
                    if fullname == "tvm_ffi":
                        _keep_keyboard_interrupts(module)
            except KeyboardInterrupt:
                if ran:  # the held interrupt, delivered after the module ran whole
                    _finished[fullname] = (spec, module)
                raise

        # A loader that takes no attributes runs the module unheld.
        wrap_execution(spec, held)
        return spec


def _spec_of_finished(spec: ModuleSpec, module: ModuleType) -> ModuleSpec:
    """``spec`` once more, its loader answering with ``module`` as it stands (run whole)."""
    loader: Any = spec.loader

    def create_module(_spec: ModuleSpec) -> ModuleType:
        with contextlib.suppress(AttributeError):
            del loader.create_module
        return module

    def exec_module(_module: ModuleType) -> None:
        with contextlib.suppress(AttributeError):
            del loader.exec_module

    loader.create_module = create_module
    loader.exec_module = exec_module
    return spec


def hold_interrupts_while_importing(*packages: str) -> None:
    """Hold SIGINT while each named top-level package is first imported (in the main
    thread); see the module docstring. Packages already imported are left alone."""
    install()
    _held_packages.update(packages)


def _keep_keyboard_interrupts(tvm_ffi: ModuleType) -> None:
    # tvm_ffi turns a Python exception raised under native code into an error of the
    # exception type's registered name, and back into the type registered for that name.
    register = getattr(tvm_ffi, "register_error", None)
    if register is not None:
        register("KeyboardInterrupt", KeyboardInterrupt)


_installed = False


def install() -> None:
    """Once per process: the import finder, and ``KeyboardInterrupt`` as an error kind of
    tvm_ffi (now if it is loaded, else when tl_runtime first loads it)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        sys.meta_path.insert(0, _HeldImports())
        _held_packages.update(("tvm_ffi", "torch", "ml_dtypes"))
        _installed = True
    loaded = sys.modules.get("tvm_ffi")
    if loaded is not None:
        _keep_keyboard_interrupts(loaded)
