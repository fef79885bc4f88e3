"""Tier 2 names of the kernel language on 'cuda' (see `tl_backend_api.gpu_language`).

Every GPU tier-2 name is shared with `tl_backend_api.gpu_language`; its ``__all__``
is the one list of them, so a name added there appears here too.
"""

from __future__ import annotations

from tl_backend_api import gpu_language as _gpu_language
from tl_backend_api.gpu_language import *  # noqa: F403  (re-exports exactly gpu_language.__all__)

__all__ = list(_gpu_language.__all__)
