"""The top-level names TileLang programs import: PassConfigKey and tl.* pass configs,
cdiv, next_power_of_2, get_num_sms, and autotune skipping when tuned arguments are given."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_jit
from tl_jit.pass_configs import KNOWN_TL_KEYS, PassConfigKey, split_pass_configs


def test_tilelang_names_are_exported() -> None:
    for name in ("PassConfigKey", "cdiv", "next_power_of_2", "get_num_sms"):
        assert name in tl_jit.__all__
        assert getattr(tl_jit, name) is not None


def test_pass_config_key_members_are_their_strings() -> None:
    assert tl_jit.PassConfigKey.TL_DISABLE_TMA_LOWER == "tl.disable_tma_lower"
    assert str(PassConfigKey.TL_ENABLE_FAST_MATH) == "tl.enable_fast_math"
    tl_members = {m.value for m in PassConfigKey if m.value.startswith("tl.")}
    assert tl_members == set(KNOWN_TL_KEYS)


def test_split_keeps_tvm_keys_for_tvm_and_validates_tl_keys() -> None:
    tvm_configs, tl_configs = split_pass_configs(
        {PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True, "tirx.disable_vectorize": True}
    )
    assert tvm_configs == {"tirx.disable_vectorize": True}
    assert tl_configs == {"tl.disable_warp_specialized": True}
    with pytest.raises(
        ValueError, match=r"unknown TileLang key 'tl.no_such_key'.*tl.disable_tma_lower"
    ):
        split_pass_configs({"tl.no_such_key": 1})
    with pytest.raises(TypeError, match="keys must be strings"):
        split_pass_configs({3: 1})


@pytest.mark.parametrize("value", ["maybe", None, 2, 1.0, "False"])
def test_a_boolean_tl_key_takes_a_bool(value: Any) -> None:
    # {"tl.disable_tma_lower": "maybe"} was accepted as it came.
    with pytest.raises(
        TypeError, match=r"pass_configs\['tl.disable_tma_lower'\]: expected a bool \(True or"
    ):
        split_pass_configs({PassConfigKey.TL_DISABLE_TMA_LOWER: value})
    for fine in (True, False, 0, 1, np.bool_(True)):
        assert split_pass_configs({"tl.disable_tma_lower": fine})[1] == {
            "tl.disable_tma_lower": fine
        }
    # Keys TileLang types otherwise keep their values.
    assert split_pass_configs({"tl.ptxas_register_usage_level": 5, "tl.dump_ir_path": "d"})


def test_known_tl_keys_compile_and_unknown_ones_are_refused(fake_backend: Any) -> None:
    func = fake_backend.make_scale(16, 2.0)
    configs = {key: True for key in KNOWN_TL_KEYS if key not in ("tl.enable_dump_ir",)}
    configs["tl.dump_ir_path"] = "unused-without-enable"
    kernel = tl_jit.compile(func, out_idx=-1, target="llvm", pass_configs=configs)
    a = np.arange(16, dtype=np.float32)
    np.testing.assert_allclose(kernel(a), a * 2.0)
    with pytest.raises(ValueError, match=r"known tl\.\* keys are"):
        tl_jit.compile(func, out_idx=-1, target="llvm", pass_configs={"tl.bogus": True})
    with pytest.raises(ValueError, match="unknown TileLang key"):
        tl_jit.jit(out_idx=-1, pass_configs={"tl.bogus": True})


def test_jit_accepts_pass_config_key_members(fake_backend: Any) -> None:
    @tl_jit.jit(out_idx=-1, target="llvm", pass_configs={PassConfigKey.TL_DISABLE_TMA_LOWER: True})
    def scale(n: int) -> Any:
        return fake_backend.make_scale(n, 3.0)

    assert scale.options["pass_configs"] == {"tl.disable_tma_lower": True}
    a = np.ones(8, dtype=np.float32)
    np.testing.assert_allclose(scale(8)(a), a * 3.0)


def test_enable_dump_ir_needs_a_path() -> None:
    from tl_jit.pass_configs import dump_dir

    assert dump_dir({"tl.enable_dump_ir": False, "tl.dump_ir_path": "x"}) is None
    assert dump_dir({"tl.enable_dump_ir": True, "tl.dump_ir_path": "x"}) == Path("x")
    with pytest.raises(ValueError, match=r"tl\.dump_ir_path"):
        dump_dir({"tl.enable_dump_ir": True})


def test_cdiv_and_next_power_of_2() -> None:
    assert [tl_jit.cdiv(a, 4) for a in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]
    assert tl_jit.cdiv(np.int64(9), 2) == 5
    assert [tl_jit.next_power_of_2(x) for x in (0, 1, 2, 3, 5, 64, 65)] == [1, 1, 2, 4, 8, 64, 128]
    with pytest.raises(TypeError, match="a: expected an int"):
        tl_jit.cdiv(1.5, 2)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="x: expected an int"):
        tl_jit.next_power_of_2("8")  # type: ignore[arg-type]


def test_get_num_sms_on_a_cpu_target_counts_usable_cores() -> None:
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert tl_jit.get_num_sms(target="c") == expected
    with pytest.raises(TypeError, match="device_id"):
        tl_jit.get_num_sms(-1, target="c")


def test_autotune_skips_tuning_when_a_tuned_argument_is_passed(fake_backend: Any) -> None:
    built: list[int] = []

    @tl_jit.autotune(configs=[{"repeat": 3000}, {"repeat": 1}], warmup=1, rep=2, max_workers=1)
    @tl_jit.jit(out_idx=-1, target="llvm")
    def scale(n: int, factor: float, repeat: int = 1) -> Any:
        built.append(repeat)
        return fake_backend.make_scale(n, factor, repeat)

    kernel = scale(64, 2.0, repeat=3000)
    assert built == [3000]
    assert scale.results == []
    a = np.ones(64, dtype=np.float32)
    np.testing.assert_allclose(kernel(a), a * 2.0)
    positional = scale(64, 2.0, 7)
    assert built == [3000, 7] and positional is not kernel


def _offset_copy() -> Any:
    import tl_jit.language as T

    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8) as _:
            for i in T.serial(8):
                B[i] = A[i + 2 - 2]

    return main


def test_apply_simplify_folds_index_arithmetic() -> None:
    import tvm

    from tl_jit.transform import apply_simplify, simplify_prim_func

    func = _offset_copy()
    assert "i + 2 - 2" in func.script()
    simplified = apply_simplify(func)
    assert "i + 2" not in simplified.script()
    assert isinstance(apply_simplify(tvm.IRModule.from_expr(func)), type(func))
    assert "i + 2" not in simplify_prim_func(_offset_copy)().script()
    with pytest.raises(TypeError, match="stmt: expected a PrimFunc or an IRModule"):
        apply_simplify("main")
    two = tvm.IRModule({"a": func, "b": func})
    with pytest.raises(ValueError, match="one function, got 2"):
        apply_simplify(two)


def test_eager_style_jit_routes_to_the_eager_front_end() -> None:
    import tl_jit.language as T
    from tl_jit.eager import EagerJITFunction

    @tl_jit.jit
    def eager(A: T.Tensor((64,), "float16"), B: T.Tensor((64,), "float16")) -> None:
        with T.Kernel(1, threads=1):
            for i in T.serial(64):
                B[i] = A[i]

    assert isinstance(eager, EagerJITFunction)
    assert [str(p.name) for p in eager.get_tir().params] == ["A", "B"]
