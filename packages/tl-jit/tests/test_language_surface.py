"""``tl_jit.language`` and ``tl_jit.layout`` offer TileLang's names; the compatibility
table of docs/language.md is the registry's."""

from pathlib import Path

import pytest

import tl_ir
import tl_ir.language
import tl_ir.layout
import tl_jit.language as T
from tl_ir.language import gpu
from tl_ir.language._compat import (
    GPU_ONLY,
    UNSUPPORTED,
    UNSUPPORTED_REASONS,
    compatibility_table,
    status,
)
from tl_ir.language._tilelang_names import TILELANG_NAMES
from tl_jit import layout

DOCS = Path(__file__).resolve().parents[3] / "docs" / "language.md"
ALL_NAMES = [(group, name) for group, names in TILELANG_NAMES.items() for name in names]


def test_layout_module_is_tilelangs_layout_helpers():
    assert layout.make_swizzled_layout is tl_ir.layout.make_swizzled_layout
    assert set(layout.__all__) >= {"make_swizzled_layout", "make_linear_layout", "Layout"}
    assert layout.Layout is T.Layout  # TileLang's `from tilelang.layout import Layout`


def test_language_resolves_tilelang_names_to_tl_ir():
    assert T.GemmWarpPolicy is tl_ir.language.GemmWarpPolicy
    assert T.float == "float32" and T.dtype is tl_ir.language.dtype
    assert "GemmWarpPolicy" in T.__all__ and "shfl_xor" in T.__all__


def test_the_gpu_names_of_tl_jit_language_are_exactly_tl_irs_one_list():
    gpu_objects = [getattr(gpu, name) for name in gpu.__all__]
    for name in gpu.__all__:
        assert getattr(T, name) is getattr(gpu, name), name
    reachable = {name for name in dir(T) if any(getattr(T, name) is value for value in gpu_objects)}
    assert reachable == set(gpu.__all__)
    assert T.__all__ == tl_ir.language.__all__


def test_tilelang_name_list_has_no_duplicates():
    names = [name for _, name in ALL_NAMES]
    assert len(names) == len(set(names)) > 500


@pytest.mark.parametrize(("group", "name"), ALL_NAMES)
def test_every_tilelang_name_exists(group, name):
    value = getattr(T, name)
    assert value is not None
    state, note = status(name, group)
    if state == UNSUPPORTED:
        assert note, name
    if state == GPU_ONLY:
        assert name in gpu.__all__ and getattr(tl_ir.language, name) is getattr(gpu, name)


@pytest.mark.parametrize("name", sorted(UNSUPPORTED_REASONS))
def test_unsupported_names_raise_not_implemented_naming_the_reason(name):
    with pytest.raises(NotImplementedError, match=f"T.{name}: "):
        getattr(T, name)()


def test_unsupported_dtype_is_refused_where_a_dtype_goes():
    with pytest.raises(tl_ir.UnknownDtypeError, match="int4"):
        tl_ir.normalize_dtype(T.int4)
    with pytest.raises(NotImplementedError, match="dtype not supported"):
        T.tfloat32(1.0)


def test_docs_compatibility_table_is_the_registrys():
    assert compatibility_table() in DOCS.read_text()
