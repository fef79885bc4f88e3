"""``compile_for(func, target)``: a kernel built for ``target``, where the pseudo-target
``"interpreter"`` means the reference interpreter (``TL_INTERPRET=1``), so one test can
run the same kernel on ``c``, ``llvm`` and the interpreter."""

from __future__ import annotations

import os
from typing import Any

import tl_jit


def compile_for(func: Any, target: str, **kwargs: Any) -> Any:
    """``tl_jit.compile(func, target=target, **kwargs)``; for ``"interpreter"`` the
    kernel the reference interpreter runs (``TL_INTERPRET=1`` while it is made)."""
    if target == "interpreter":
        os.environ["TL_INTERPRET"] = "1"
        try:
            return tl_jit.compile(func, target="c", **kwargs)
        finally:
            del os.environ["TL_INTERPRET"]
    return tl_jit.compile(func, target=target, **kwargs)
