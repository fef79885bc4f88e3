"""torch is optional: tl_jit compiles, caches and runs kernels in a process where torch
cannot be imported, on every CPU adapter (tl-runtime alone: test_runtime_only.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import json, sys
    sys.modules["torch"] = None  # `import torch` now fails as it does where torch is absent
    import numpy as np
    import tl_jit
    import tl_jit.language as T

    @tl_jit.jit(out_idx=[-1], target="c")
    def scale(N, block=64):
        @T.prim_func
        def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
                for i in T.Parallel(block):
                    B[bx * block + i] = A[bx * block + i] * 3.0
        return main

    a = np.arange(1024, dtype=np.float32)
    report = {}
    for backend in ("auto", "cython", "tvm_ffi"):
        kernel = scale.compile((1024,), execution_backend=backend)
        report[backend] = bool(np.array_equal(kernel(a), a * 3))
    report["torch_loaded"] = sys.modules.get("torch") is not None
    print(json.dumps(report))
    """
)


def test_tl_jit_runs_where_torch_cannot_be_imported(tmp_path: Path) -> None:
    env = {**os.environ, "TL_CACHE_DIR": str(tmp_path / "cache")}
    script = tmp_path / "no_torch.py"  # a file: kernels are parsed from their source
    script.write_text(SCRIPT)
    for _ in range(2):  # a compile, then a fresh process that hits the disk cache
        proc = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        assert report == {"auto": True, "cython": True, "tvm_ffi": True, "torch_loaded": False}
