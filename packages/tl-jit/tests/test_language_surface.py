"""``tl_jit.language`` and ``tl_jit.layout`` offer TileLang's names."""

import tl_ir.language
import tl_ir.layout
import tl_jit.language as T
from tl_jit import layout


def test_layout_module_is_tilelangs_layout_helpers():
    assert layout.make_swizzled_layout is tl_ir.layout.make_swizzled_layout
    assert set(layout.__all__) >= {"make_swizzled_layout", "make_linear_layout"}


def test_language_resolves_tilelang_names_to_tl_ir():
    assert T.GemmWarpPolicy is tl_ir.language.GemmWarpPolicy
    assert T.float == "float32" and T.dtype is tl_ir.language.dtype
    assert "GemmWarpPolicy" in T.__all__
