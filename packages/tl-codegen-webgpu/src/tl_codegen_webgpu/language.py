"""Language extensions only the 'webgpu' target has (``T.*`` functions); none yet."""

from __future__ import annotations

__all__: list[str] = []
