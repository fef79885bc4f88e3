"""TVM IR objects copy as themselves and refuse pickling with a TypeError: tvm 0.27's own
serialization crashed the interpreter (a segmentation fault) for every IR node, so
``pickle.dumps(T.symbolic("m"))``, ``copy.deepcopy`` of a kernel or an autotune worker
pool ended the process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def test_ir_nodes_copy_as_themselves_and_refuse_pickling(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import copy, pickle
        import tl_ir.language as T

        m = T.symbolic("m")

        @T.prim_func
        def kernel(A: T.Tensor((m,), "float32")):
            with T.Kernel(1, threads=1):
                A[0] = 1.0

        for value in (m, m + 1, kernel, kernel.body):
            assert copy.copy(value) is value and copy.deepcopy(value) is value
            try:
                pickle.dumps(value)
            except TypeError as exc:
                assert "cannot pickle a TVM object" in str(exc), exc
            else:
                raise AssertionError("pickled")
        assert copy.deepcopy({"dims": [m]})["dims"][0] is m
        import tvm, tvm_ffi

        for holder in (tvm_ffi.convert([m]), tvm_ffi.convert({"m": m + 1})):
            try:
                pickle.dumps(holder)
            except TypeError as exc:
                assert "tvm.ir.expr.Var" in str(exc) or "Add" in str(exc), exc
            else:
                raise AssertionError("pickled a container of IR")
        # What serializes keeps doing so.
        assert str(pickle.loads(pickle.dumps(tvm.target.Target("c"))).kind) == "c"
        assert list(pickle.loads(pickle.dumps(tvm_ffi.convert([1, 2])))) == [1, 2]
        print("ok")
        """
    )
    script = tmp_path / "copies.py"  # a kernel's source must be in a file
    script.write_text(code)
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert result.stdout.strip() == "ok"
