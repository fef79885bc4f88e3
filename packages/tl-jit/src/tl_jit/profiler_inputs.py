"""The inputs a `tl_jit.profiler.Profiler` generates: checked ``dims`` and ``seed``,
random arrays of every dtype, scalar values, the declared alignment, and the memory
there is to hold them."""

from __future__ import annotations

import contextlib
import importlib
import numbers
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tl_jit.tensor_supply import TensorSupplyType, supplied_values
from tl_jit.timing import torch_accelerator

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "aligned",
    "available_memory",
    "checked_dims",
    "checked_seed",
    "kernel_dims",
    "random_array",
    "scalar_input",
    "symbolic_dims",
]


def checked_seed(seed: object) -> int | None:
    """``seed`` as a non-negative Python int, or None (fresh randomness on every draw).

    Raises:
        ValueError: ``seed`` is neither None nor an exact non-negative integer (a
            string, a float, a bool, a negative number); the message says what came.
    """
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(
            f"seed: expected a non-negative int or None, got {type(seed).__name__} {seed!r:.80}"
        )
    return int(seed)


def checked_dims(dims: Mapping[str, Any] | None) -> dict[str, int]:
    """``dims`` as ``{name: size}`` with every size a non-negative Python int.

    Raises:
        TypeError: ``dims`` is not a mapping of str names.
        ValueError: a size is not an exact non-negative integer (a float, a bool, a
            string); the message names the dim and what came.
    """
    if dims is None:
        return {}
    if not isinstance(dims, Mapping):
        raise TypeError(f"dims: expected a mapping of dim names to sizes, got {dims!r:.200}")
    checked: dict[str, int] = {}
    for name, size in dims.items():
        if not isinstance(name, str):
            raise TypeError(f"dims: expected str dim names, got {name!r:.80}")
        if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
            raise ValueError(
                f"dims[{name!r}]: expected a non-negative integer size, got "
                f"{type(size).__name__} {size!r:.80}"
            )
        checked[name] = int(size)
    return checked


def symbolic_dims(kernel: Any) -> set[str]:
    """The names of the symbolic dims of ``kernel``'s parameters."""
    return {
        dim
        for param in kernel.params
        for dim in (getattr(param, "shape", None) or ())
        if isinstance(dim, str)
    }


def kernel_dims(kernel: Any, dims: dict[str, int]) -> dict[str, int]:
    """``dims`` (checked by `checked_dims`), refused when one names no symbolic dim of
    ``kernel``'s parameters (it was ignored; ``tl bench --dim`` refuses the same).

    Raises:
        ValueError: names the dim, the kernel and its symbolic dims.
    """
    symbolic = symbolic_dims(kernel)
    unused = sorted(set(dims) - symbolic)
    if unused:
        raise ValueError(
            f"dims[{unused[0]!r}]: kernel {kernel.name!r} has no symbolic dim "
            f"{unused[0]!r} (its symbolic dims: {sorted(symbolic)}); it would be ignored"
        )
    return dims


def _numpy_dtype(dtype: str) -> Any:
    """numpy's dtype for ``dtype``: ml_dtypes' for float8 (numpy has no such name)."""
    import numpy as np

    if dtype.startswith("float8"):
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, dtype))
    return np.dtype(dtype)


