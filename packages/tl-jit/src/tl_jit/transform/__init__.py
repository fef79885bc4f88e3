"""TileLang's ``tilelang.transform`` names: `PassConfigKey` and the simplify helpers."""

from __future__ import annotations

from tl_jit.pass_configs import PassConfigKey
from tl_jit.transform.simplify import apply_simplify, simplify_prim_func

__all__ = ["PassConfigKey", "apply_simplify", "simplify_prim_func"]
