"""Running the shared kernel suite (integration_tests/kernels) on a backend: build, call, compare.

The kernel modules follow integration_tests/kernels/README.md (``KERNEL``,
``OUT_IDX``, ``CASES``, ``make_inputs``, ``REFERENCE``, ``TOLERANCE``). The
integration tests and the conformance test in ``contracts/`` use these
helpers so every CPU-capable backend is checked the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from tl_backend_api import BackendContext, build_artifact

#: The byte boundary ``aligned_copy`` places arrays on (a cache line).
ALIGNMENT = 64


def aligned_copy(value: Any) -> Any:
    """A C-contiguous copy of a numpy array starting on a 64-byte boundary.

    Not needed to call a kernel: tl-ir kernels declare element alignment, so
    tl-runtime passes ordinary numpy arrays as they are (in-place updates
    included). Use it only to compare against cache-line-aligned placement,
    e.g. the ``--aligned-inputs`` option of the CPU benchmarks.

    Args:
        value: Any value; only ``numpy.ndarray`` instances are copied.

    Returns:
        The aligned copy (same dtype, shape and contents) for an array,
        ``value`` itself for anything else.
    """
    if not isinstance(value, np.ndarray):
        return value
    raw = np.empty(value.nbytes + ALIGNMENT, dtype=np.uint8)
    offset = (-raw.ctypes.data) % ALIGNMENT
    out = raw[offset : offset + value.nbytes].view(value.dtype).reshape(value.shape)
    out[...] = value
    return out


def build_key(module_name: str, case: Mapping[str, Any], target_kind: str) -> str:
    """A stable name for the artifact of ``case``'s compile-time arguments on a target kind."""
    args = json.dumps(case["args"], sort_keys=True, default=str)
    safe = "".join(c if c.isalnum() else "_" for c in args)
    return f"{module_name}-{target_kind}-{safe}"[:200]


def build_case(
    context: BackendContext, module: ModuleType, case: Mapping[str, Any], directory: Path
) -> Path:
    """Compile ``module.KERNEL(**case["args"])`` into an artifact at ``directory``."""
    func = module.KERNEL(**case["args"])
    return build_artifact(context, func, directory, out_idx=list(module.OUT_IDX))


def run_case(
    artifact: Path,
    module: ModuleType,
    case: Mapping[str, Any],
    adapter: str,
    *,
    seed: int = 0,
    place_input: Callable[[Any], Any] | None = None,
) -> list[str]:
    """Call the artifact on the case's inputs through ``adapter`` and compare with ``REFERENCE``.

    The inputs are the arrays ``module.make_inputs`` returns, passed as they
    are (ordinary numpy arrays, as users pass them); arguments the kernel
    updates in place are read back from those same arrays.

    Args:
        artifact: The artifact directory to load with ``tl_runtime.load``.
        module: The kernel module (``OUT_IDX``, ``make_inputs``, ``REFERENCE``,
            ``TOLERANCE``).
        case: One entry of ``module.CASES``.
        adapter: The tl-runtime adapter name (``"tvm_ffi"``, ``"cython"``, ...).
        seed: Seed of the random generator handed to ``make_inputs``.
        place_input: Applied to each input before the call (e.g. to place the
            arrays at a chosen address offset); ``None`` passes them unchanged.

    Returns:
        One line per parameter that differs from the reference (empty: all match).
    """
    import tl_runtime

    kernel = tl_runtime.load(artifact, adapter=adapter)
    inputs = list(module.make_inputs(dict(case), np.random.default_rng(seed)))
    if place_input is not None:
        inputs = [place_input(x) for x in inputs]
    expected = module.REFERENCE(
        dict(case), *[x.copy() if isinstance(x, np.ndarray) else x for x in inputs]
    )
    result = kernel(*inputs)
    names = [p.name for p in kernel.params]
    out_idx = [i % len(names) for i in module.OUT_IDX]
    if not out_idx:
        outputs: list[Any] = []
    elif len(out_idx) == 1:
        outputs = [result]
    else:
        outputs = list(result)
    got: dict[str, Any] = dict(zip((names[i] for i in out_idx), outputs, strict=True))
    remaining = iter(inputs)
    for position, name in enumerate(names):
        if position not in out_idx:
            value = next(remaining)
            got.setdefault(name, value)
    problems = []
    for name, reference in expected.items():
        reference = np.asarray(reference)
        actual = np.asarray(got[name])
        tolerance = float(module.TOLERANCE.get(str(reference.dtype), 1e-5))
        if actual.shape != reference.shape:
            problems.append(f"{name}: shape {actual.shape}, expected {reference.shape}")
            continue
        a64, r64 = actual.astype(np.float64), reference.astype(np.float64)
        if not np.allclose(a64, r64, atol=tolerance, rtol=tolerance, equal_nan=True):
            worst = float(np.max(np.abs(a64 - r64))) if a64.size else 0.0
            problems.append(f"{name}: max abs difference {worst} > tolerance {tolerance}")
    return problems
