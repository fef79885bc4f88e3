"""``tvm.tirx.PrimExpr`` resolves in a helper's annotation before any ``T.`` name is used."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


@pytest.mark.parametrize("tvm_first", [False, True])
def test_tirx_primexpr_resolves_at_import_time(tvm_first: bool) -> None:
    program = textwrap.dedent(
        f"""
        {"from tvm import tirx" if tvm_first else ""}
        import tl_jit as tilelang
        import tl_jit.language as T
        from tvm import tirx

        def helper(x: tirx.PrimExpr) -> tirx.PrimExpr:
            return x

        assert isinstance(tirx.Var("n", "int32"), tirx.PrimExpr)
        assert not isinstance(3, tirx.PrimExpr)
        assert T.PrimExpr is tirx.PrimExpr
        try:
            tirx.NoSuchName
        except AttributeError as error:
            assert "NoSuchName" in str(error)
        else:
            raise SystemExit("a missing name resolved")
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"
