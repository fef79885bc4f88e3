"""``from tl_jit import layout`` / ``tl_jit.layout.make_swizzled_layout``: the layout
helpers TileLang programs import as ``tilelang.layout`` (see `tl_ir.layout`)."""

from __future__ import annotations

from tl_ir.layout import *  # noqa: F403
from tl_ir.layout import __all__ as __all__
