"""The fast paths' call cost on this tree against an earlier commit, runs interleaved.

Run: .venv/bin/python benchmarks/dispatch_ab.py BASELINE_COMMIT [--rounds N]

Two trees cannot share one process (one ``tl_runtime`` per interpreter), so the
baseline is exported (``git archive``) to a temporary directory and `dispatch.py`'s
``array_dispatch`` section (numpy and torch, each adapter, with and without ``out_idx``)
runs from each tree in turn, ``--rounds`` times (the baseline's packages first on
``PYTHONPATH``; its Cython launcher is built from its own source). Printed: per call,
the best over the rounds of each tree's best-of-7 figure, their ratio, and the medians.
On a loaded host read only the best figures, and only differences beyond 10-20%.
``--section copied_inputs`` (or another ``dispatch.py`` section printing ``us/call``
lines) runs that section of THIS tree's ``dispatch.py`` against each tree's packages
instead, for sections the baseline's ``dispatch.py`` may lack.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"\s+(.+?)\s+([\d.]+) us/call")


def run_array_dispatch(
    tree: Path, pythonpath: str | None, section: str = "array_dispatch"
) -> dict[str, float]:
    """One ``section()`` run from ``tree``'s benchmarks; microseconds per call."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run(
        [sys.executable, "-c", f"import dispatch; dispatch.{section}()"],
        cwd=tree / "benchmarks",
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {m.group(1).strip(): float(m.group(2)) for m in map(LINE.match, out.splitlines()) if m}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("baseline", help="the commit to compare against")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--section",
        default="array_dispatch",
        help="the dispatch.py section to time (other than array_dispatch: this tree's)",
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tl-dispatch-ab-") as tmp:
        base = Path(tmp)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", options.baseline],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        base_path = os.pathsep.join(str(p) for p in sorted((base / "packages").glob("*/src")))
        runs: dict[str, dict[str, list[float]]] = {"baseline": {}, "this tree": {}}
        for _ in range(options.rounds):
            for tree, (where, path) in {
                "baseline": (base, base_path),
                "this tree": (ROOT, None),
            }.items():
                if options.section != "array_dispatch":
                    where = ROOT  # this tree's section, each tree's packages
                for name, us in run_array_dispatch(where, path, options.section).items():
                    runs[tree].setdefault(name, []).append(us)
    print(f"{options.section}, {options.baseline} against this tree, {options.rounds} rounds each")
    print(f"  {'call':28s} {'baseline':>9s} {'this':>9s} {'ratio':>6s}   medians")
    for name, before in runs["baseline"].items():
        after = runs["this tree"].get(name)
        if not after:
            continue
        b, a = min(before), min(after)
        mb, ma = sorted(before)[len(before) // 2], sorted(after)[len(after) // 2]
        print(f"  {name:28s} {b:8.3f}u {a:8.3f}u {a / b:6.2f}   {mb:.3f} / {ma:.3f}")


if __name__ == "__main__":
    main()
