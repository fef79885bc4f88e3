"""``from tl_jit import layout`` / ``tl_jit.layout.make_swizzled_layout``: the layout
helpers TileLang programs import as ``tilelang.layout`` (see `tl_ir.layout`)."""

from __future__ import annotations

from tl_ir.layout import *  # noqa: F403
from tl_ir.layout import IndexLayout as Layout  # TileLang's tilelang.layout.Layout
from tl_ir.layout import __all__ as _layout_names

__all__ = [*_layout_names, "Layout"]
