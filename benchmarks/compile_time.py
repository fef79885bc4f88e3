"""Cold compile time of the GEMM kernel of docs/language.md (fp32 1024^3) for targets c and llvm.

Usage: .venv/bin/python benchmarks/compile_time.py [--repeats 3] [--block 128x128x64]

Each measurement runs in a fresh Python process with a new output
directory: it imports the compiler (timed apart: ``import tvm`` alone takes
most of a second), writes the kernel with ``tl_ir.language`` (parse), then
runs ``tl_backend_api.build_artifact`` (the CPU pipeline's passes, TVM code
generation, gcc or LLVM and the link, the artifact written). Target: at most
0.5 s per target, import excluded.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, sys, tempfile, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[3])
import tvm
from tl_backend_api import build_artifact, create_backend_context
from gemm_cpu import matmul
t1 = time.perf_counter()
bm, bn, bk = (int(x) for x in sys.argv[2].split("x"))
func = matmul(1024, 1024, 1024, bm, bn, bk)
t2 = time.perf_counter()
context = create_backend_context(sys.argv[1])
build_artifact(context, func, tempfile.mkdtemp() + "/artifact", out_idx=[-1])
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "parse": t2 - t1, "build": t3 - t2}))
"""


def main() -> None:
    """Run the fresh-process measurements and print the best of each target."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--block", default="128x128x64")
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parent)
    for kind in ("c", "llvm"):
        runs = []
        for _ in range(args.repeats):
            completed = subprocess.run(
                [sys.executable, "-c", _CHILD, kind, args.block, here],
                capture_output=True,
                text=True,
                check=False,
            )
            if completed.returncode != 0:
                raise SystemExit(f"{kind}: the build failed:\n{completed.stderr}")
            runs.append(json.loads(completed.stdout.strip().splitlines()[-1]))
        best = min(runs, key=lambda r: r["parse"] + r["build"])
        total = best["parse"] + best["build"]
        verdict = "ok" if total <= 0.5 else "OVER TARGET (0.5 s)"
        print(
            f"{kind:5s} cold compile {total * 1e3:6.0f} ms (parse {best['parse'] * 1e3:.0f} ms "
            f"+ lower/codegen/compile/link/write {best['build'] * 1e3:.0f} ms; "
            f"import {best['import'] * 1e3:.0f} ms not counted) {verdict}"
        )


if __name__ == "__main__":
    main()
