"""Random numbers in kernels: ``T.rng_init``, ``T.rng_rand``, ``T.rng_rand_float``.

TileLang draws them from cuRAND's Philox4x32-10 generator on CUDA
(``curand_init(seed, seq, off, &state)``, ``curand``, ``curand_uniform``,
``curand_normal``). Here the generator is written in the kernel's own IR, so
every target compiles the same integer arithmetic and a kernel draws the same
stream on ``c``, ``llvm`` and CUDA:

* The state is per thread (a ``local`` array made where ``T.rng_init`` is
  called): a 128-bit counter, a 64-bit key (the seed), the four words of the
  current Philox block and the position in it. ``T.rng_init(seed, seq, off)``
  sets the counter to ``(off // 4, seq)`` (low words first), the key to ``seed``
  and the position to ``off % 4``, as cuRAND's ``curand_init`` does: stream
  ``seq`` of ``seed``, skipped ahead by ``off`` numbers. Without ``seq``, the
  thread's index in the grid (``tx + bx * threads``), as in TileLang.
* ``T.rng_rand()`` is the next 32-bit word of the stream: word ``k`` of the
  Philox4x32-10 block of counter ``c`` is number ``4 * c + k``. The words are
  bit-identical to cuRAND's ``curand()`` for the same seed, sequence and offset
  (the block function is checked against Random123's published known answers).
* ``T.rng_rand_float()`` (float32, uniform) is ``x * 2**-32 + 2**-33`` of the
  next word ``x``, cuRAND's ``curand_uniform``: in (0, 1], and exact in every
  target's arithmetic (a power-of-two scale), so bit-identical to cuRAND too.
  ``bit=64`` is ``x * 2**-32 + 2**-32`` of one word (cuRAND's
  ``curand_uniform_double`` for Philox in the headers read; some CUDA releases
  add half that step, so it is not promised to match every cuRAND).
  ``dist="normal"`` is cuRAND's Box-Muller: two words (four for float64) give two
  normal values, the second kept for the next call, so the stream is consumed as
  cuRAND consumes it; the values go through ``log``, ``sqrt``, ``sin`` and
  ``cos`` of each target's math library (cuRAND uses CUDA's fast intrinsics), so
  they agree to rounding, not bit for bit, between targets and with cuRAND.

Each call draws once, where its statement runs (its draw is emitted as
statements just before it). The stream belongs to the thread: in a
``T.Parallel`` loop the draws are made in iteration order, which a block of one
thread fixes (TileLang's examples); with more threads which thread draws for
which element is the target's layout choice, so that is refused.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx
from tvm.script.ir_builder import tirx as _IB

from tl_ir import ops as _ops
from tl_ir.errors import KernelSyntaxError, KernelTypeError, UnsupportedError
from tl_ir.frontend import current_state as _current_state
from tl_ir.language._launch import active_kernel
from tl_ir.launch import LOOP_KIND_KEY, rebuild_loop
from tl_ir.scopes import LOCAL

__all__ = [
    "RngState",
    "philox4x32_10",
    "rng_init",
    "rng_rand",
    "rng_rand_float",
    "serialize_rng_loops",
]

#: Philox4x32's multipliers and Weyl key increments (Salmon et al., SC'11).
PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85
PHILOX_ROUNDS = 10
#: cuRAND's generator names; only Philox4x32-10 is implemented.
_PHILOX = "curandStatePhilox4_32_10_t"
_GENERATORS = (_PHILOX, "curandStateMRG32k3a_t", "curandStateXORWOW_t")

# Word layout of the per-thread state array (uint32).
_CTR, _KEY, _OUT, _POS, _FLAG32, _FLAG64, _WORK = 0, 4, 6, 10, 11, 12, 13
_WORDS = _WORK + 8

_U32, _U64 = "uint32", "uint64"


@dataclass(frozen=True)
class RngState:
    """One thread's generator: ``words`` (uint32: counter, key, block, position, the
    normal-value flags, scratch), the float32/float64 normal values kept for the
    next call, and the threads per block of its kernel (None: not a constant)."""

    words: Any
    extra32: Any
    extra64: Any
    threads: int | None


def _u32(value: int) -> Any:
    return tirx.const(value & 0xFFFFFFFF, _U32)


def _load(buffer: Any, index: int | Any) -> Any:
    index = _ops.exact_int(index)
    return tirx.BufferLoad(buffer, [index if not isinstance(index, int) else _i32(index)])


def _i32(value: int) -> Any:
    return tirx.const(value, "int32")


def _store(buffer: Any, index: int | Any, value: Any) -> None:
    index = _ops.exact_int(index)
    _IB.buffer_store(buffer, value, [index if not isinstance(index, int) else _i32(index)])


def _mulhilo(value: Any, multiplier: int) -> tuple[Any, Any]:
    product = tirx.Cast(_U64, value) * tirx.const(multiplier, _U64)
    high = tirx.Cast(_U32, tirx.shift_right(product, tirx.const(32, _U64)))
    return high, tirx.Cast(_U32, product)


def philox4x32_10(
    out: Any, out_offset: int, counter: list[Any], key: list[Any], work: Any, work_offset: int
) -> None:
    """Emit the Philox4x32-10 block function: ``out[out_offset:+4]`` = the block of
    ``counter`` (four uint32 values, low word first) under ``key`` (two uint32).

    ``work[work_offset:+8]`` (uint32) holds the rounds' values. Must be called while a
    kernel body is being built.
    """
    xor = tirx.bitwise_xor
    for i, word in enumerate(counter):
        _store(work, work_offset + i, word)
    for r in range(PHILOX_ROUNDS):
        read = work_offset + (r % 2) * 4
        write = work_offset + ((r + 1) % 2) * 4
        c = [_load(work, read + i) for i in range(4)]
        k0 = key[0] + _u32(r * PHILOX_W0) if r else key[0]
        k1 = key[1] + _u32(r * PHILOX_W1) if r else key[1]
        hi0, lo0 = _mulhilo(c[0], PHILOX_M0)
        hi1, lo1 = _mulhilo(c[2], PHILOX_M1)
        for i, value in enumerate((xor(xor(hi1, c[1]), k0), lo1, xor(xor(hi0, c[3]), k1), lo0)):
            _store(work, write + i, value)
    final = work_offset + (PHILOX_ROUNDS % 2) * 4
    for i in range(4):
        _store(out, out_offset + i, _load(work, final + i))


def _state(where: str) -> RngState:
    state = _current_state()
    if state is None or not state.rng_states:
        raise KernelSyntaxError(f"{where}: call T.rng_init(seed, ...) first in this kernel")
    found: RngState = state.rng_states[-1]
    return found


def _as_u64(value: Any, name: str) -> Any:
    value = _ops.exact_int(value)
    if isinstance(value, bool):
        raise KernelTypeError(f"T.rng_init({name}=...): expected an integer, got {value!r}")
    if isinstance(value, int):
        return tirx.const(value & 0xFFFFFFFFFFFFFFFF, _U64)
    if not tvm.ir.is_prim_expr(value) or "int" not in str(value.dtype):
        raise KernelTypeError(f"T.rng_init({name}=...): expected an integer, got {value!r}")
    return tirx.Cast(_U64, value)


def _low(value: Any) -> Any:
    # Constants are split here: TVM's folding of a narrowing cast refuses a constant
    # that does not fit the narrower type instead of truncating it.
    known = _ops.const_int(value)
    if known is not None:
        return _u32(known)
    return tirx.Cast(_U32, value)


def _high(value: Any) -> Any:
    known = _ops.const_int(value)
    if known is not None:
        return _u32(known >> 32)
    return tirx.Cast(_U32, tirx.shift_right(value, tirx.const(32, _U64)))


def rng_init(seed: Any, seq: Any = None, off: Any = 0, generator: str = _PHILOX) -> None:
    """Start this thread's random stream (module docstring): stream ``seq`` of ``seed``
    (64-bit values), skipped ahead by ``off`` numbers; ``seq`` defaults to the thread's
    index in the grid.

    Raises:
        UnsupportedError: a cuRAND generator other than Philox4x32-10.
        KernelTypeError: an argument is not an integer.
    """
    kernel = active_kernel("T.rng_init")
    if generator not in _GENERATORS:
        raise KernelTypeError(
            f"T.rng_init(generator=...): expected one of {', '.join(_GENERATORS)}, "
            f"got {generator!r}"
        )
    if generator != _PHILOX:
        raise UnsupportedError(
            f"T.rng_init(generator={generator!r}): only {_PHILOX} (the default) is "
            "implemented; its stream is the same on every target"
        )
    if seq is None:
        seq = kernel.thread_vars[0] + kernel.block_vars[0] * kernel.thread_extents[0]
    seed64, seq64, off64 = _as_u64(seed, "seed"), _as_u64(seq, "seq"), _as_u64(off, "off")
    words = _IB.alloc_buffer((_WORDS,), _U32, scope=LOCAL)
    extra32 = _IB.alloc_buffer((1,), "float32", scope=LOCAL)
    extra64 = _IB.alloc_buffer((1,), "float64", scope=LOCAL)
    known_off = _ops.const_int(off64)
    block = (
        tirx.const(known_off >> 2, _U64)
        if known_off is not None
        else tirx.shift_right(off64, tirx.const(2, _U64))
    )
    counter = [_low(block), _high(block), _low(seq64), _high(seq64)]
    for i, value in enumerate([*counter, _low(seed64), _high(seed64)]):
        _store(words, _CTR + i, value)
    _store(
        words,
        _POS,
        _u32(known_off & 3)
        if known_off is not None
        else _low(tirx.bitwise_and(off64, tirx.const(3, _U64))),
    )
    _store(words, _FLAG32, _u32(0))
    _store(words, _FLAG64, _u32(0))
    _store(extra32, 0, tirx.const(0.0, "float32"))
    _store(extra64, 0, tirx.const(0.0, "float64"))
    _emit_block(words)
    threads: int | None = 1
    for extent in kernel.thread_extents:
        size = _ops.const_int(extent)
        threads = threads * size if threads is not None and size is not None else None
    kernel.rng_states.append(RngState(words, extra32, extra64, threads))


def _emit_block(words: Any) -> None:
    counter = [_load(words, _CTR + i) for i in range(4)]
    key = [_load(words, _KEY + i) for i in range(2)]
    philox4x32_10(words, _OUT, counter, key, words, _WORK)


def _draw(rng: RngState) -> Any:
    """Emit one draw (cuRAND's ``curand``) and return the drawn word."""
    words = rng.words
    value = _IB.alloc_buffer((1,), _U32, scope=LOCAL)
    position = tirx.Cast("int32", _load(words, _POS))
    _store(value, 0, tirx.BufferLoad(words, [_i32(_OUT) + position]))
    _store(words, _POS, _load(words, _POS) + _u32(1))
    with _IB.If(_load(words, _POS) == _u32(4)), _IB.Then():
        _increment_counter(words)
        _emit_block(words)
        _store(words, _POS, _u32(0))
    return tirx.BufferLoad(value, [_i32(0)])


def _increment_counter(words: Any) -> None:
    # The 128-bit counter plus one, carrying from the low word up.
    _store(words, _CTR, _load(words, _CTR) + _u32(1))
    with _IB.If(_load(words, _CTR) == _u32(0)), _IB.Then():
        _store(words, _CTR + 1, _load(words, _CTR + 1) + _u32(1))
        with _IB.If(_load(words, _CTR + 1) == _u32(0)), _IB.Then():
            _store(words, _CTR + 2, _load(words, _CTR + 2) + _u32(1))
            with _IB.If(_load(words, _CTR + 2) == _u32(0)), _IB.Then():
                _store(words, _CTR + 3, _load(words, _CTR + 3) + _u32(1))


def rng_rand() -> Any:
    """The next 32-bit word (``uint32``) of this thread's stream (cuRAND's ``curand``).

    Raises:
        KernelSyntaxError: no ``T.rng_init`` before it in this kernel.
    """
    return _draw(_state("T.rng_rand()"))


def _exact(value: float, dtype: str) -> Any:
    """``value`` as a constant that every codegen reproduces exactly: its bits,
    reinterpreted (the C codegen prints float literals to 7 digits)."""
    if dtype == "float32":
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        return tirx.reinterpret("float32", tirx.const(bits, _U32))
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    return tirx.reinterpret("float64", tirx.const(bits, _U64))


def _uniform32(word: Any) -> Any:
    return tirx.Cast("float32", word) * _exact(2.0**-32, "float32") + _exact(2.0**-33, "float32")


def _uniform53(low: Any, high: Any, scale_by: float, offset: float) -> Any:
    # cuRAND's 53-bit uniform from two words: low ^ (high << 21), scaled.
    bits = tirx.bitwise_xor(
        tirx.Cast(_U64, low), tirx.shift_left(tirx.Cast(_U64, high), tirx.const(21, _U64))
    )
    return tirx.Cast("float64", bits) * _exact(scale_by, "float64") + _exact(offset, "float64")


def rng_rand_float(bit: int = 32, dist: str = "uniform") -> Any:
    """A random float of ``bit`` bits (32 or 64) from this thread's stream: uniform in
    (0, 1] or standard normal (module docstring for what matches cuRAND).

    Raises:
        KernelTypeError: ``bit`` not 32 or 64, ``dist`` not ``uniform`` or ``normal``.
        KernelSyntaxError: no ``T.rng_init`` before it in this kernel.
    """
    if bit not in (32, 64) or isinstance(bit, bool):
        raise KernelTypeError(f"T.rng_rand_float(bit=...): expected 32 or 64, got {bit!r}")
    if dist not in ("uniform", "normal"):
        raise KernelTypeError(
            f"T.rng_rand_float(dist=...): expected 'uniform' or 'normal', got {dist!r}"
        )
    rng = _state("T.rng_rand_float()")
    if dist == "uniform":
        word = _draw(rng)
        if bit == 32:
            return _uniform32(word)
        return tirx.Cast("float64", word) * _exact(2.0**-32, "float64") + _exact(
            2.0**-32, "float64"
        )
    return _normal(rng, bit)


def _normal(rng: RngState, bit: int) -> Any:
    """cuRAND's Box-Muller with the second value kept for the next call."""
    dtype = f"float{bit}"
    flag, extra = (_FLAG32, rng.extra32) if bit == 32 else (_FLAG64, rng.extra64)
    result = _IB.alloc_buffer((1,), dtype, scope=LOCAL)
    with _IB.If(_load(rng.words, flag) == _u32(0)):
        with _IB.Then():
            if bit == 32:
                radius_source = _uniform32(_draw(rng))
                angle = tirx.Cast("float32", _draw(rng)) * _exact(
                    2.0**-32 * 2 * math.pi, "float32"
                ) + _exact(2.0**-32 * math.pi, "float32")
            else:
                x0, x1, y0, y1 = (_draw(rng) for _ in range(4))
                radius_source = _uniform53(x0, x1, 2.0**-53, 2.0**-54)
                angle = _uniform53(y0, y1, 2.0**-53 * 2 * math.pi, 2.0**-53 * math.pi)
            radius = tirx.sqrt(tirx.const(-2.0, dtype) * tirx.log(radius_source))
            _store(result, 0, radius * tirx.sin(angle))
            _store(extra, 0, radius * tirx.cos(angle))
            _store(rng.words, flag, _u32(1))
        with _IB.Else():
            _store(result, 0, _load(extra, 0))
            _store(rng.words, flag, _u32(0))
    return tirx.BufferLoad(result, [_i32(0)])


def serialize_rng_loops(body: Any, states: list[RngState]) -> Any:
    """``body`` with each ``T.Parallel`` loop that draws random numbers made serial: the
    draws change the thread's state, so the iterations run in order (one thread runs
    them all, as in TileLang's examples).

    Raises:
        UnsupportedError: such a loop in a block of more than one thread (or an
            unknown number).
    """
    refusals: list[str] = []

    def drawing(stmt: Any) -> list[RngState]:
        found: list[RngState] = []

        def visit(store: Any) -> None:
            for rng in states:
                if store.buffer.same_as(rng.words) and rng not in found:
                    found.append(rng)

        tvm_ffi.structural_walk(stmt, (tirx.BufferStore, visit), order="pre")
        return found

    def rewrite(loop: Any) -> Any:
        kind = loop.annotations.get(LOOP_KIND_KEY) if loop.annotations else None
        if kind is None or str(kind) != "parallel":
            return loop
        users = drawing(loop.body)
        if not users:
            return loop
        threads = next((rng.threads for rng in users if rng.threads != 1), 1)
        if threads != 1:
            refusals.append(
                "T.rng_rand / T.rng_rand_float in a T.Parallel loop of a block of "
                f"{threads} threads: which thread's stream draws for which element would "
                "be the target's layout choice; draw in thread-indexed code "
                "(A[tx] = T.rng_rand(), T.serial loops) or use a block of one thread"
            )
            return loop
        annotations = {k: v for k, v in loop.annotations.items() if k != LOOP_KIND_KEY}
        return rebuild_loop(loop, annotations=annotations, kind=tirx.ForKind.SERIAL)

    rewritten = tvm_ffi.structural_map(body, (tirx.For, rewrite), order="post")
    if refusals:
        raise UnsupportedError(refusals[0])
    return rewritten
