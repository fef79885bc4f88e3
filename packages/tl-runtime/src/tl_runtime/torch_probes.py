"""One place in torch's memory, found once per process by a probe and checked by behaviour.

`tl_runtime.torch_negative_bit` and `tl_runtime.torch_version_count` each find where a torch
tensor keeps one fact (its negative bit, its version count) so the launcher can read or move
it without a call into torch. This is what the two share: which tensor types the place holds
for, and running the probe once, under the caller's modes switched off, with a few more tries
where it raised.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["ProbedLayout", "answers_as_torch"]

Layout = TypeVar("Layout")

PROBE_TRIES = 3
"""How many probes that raised are tried again before giving up for the process."""


def answers_as_torch(torch: Any, kind: type) -> bool:
    """Whether ``kind``'s instances behave as torch's own tensors: no ``is_neg`` of its own,
    no ``__torch_function__`` other than torch's (a type answering for itself is asked)."""
    if inspect.getattr_static(kind, "is_neg", None) is not vars(torch._C.TensorBase).get("is_neg"):
        return False
    hook = inspect.getattr_static(kind, "__torch_function__", None)
    plain_hooks = (
        vars(torch.Tensor).get("__torch_function__"),
        getattr(torch._C, "_disabled_torch_function_impl", None),
    )
    return hook is not None and any(hook is plain for plain in plain_hooks)


class ProbedLayout(Generic[Layout]):
    """The layout ``probe(torch)`` finds (or None), probed at the first `for_type` of a
    torch tensor type and kept for the process.

    A probe that raises (a surprise in torch's private API, or a mode the caller has
    active) gives None for now and is run again at the next call, `PROBE_TRIES` times in
    all. Attributes ``probed``, ``layout`` and ``failed`` are the state (tests set them).
    """

    def __init__(self, probe: Callable[[Any], Layout | None]) -> None:
        self._probe = probe
        self._lock = threading.Lock()
        self.probed = False
        self.layout: Layout | None = None
        self.failed = 0

    def for_type(self, kind: type) -> Layout | None:
        """The layout for instances of ``kind``: ``torch.Tensor`` or a subclass of it that
        `answers_as_torch` (any other type gives None). torch must already be imported (as
        it is once a torch tensor reaches a kernel); nothing is imported here."""
        torch = sys.modules.get("torch")
        if torch is None or not isinstance(kind, type):
            return None
        base = getattr(getattr(torch, "_C", None), "TensorBase", None)
        if not isinstance(base, type) or not issubclass(kind, base):
            return None
        if kind.__basicsize__ < base.__basicsize__ or not answers_as_torch(torch, kind):
            return None
        with self._lock:
            if not self.probed:
                try:
                    with torch.inference_mode(False), torch.enable_grad():
                        self.layout = self._probe(torch)
                    self.probed = True
                except Exception:
                    self.layout = None
                    self.failed += 1
                    self.probed = self.failed >= PROBE_TRIES
            return self.layout
