"""Child process of test_stack_budget: load a row-scan artifact, call it, report one line.

Usage: python stack_budget_child.py ARTIFACT_DIR [--small-stack-thread BYTES]

Prints ``ok`` when the result matches numpy, ``refused <ExceptionType>: <message>`` when
loading or calling raised; a crash shows as the process's signal exit status instead.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

import tl_runtime


def main() -> None:
    """Load the artifact, run it (on a small-stack thread when asked) and print the outcome."""
    directory = sys.argv[1]
    small_stack = int(sys.argv[3]) if sys.argv[2:3] == ["--small-stack-thread"] else 0
    outcome: list[str] = []

    def run() -> None:
        try:
            kernel = tl_runtime.load(directory)
            rows, cols = (p.shape for p in kernel.params[:1]).__next__()
            a = np.random.default_rng(0).integers(0, 4, (rows, cols)).astype(np.float32)
            c = kernel(a)
            np.testing.assert_allclose(c, np.cumsum(a, axis=1))
            outcome.append("ok")
        except tl_runtime.StackBudgetError as exc:
            outcome.append(f"refused {type(exc).__name__}: {exc}")

    if small_stack:
        threading.stack_size(small_stack)
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
    else:
        run()
    print(outcome[0] if outcome else "no outcome")


if __name__ == "__main__":
    main()
