"""What the in-memory memo's validity check costs on a hit (docs/cache.md, "In memory").

Run: .venv/bin/python benchmarks/memo_hit.py

A ``@tl_jit.jit`` builder and an eager kernel that read a module global, a class
attribute and a dict item (target ``c``, built once in a temporary cache). Prints, in
one run, microseconds per memo hit:

- ``jit hit``: ``builder(n)`` with the digest guard (what a call does now) against the
  same call with the guard replaced by a constant (what a call did before it followed
  the builder's reads);
- ``eager call``: the eager kernel's dispatcher with the guard against the same
  dispatcher with a check that always holds (a C builtin);
- ``guard alone`` and ``full digest`` (`function_digest`, what a hit would cost if it
  recomputed the digest instead).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import timeit
from pathlib import Path
from typing import Any

SOURCE = """
import tl_jit
import tl_jit.language as T

SCALE = 2.0
CONFIG = {"offset": 1.0}

class Cfg:
    BIAS = 0.5

@tl_jit.jit(out_idx=[-1], target="c")
def builder(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(N):
                B[i] = A[i] * SCALE + Cfg.BIAS + CONFIG["offset"]
    return main

@tl_jit.jit(target="c")
def eager(A):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    C = T.empty((N,), T.float32)
    with T.Kernel(1, threads=1) as _:
        for i in T.serial(N):
            C[i] = A[i] * SCALE + Cfg.BIAS + CONFIG["offset"]
    return C
"""


def per_call_us(call: Any, number: int = 5000, repeat: int = 7) -> float:
    """Best of ``repeat`` runs of ``number`` calls, in microseconds per call."""
    return min(timeit.repeat(call, number=number, repeat=repeat)) / number * 1e6


class _Constant:
    """A `FunctionDigest` stand-in that never checks: the memo before this change."""

    def __init__(self, digest: str) -> None:
        self.digest = digest
        self.guard = None

    def current(self) -> str:
        return self.digest


def main() -> None:
    """Build both kernels, then print the per-hit figures."""
    with tempfile.TemporaryDirectory(prefix="tl-memo-hit-") as tmp:
        os.environ["TL_CACHE_DIR"] = str(Path(tmp) / "cache")
        path = Path(tmp) / "memo_hit_kernels.py"
        path.write_text(SOURCE)
        spec = importlib.util.spec_from_file_location("memo_hit_kernels", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["memo_hit_kernels"] = module
        spec.loader.exec_module(module)
        run(module)


def run(module: Any) -> None:
    """Print the figures for the built ``module``."""
    import numpy as np

    from tl_jit.canonical import function_digest

    builder, eager = module.builder, module.eager
    a = np.ones(1024, np.float32)
    assert float(builder(1024)(a)[0]) == 3.5 and float(eager(a)[0]) == 3.5
    guarded = builder._digest
    guard = guarded.guard
    assert guard is not None
    with_guard = per_call_us(lambda: builder(1024))
    builder._digest = _Constant(guarded.current())
    without = per_call_us(lambda: builder(1024))
    builder._digest = guarded
    print(
        f"jit hit: {with_guard:.2f} us with the guard, {without:.2f} us without "
        f"(ratio {with_guard / without:.3f}; guard of {len(guard)} reads)"
    )
    eager(a)
    guarded_call = eager._call
    eager_with = per_call_us(lambda: eager(a))
    # the same dispatcher and table with a check that always passes
    unchecked = eager._binding.make_dispatch(eager._fast, eager._call_slow, ("True", {}))
    eager._install_call(unchecked)
    eager_without = per_call_us(lambda: eager(a))
    eager._install_call(guarded_call)
    print(
        f"eager call: {eager_with:.2f} us with the guard, {eager_without:.2f} us without "
        f"(ratio {eager_with / eager_without:.3f})"
    )
    print(f"guard alone: {per_call_us(guard.holds, number=50000):.3f} us")
    print(f"full digest: {per_call_us(lambda: function_digest(builder.func), number=500):.1f} us")


if __name__ == "__main__":
    main()
