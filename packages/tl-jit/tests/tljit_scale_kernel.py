"""A ``@jit`` kernel module for subprocess tests: tvm is imported only when it compiles."""

from __future__ import annotations

from typing import Any

import tl_jit


@tl_jit.jit(out_idx=-1, target="llvm")
def scale(n: int, factor: float, repeat: int = 1, fail: bool = False) -> Any:
    """``B = A * factor`` built by the fake backend (installed in whichever process compiles,
    autotune workers included); ``fail=True`` raises instead of returning a kernel."""
    import tljit_fake_backend

    tljit_fake_backend.install()
    if fail:
        raise ValueError("this configuration fails on purpose")
    return tljit_fake_backend.make_scale(n, factor, repeat)


def reference(a: Any) -> Any:
    """What ``scale(n, 2.0)`` computes."""
    return a * 2.0


tuned_scale = tl_jit.autotune(
    configs=[{"repeat": 3000}, {"repeat": 1}, {"repeat": 1, "fail": True}],
    warmup=1,
    rep=5,
    ref_prog=reference,
    max_workers=2,
)(scale)
