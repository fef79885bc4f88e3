"""A numpy/Python reference of Philox4x32-10 and of cuRAND's Philox stream, for the tests
of ``T.rng_*``. The block function is itself checked against Random123's published
known-answer vectors (`KNOWN_ANSWERS`) before any kernel is compared with it."""

from __future__ import annotations

import numpy as np

_M0, _M1, _W0, _W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
_MASK = 0xFFFFFFFF

#: Random123's known answers for Philox4x32-10: (counter, key, output), 32-bit words.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    (
        (_MASK, _MASK, _MASK, _MASK),
        (_MASK, _MASK),
        (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD),
    ),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


def philox4x32_10(counter: tuple[int, ...], key: tuple[int, ...]) -> list[int]:
    """The Philox4x32-10 block of ``counter`` (4 words, low first) under ``key`` (2)."""
    c = [v & _MASK for v in counter]
    k = [v & _MASK for v in key]
    for r in range(10):
        if r:
            k = [(k[0] + _W0) & _MASK, (k[1] + _W1) & _MASK]
        p0, p1 = _M0 * c[0], _M1 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & _MASK, (p0 >> 32) ^ c[3] ^ k[1], p0 & _MASK]
    return c


def curand_stream(seed: int, seq: int, off: int, count: int) -> np.ndarray:
    """The first ``count`` words ``curand()`` returns after ``curand_init(seed, seq, off)``
    for Philox4x32-10: word ``k`` of block ``c`` is number ``4 * c + k`` of stream
    ``seq`` (the counter's high half) under key ``seed``."""
    words: list[int] = []
    block, position = off // 4, off % 4
    key = (seed & _MASK, (seed >> 32) & _MASK)
    while len(words) < count:
        counter = (block & _MASK, (block >> 32) & _MASK, seq & _MASK, (seq >> 32) & _MASK)
        words.extend(philox4x32_10(counter, key)[position:])
        position, block = 0, block + 1
    return np.array(words[:count], dtype=np.uint32)


def curand_uniform(words: np.ndarray) -> np.ndarray:
    """cuRAND's float32 uniform of each word: ``x * 2**-32 + 2**-33``."""
    return words.astype(np.float32) * np.float32(2.0**-32) + np.float32(2.0**-33)
