"""TileLang's DeepSeek-V3.2 top-k selector (examples/deepseek_v32, eager style): a radix
select per row in one 1024-thread block, whose threads claim output slots with
``T.atomic_add(..., return_prev=True)``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case

_SIZES = ("batch", "seq_len")


class _TopkSelectorCase(Case):
    """The kernel is specialized on ``topk`` only (``batch`` and ``seq_len`` are
    ``T.dynamic``: they shape the inputs). Each row's indices come out in the order the
    threads' atomics handed out the slots, so they are compared as sorted rows."""

    def build(self, **overrides: Any) -> tuple[Any, list[int] | None]:
        args = {k: v for k, v in {**self.args, **overrides}.items() if k not in _SIZES}
        return self.function().get_prim_func(**args), None

    def canonical(self, outputs: Sequence[Any]) -> Arrays:
        return [np.sort(np.asarray(o), axis=-1) for o in outputs]


def _selector_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    batch, seq_len, topk = a["batch"], a["seq_len"], a["topk"]
    # Distinct values (no ties: the top-k set is unique), both signs, close enough that
    # the first 8-bit pass leaves a crowded threshold bucket for the tail passes.
    values = rng.permutation(batch * seq_len).reshape(batch, seq_len)
    x = (values / (batch * seq_len) - 0.5).astype(np.float32)
    starts = rng.integers(0, seq_len // 4, batch).astype(np.int32)
    ends = (seq_len - rng.integers(0, seq_len // 4, batch)).astype(np.int32)
    assert np.all(ends - starts > topk)
    return [x, np.full((batch, topk), -1, np.int32), starts, ends]


def _selector_ref(a: dict[str, Any], x: Any, _index: Any, starts: Any, ends: Any) -> Arrays:
    rows = []
    for row, start, end in zip(x, starts, ends, strict=True):
        order = np.argsort(-row[start:end], kind="stable")
        rows.append(order[: a["topk"]] + start)
    return [np.array(rows, np.int32)]


CASES = [
    _TopkSelectorCase(
        "example_topk_selector.tl_topk_impl",
        "examples/deepseek_v32/topk_selector.py@a35008a42",
        "example_topk_selector:tl_topk_impl",
        {"topk": 64, "batch": 3, "seq_len": 2048},
        _selector_inputs,
        _selector_ref,
        inplace=[1],
        atol=0,
        rtol=0,
    ),
]
