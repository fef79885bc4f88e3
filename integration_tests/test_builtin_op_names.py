"""Every TVM op name the packages spell resolves in the installed TVM.

A pass that recognises a builtin by a misspelt name (``"tirx.if_then_else"`` where
TVM 0.27 registers ``"prim.if_then_else"``) never matches it, and the check it guards
silently never fires; three CPU passes carried such names. These tests fail on that:
every string literal of the form ``tirx.*`` / ``tir.*`` / ``prim.*`` in a package's
sources must be a registered op or a registered pass-context option, and the op sets
the CPU passes compare against must be registered ops.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import tvm

from tl_ir.builtin_ops import builtin_op_name, builtin_op_names, is_builtin_op

ROOT = Path(__file__).resolve().parents[1]

_TVM_NAME = re.compile(r"(tirx|tir|prim)(\.[A-Za-z0-9_]+)+")  # a name, not a prefix ("tirx.ptx.")

#: Literals that look like TVM names but name neither an op nor a TVM pass option,
#: with why they are right as they are.
NOT_TVM_NAMES: dict[tuple[str, str], str] = {
    ("tl_ir/eager/_macro.py", "tir.macro"): "the dispatch token TileLang's T.macro carries",
    ("tl_jit/pass_configs.py", "tirx.Simplify"): "TileLang's PassConfigKey value, mirrored",
    ("tl_jit/pass_configs.py", "tir.enable_equiv_terms_in_cse_tir"): (
        "TileLang's PassConfigKey value, mirrored"
    ),
}


def _tvm_name_literals() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(ROOT.glob("packages/*/src/**/*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        relative = "/".join(path.relative_to(ROOT).parts[3:])
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _TVM_NAME.fullmatch(node.value)
            ):
                found.append((relative, node.lineno, node.value))
    return found


def test_every_tvm_name_literal_is_a_registered_op_or_option() -> None:
    ops = {str(name) for name in tvm.ir.Op.list_op_names()}
    options = set(tvm.transform.PassContext.list_configs())
    literals = _tvm_name_literals()
    assert any(value == "tirx.call_extern" for _, _, value in literals)  # the scan sees them
    unknown = [
        f"{path}:{line}: {value!r}"
        for path, line, value in literals
        if value not in ops and value not in options and (path, value) not in NOT_TVM_NAMES
    ]
    assert not unknown, "names TVM does not register (misspelt op names?): " + "; ".join(unknown)


def test_exemptions_are_still_used() -> None:
    literals = {(path, value) for path, _, value in _tvm_name_literals()}
    assert set(NOT_TVM_NAMES) <= literals


def test_the_op_sets_cpu_passes_compare_against_are_registered() -> None:
    from tl_codegen_cpu.lowering import atomic_ownership, thread_lanes
    from tl_codegen_cpu.passes import (
        eager_selects,
        legalize_half_precision,
        lower_parallel_loops,
        mark_independent_loops,
        reject_gpu_ops,
    )

    sets = [
        mark_independent_loops.PURE_CALLS,
        eager_selects.IF_THEN_ELSE_OPS,
        lower_parallel_loops.SCALAR_ONLY_CALLS,
        legalize_half_precision._KEPT_CALLS,
        atomic_ownership._ESCAPING_CALLS,
        thread_lanes._PURE_CALLS,
        frozenset(reject_gpu_ops.GPU_ONLY_BUILTINS),
    ]
    for names in sets:
        for name in names:
            assert tvm.ir.Op.get(name).name == name
    assert "prim.if_then_else" in mark_independent_loops.PURE_CALLS


def test_builtin_op_name_resolves_either_namespace() -> None:
    assert builtin_op_name("if_then_else") == "prim.if_then_else"
    assert builtin_op_name("exp") == "tirx.exp"
    assert builtin_op_name("tirx.exp") == "tirx.exp"
    assert builtin_op_names("ceil", "fabs") == {"prim.ceil", "tirx.fabs"}


@pytest.mark.parametrize("name", ["if_then_els", "tirx.if_then_else", "bitwise_and"])
def test_builtin_op_name_refuses_unregistered_names(name: str) -> None:
    with pytest.raises(LookupError, match="short_name"):
        builtin_op_name(name)


def test_is_builtin_op() -> None:
    assert is_builtin_op(tvm.ir.Op.get("prim.if_then_else"))
    assert is_builtin_op(tvm.ir.Op.get("tirx.exp"))
    assert not is_builtin_op("tirx.exp")
