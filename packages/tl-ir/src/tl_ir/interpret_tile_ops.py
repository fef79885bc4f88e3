"""The reference interpreter's tile ops (`tl_ir.interpret`): ``T.copy``, ``T.fill``,
``T.gemm``, reductions, scans, atomics and ``T.print`` on numpy tiles, with the CPU
targets' rules (accumulation in the destination's dtype, NaN-ignoring float max/min,
saturating conversions, out-of-bounds elements read as 0 and not written)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tvm

from tl_ir.interpret_scalars import converted
from tl_ir.ops import AtomicOp, CopyOp, CumsumOp, FillOp, GemmOp, PrintOp, ReduceOp, Region

__all__ = ["TileOpInterpreter"]


class TileOpInterpreter:
    """The tile-op half of the interpreter: reads and writes regions of ``arrays`` and
    runs one described tile op (`tile_op`). The statement interpreter provides
    ``value`` (an expression's value) and the thread counts atomics repeat by."""

    arrays: dict[Any, np.ndarray[Any, Any]]
    block_threads: int
    parallel_depth: int

    def value(self, expr: Any) -> Any:
        """The value of the expression ``expr`` (the statement interpreter's)."""
        raise NotImplementedError("TileOpInterpreter.value: provided by the interpreter")

    def _bounds(self, region: Region) -> tuple[list[int], list[int], tuple[int, ...]]:
        mins = [int(self.value(m)) for m in region.mins]
        extents = [int(self.value(e)) for e in region.extents]
        return mins, extents, self.arrays[region.buffer].shape

    def read(self, region: Region) -> np.ndarray[Any, Any]:
        """The tile; out-of-bounds elements read as zero."""
        mins, extents, shape = self._bounds(region)
        array = self.arrays[region.buffer]
        tile = np.zeros(extents, dtype=array.dtype)
        src, dst = _clipped(mins, extents, shape)
        if src is not None and dst is not None:
            tile[dst] = array[src]
        return tile

    def write(self, region: Region, tile: np.ndarray[Any, Any]) -> None:
        """Store the tile; out-of-bounds elements are not written."""
        mins, extents, shape = self._bounds(region)
        tile = np.asarray(tile).reshape(extents)
        src, dst = _clipped(mins, extents, shape)
        if src is not None and dst is not None:
            target = self.arrays[region.buffer]
            target[src] = converted(tile[dst], target.dtype)

    def tile_op(self, op: Any) -> None:
        if isinstance(op, CopyOp):
            self.write(op.dst, self.read(op.src))
        elif isinstance(op, FillOp):
            extents = [int(self.value(e)) for e in op.dst.extents]
            self.write(op.dst, np.full(extents, self.value(op.value)))
        elif isinstance(op, GemmOp):
            self._gemm(op)
        elif isinstance(op, ReduceOp):
            self._reduce(op)
        elif isinstance(op, CumsumOp):
            # Scanned in the destination's dtype, as the targets scan.
            tile = converted(self.read(op.src), self.arrays[op.dst.buffer].dtype)
            if op.kind == "sum":
                scan: Any = np.cumsum
            elif _is_float(tile):  # NaN ignored, from -inf (a leading NaN gives -inf)
                tile = np.fmax(tile, -np.inf)
                scan = np.fmax.accumulate
            else:
                scan = np.maximum.accumulate
            if op.reverse:
                result = np.flip(scan(np.flip(tile, op.dim), axis=op.dim), op.dim)
            else:
                result = scan(tile, axis=op.dim)
            self.write(op.dst, result)
        elif isinstance(op, AtomicOp):
            self._atomic(op)
        elif isinstance(op, PrintOp):
            if isinstance(op.value, tvm.ir.StringImm):  # the message alone
                print(op.msg)
            else:
                region = isinstance(op.value, Region)
                print(op.msg, self.read(op.value) if region else self.value(op.value))
        else:
            raise NotImplementedError(f"interpret: tile op {op}")

    def _gemm(self, op: GemmOp) -> None:
        c = self.read(op.c)
        acc_dtype = c.dtype
        a = self.read(op.a).astype(acc_dtype)
        b = self.read(op.b).astype(acc_dtype)
        a2 = a.reshape(a.shape[-2:])
        b2 = b.reshape(b.shape[-2:])
        if op.transpose_a:
            a2 = a2.T
        if op.transpose_b:
            b2 = b2.T
        product = a2 @ b2
        result = product if op.clear_accum else c.reshape(product.shape) + product
        self.write(op.c, result.astype(acc_dtype))

    def _reduce(self, op: ReduceOp) -> None:
        # Accumulated in the destination's dtype, as the targets accumulate (a float16
        # tile summed into float32 does not overflow at 65504). Float max/min ignore NaN
        # (fmax/fmin, from the identity: a row of NaN gives -inf for max), as on GPUs.
        src = converted(self.read(op.src), self.arrays[op.dst.buffer].dtype)
        if op.kind in ("abssum", "absmax"):
            src = np.abs(src)
        if op.kind in ("sum", "abssum"):
            fold: Any = np.add
            result = np.sum(src, axis=op.dim)
        else:
            larger = op.kind in ("max", "absmax")
            if _is_float(src):
                fold = np.fmax if larger else np.fmin
                identity = 0.0 if op.kind == "absmax" else -np.inf if larger else np.inf
                result = fold.reduce(src, axis=op.dim, initial=identity)
            else:
                fold = np.maximum if larger else np.minimum
                # absmax starts from 0 on every target; abs(INT_MIN) wraps to INT_MIN
                initial = {"initial": 0} if op.kind == "absmax" else {}
                result = fold.reduce(src, axis=op.dim, **initial)
        if not op.clear:
            old = self.read(op.dst).reshape(result.shape)
            result = fold(old, result)
        self.write(op.dst, result)

    def _atomic(self, op: AtomicOp) -> None:
        scalar = not isinstance(op.value, Region)
        repeats = self.block_threads if scalar and self.parallel_depth == 0 else 1
        for _ in range(repeats):
            self._atomic_once(op)

    def _atomic_once(self, op: AtomicOp) -> None:
        old = self.read(op.dst)
        value: Any = (
            self.read(op.value).reshape(old.shape)
            if isinstance(op.value, Region)
            else self.value(op.value)
        )
        new: Any
        if op.kind == "add":
            new = old + value
        elif op.kind == "max":  # written only when larger: a NaN value never lands
            new = np.where(value > old, value, old)
        elif op.kind == "min":
            new = np.where(value < old, value, old)
        elif op.kind == "or":
            new = np.bitwise_or(old, converted(np.asarray(value), old.dtype))
        elif op.kind == "store":
            new = np.full_like(old, value)
        elif op.kind == "load":
            new = None  # reads only
        else:
            raise NotImplementedError(f"interpret: atomic kind {op.kind!r}")
        if op.prev is not None:
            self.write(op.prev, old)
        if new is not None:
            self.write(op.dst, new)


def _clipped(
    mins: Sequence[int], extents: Sequence[int], shape: Sequence[int]
) -> tuple[tuple[slice, ...] | None, tuple[slice, ...] | None]:
    src: list[slice] = []
    dst: list[slice] = []
    for lo, ext, size in zip(mins, extents, shape, strict=True):
        start, stop = max(lo, 0), min(lo + ext, size)
        if start >= stop:
            return None, None
        src.append(slice(start, stop))
        dst.append(slice(start - lo, stop - lo))
    return tuple(src), tuple(dst)


def _is_float(array: Any) -> bool:
    # ml_dtypes' bfloat16 and float8 arrays have kind "V".
    return bool(array.dtype.kind in "fV")
