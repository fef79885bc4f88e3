"""`import tl_runtime` stays light: no tvm, no other tl_* package, no numpy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tl_runtime

SRC = str(Path(tl_runtime.__file__).resolve().parent.parent)


def test_import_pulls_in_nothing_heavy() -> None:
    script = (
        "import sys, tl_runtime\n"
        "bad = sorted(m for m in sys.modules if m == 'tvm' or m.startswith('tvm.') or m == 'numpy'"
        " or (m.startswith('tl_') and not m.startswith('tl_runtime')))\n"
        "print(bad)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": SRC},
    )
    assert proc.stdout.strip() == "[]"


def test_public_names() -> None:
    for name in tl_runtime.__all__:
        assert getattr(tl_runtime, name) is not None
    assert tl_runtime.ALIGNMENT == 64


def test_the_adapter_api_is_public_and_documented() -> None:
    """What a package needs to ship its own adapter is exported with its contract."""
    for name in (
        "Adapter",
        "ArgumentChecker",
        "PreparedCall",
        "TensorView",
        "Availability",
        "pack_result",
        "load_tvm_ffi_library",
        "adapter_keys",
        "get_adapter",
        "adapter_availability",
    ):
        assert name in tl_runtime.__all__, name
        assert (getattr(tl_runtime, name).__doc__ or "").strip(), name
    assert tl_runtime.ADAPTER_ENTRY_POINT_GROUP == "tl.adapters"
