"""Cold compile time of the fp32 tile GEMM (1024^3, block 128x128x128) for targets c and llvm.

Usage: .venv/bin/python benchmarks/compile_time_cpu.py [--repeats 3]

Each measurement runs in a fresh Python process (nothing cached in memory,
a new output directory): it imports the compiler (timed apart), builds the
kernel's TIR with the GEMM micro-kernel, and builds the shared object with
tl_codegen_cpu's toolchain (TVM lowering + codegen + gcc or LLVM + link).
Target: at most 0.5 s per target for the compile, import excluded.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import tvm
from tl_codegen_cpu import build
from tl_passes.reference_kernels import tile_gemm_module
t1 = time.perf_counter()
style = "c-vector-extension" if sys.argv[1] == "c" else "tir"
mod = tile_gemm_module(1024, 1024, 1024, 128, 128, 128, style=style)
t2 = time.perf_counter()
result = build(mod, sys.argv[1], sys.argv[2], name="gemm")
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "ir": t2 - t1, "build": t3 - t2,
                  "toolchain": result.toolchain_version}))
"""


def main() -> None:
    """Run the fresh-process measurements and print the best of each target."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for kind in ("c", "llvm"):
        runs = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as out:
                completed = subprocess.run(
                    [sys.executable, "-c", _CHILD, kind, out],
                    capture_output=True,
                    text=True,
                    check=False,
                )
            if completed.returncode != 0:
                raise SystemExit(f"{kind}: the build failed:\n{completed.stderr}")
            runs.append(json.loads(completed.stdout.strip().splitlines()[-1]))
        best = min(runs, key=lambda r: r["ir"] + r["build"])
        compile_seconds = best["ir"] + best["build"]
        verdict = "ok" if compile_seconds <= 0.5 else "OVER TARGET"
        print(
            f"{kind:5s} cold compile {compile_seconds * 1e3:6.0f} ms "
            f"(TIR {best['ir'] * 1e3:.0f} ms + build {best['build'] * 1e3:.0f} ms; "
            f"import {best['import'] * 1e3:.0f} ms not counted) "
            f"best of {args.repeats} [{verdict}; target <= 500 ms]  {best['toolchain']}"
        )


if __name__ == "__main__":
    main()
