"""A local tile indexed only by values read from memory keeps every element on the
CUDA lowering too: TVM's buffer compaction (in the GPU build's ``s_tir`` pipeline)
took ``tmp[j]`` for one element: the build failed on a local index ("Buffer j is used
before its definition") and with the index in a tensor every write landed on one slot.
The CPU targets' test is integration_tests/test_cpu_raw_error_programs.py."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T

pytestmark = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


def _indexed_through_memory(index_in_tensor: bool) -> Any:
    @T.prim_func
    def indexed(out: T.Tensor((1,), "float32"), index: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=1):
            tmp = T.alloc_local((4,), "float32")
            s = T.alloc_var("float32")
            j = T.alloc_var("int32")
            s = 0.0
            for q in T.serial(4):
                if index_in_tensor:
                    index[0] = q
                    tmp[index[0]] = q + 1.0
                else:
                    j = q
                    tmp[j] = q + 1.0
            for q in T.serial(4):
                if index_in_tensor:
                    index[0] = q
                    s += tmp[index[0]]
                else:
                    j = q
                    s += tmp[j]
            out[0] = s

    return indexed


@pytest.mark.parametrize("index_in_tensor", [False, True], ids=["local-index", "tensor-index"])
def test_memory_indexed_local_tile_under_emulation(index_in_tensor: bool) -> None:
    arrays = {"out": np.zeros(1, np.float32), "index": np.zeros(1, np.int32)}
    emu.emulate(_indexed_through_memory(index_in_tensor), arrays)
    assert arrays["out"].tolist() == [10.0]
