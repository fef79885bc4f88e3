"""A real tile GEMM (``T.gemm`` on the ``c`` target, small sizes) for autotuning tests
that run on workers (local processes, Ray), and a timer that replays recorded times and
misbehaves on request (kills or crashes the process timing a configuration)."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import tl_jit
import tl_jit.language as T
from tl_jit.tune_timing import Measurement, RecordedTimings, config_text


@tl_jit.jit(out_idx=[-1], target="c")
def matmul(M: int, N: int, K: int, block_M: int = 16, block_N: int = 16, block_K: int = 16) -> Any:
    """``C = A @ B`` in float32, tiled by ``block_M x block_N`` with ``block_K`` steps."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float32"),
        B: T.Tensor((K, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=1) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float32")
            B_shared = T.alloc_shared((block_K, block_N), "float32")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=1):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def reference(a: Any, b: Any) -> Any:
    """What `matmul` computes."""
    return a @ b


@dataclass(frozen=True)
class FaultyTimings:
    """A timer: `RecordedTimings`, except that timing a configuration listed in ``kill``
    ends its process (``os._exit(3)``: a worker killed mid-search) and one listed in
    ``segfault`` crashes it (SIGSEGV)."""

    recorded: RecordedTimings
    kill: tuple[str, ...] = ()
    segfault: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        times: Sequence[tuple[Mapping[str, Any], float]],
        *,
        kill: Sequence[Mapping[str, Any]] = (),
        segfault: Sequence[Mapping[str, Any]] = (),
    ) -> FaultyTimings:
        """Recorded ``times``; configurations in ``kill``/``segfault`` misbehave."""
        return cls(
            RecordedTimings.of(times),
            tuple(config_text(c) for c in kill),
            tuple(config_text(c) for c in segfault),
        )

    def __call__(self, measurement: Measurement) -> float:
        text = config_text(measurement.config)
        if text in self.kill:
            os._exit(3)
        if text in self.segfault:
            ctypes.string_at(0)
        return self.recorded(measurement)
