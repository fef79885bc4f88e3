"""Language extensions only the 'metal' target has (``T.*`` functions); none yet."""

from __future__ import annotations

__all__: list[str] = []
