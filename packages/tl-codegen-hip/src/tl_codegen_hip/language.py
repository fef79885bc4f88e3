"""Language extensions only the 'rocm' target has (``T.*`` functions); none yet."""

from __future__ import annotations

__all__: list[str] = []