def random_array(
    shape: Sequence[int],
    dtype: str,
    rng: np.random.Generator,
    *,
    like: str = "numpy",
    device: Any = "auto",
    supply: TensorSupplyType | None = None,
) -> Any:
    """A random array: standard normal for floats, small ints (-4..4, 0..8 unsigned), bools.
    bfloat16 and float8 numpy arrays are ml_dtypes'.

    ``like="torch"`` gives a torch tensor on ``device``: a torch device, None
    (host memory) or ``"auto"`` (torch's accelerator when it has one). ``supply`` (a
    `tl_jit.TensorSupplyType`) draws TileLang's values of that kind instead.
    """
    import numpy as np

    # Drawn in the narrowest type that holds the values (int8, float32), then cast: an
    # input of N elements costs N of its own elements plus N of the draw, never 8N bytes.
    data: Any
    if supply is not None:
        data = supplied_values(supply, shape, dtype, rng)
        if dtype == "bfloat16":
            data = data.astype(np.float32, copy=False)
            if like != "torch":
                import ml_dtypes

                data = data.astype(ml_dtypes.bfloat16)
        else:
            data = data.astype(_numpy_dtype(dtype), copy=False)
    elif dtype == "bool":
        data = rng.integers(0, 2, size=shape, dtype=np.uint8).astype(np.bool_)
    elif dtype.startswith("uint"):
        data = rng.integers(0, 9, size=shape, dtype=np.uint8).astype(dtype, copy=False)
    elif dtype.startswith("int"):
        data = rng.integers(-4, 5, size=shape, dtype=np.int8).astype(dtype, copy=False)
    elif dtype == "bfloat16":
        data = rng.standard_normal(size=shape, dtype=np.float32)
        if like != "torch":  # numpy's bfloat16 is ml_dtypes' (a tl-runtime dependency)
            import ml_dtypes

            data = data.astype(ml_dtypes.bfloat16)
    else:
        stored = _numpy_dtype(dtype)
        draw = np.float64 if stored.itemsize > 4 else np.float32
        data = rng.standard_normal(size=shape, dtype=draw).astype(stored, copy=False)
    if like == "torch":
        torch: Any = importlib.import_module("torch")

        # torch reads no ml_dtypes array (bfloat16, float8): through float32.
        narrow = dtype == "bfloat16" or dtype.startswith("float8")
        source = data.astype(np.float32) if narrow and data.dtype != np.float32 else data
        tensor = torch.from_numpy(np.ascontiguousarray(source))
        if narrow:
            tensor = tensor.to(getattr(torch, dtype))
        target = torch_accelerator() if isinstance(device, str) and device == "auto" else device
        return tensor if target is None else tensor.to(target)
    return data


def scalar_input(dtype: str) -> float | bool | int:
    """The value `Profiler.make_inputs` gives a scalar parameter of ``dtype``."""
    if dtype == "bool":
        return True
    return 1.0 if "float" in dtype else 1


def aligned(array: np.ndarray[Any, Any], alignment: int) -> np.ndarray[Any, Any]:
    """``array`` itself when its data lies at a multiple of ``alignment`` bytes, else an
    aligned copy: a parameter's declared alignment, which the runtime would otherwise meet
    by copying a read input on every timed call, and cannot meet for a written one."""
    import numpy as np

    if not array.size or array.ctypes.data % alignment == 0:
        return array
    raw = np.empty(array.nbytes + alignment, dtype=np.uint8)
    offset = (-raw.ctypes.data) % alignment
    copy: np.ndarray[Any, Any] = raw[offset : offset + array.nbytes].view(array.dtype)
    copy = copy.reshape(array.shape)
    copy[...] = array
    return copy


def available_memory() -> int | None:
    """Bytes of memory this process may still allocate, or None where unknown.

    The smaller of the machine's available memory (``MemAvailable`` of
    ``/proc/meminfo``, else ``SC_AVPHYS_PAGES * SC_PAGE_SIZE``) and what the cgroup's
    limit leaves (``memory.max - memory.current``, cgroup v2).
    """
    found: list[int] = []
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
                break
    if not found:
        with contextlib.suppress(AttributeError, OSError, ValueError):
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    with contextlib.suppress(OSError, ValueError):
        with open("/sys/fs/cgroup/memory.max") as handle:
            limit = handle.read().strip()
        if limit != "max":
            with open("/sys/fs/cgroup/memory.current") as handle:
                found.append(max(0, int(limit) - int(handle.read().strip())))
    positive = [n for n in found if n >= 0]
    return min(positive) if positive else None
