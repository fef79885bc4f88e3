"""``out_idx``: which kernel parameters the runtime allocates and returns.

One normalizer for the whole stack: ``tl_jit`` checks the option when a kernel
is decorated (no tvm needed, so it lives here at the bottom), and
``tl_backend_api.build_artifact`` resolves it against the kernel's parameters.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any


def normalize_out_idx(out_idx: int | Sequence[int] | None, count: int | None) -> tuple[int, ...]:
    """``out_idx`` as sorted-as-given non-negative indices into ``count`` parameters.

    With ``count=None`` (the kernel is not known yet, as in ``@jit(out_idx=...)``)
    only the types are checked and negative indices are kept as given.

    Raises:
        TypeError: not an int, a sequence of ints or None.
        ValueError: an index out of range or repeated.
    """
    if out_idx is None:
        return ()
    single = isinstance(out_idx, numbers.Integral) and not isinstance(out_idx, bool)
    items: Any = [out_idx] if single else out_idx
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise TypeError(f"out_idx: expected an int, a sequence of ints or None, got {out_idx!r}")
    result: list[int] = []
    for item in items:
        # numpy integers count as the ints they are (np.int64(-1) from an array)
        if isinstance(item, bool) or not isinstance(item, numbers.Integral):
            raise TypeError(f"out_idx: expected ints, got {item!r} in {out_idx!r}")
        index = int(item)
        if count is None:
            result.append(index)
            continue
        if not -count <= index < count:
            raise ValueError(
                f"out_idx: expected indices in [{-count}, {count}) for a kernel with {count} "
                f"parameters, got {index}"
            )
        normalized = index % count
        if normalized in result:
            raise ValueError(f"out_idx: parameter {normalized} appears twice in {out_idx!r}")
        result.append(normalized)
    return tuple(result)
