"""Tier 2 names of the kernel language on 'hip': the GPU language of `tl_ir.language.gpu`.

Every name is that module's (also ``T.<name>`` of `tl_ir.language`); its ``__all__``
is the one list of them, so a name added there appears here too.
"""

from __future__ import annotations

from tl_ir.language import gpu as _gpu
from tl_ir.language.gpu import *  # noqa: F403  (re-exports exactly gpu.__all__)

__all__ = list(_gpu.__all__)
