"""What the CPU's vector unit offers: register width and count, from a TVM target."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import tvm


@dataclass(frozen=True)
class VectorISA:
    """A CPU vector unit as the code generators see it.

    Args:
        vector_bits: the width of one vector register in bits (512 for AVX-512).
        num_vector_registers: how many vector registers the ISA names (32 for
            AVX-512, 16 for AVX2/SSE).
        native_fp16: whether the vector unit computes fp16 arithmetic itself
            (AVX-512-FP16: ``vmulph``...), one rounding per operation.

    Raises:
        ValueError: if a field is not a positive int, or ``vector_bits`` is not
            a multiple of 64.
    """

    vector_bits: int = 512
    num_vector_registers: int = 32
    native_fp16: bool = False

    def __post_init__(self) -> None:
        for field_name in ("vector_bits", "num_vector_registers"):
            value = getattr(self, field_name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"VectorISA {field_name}: expected a positive int, got {value!r}")
        if not isinstance(self.native_fp16, bool):
            raise ValueError(f"VectorISA native_fp16: expected a bool, got {self.native_fp16!r}")
        if self.vector_bits % 64:
            raise ValueError(
                f"VectorISA vector_bits: expected a multiple of 64, got {self.vector_bits}"
            )

    def lanes(self, dtype: str) -> int:
        """Return how many elements of ``dtype`` one vector register holds (at least 1)."""
        bits = int(tvm.DataType(dtype).bits)
        return max(1, self.vector_bits // bits)


def host_cpu_name() -> str:
    """Return LLVM's name for the host CPU (``znver4``...); ``"native"`` is not honoured by TVM."""
    return str(tvm.get_global_func("tvm.codegen.llvm.GetHostCPUName")())


@functools.lru_cache(maxsize=64)
def _isa_for_mcpu(mcpu: str) -> VectorISA:
    target = tvm.target.Target({"kind": "llvm", "mcpu": mcpu})

    def has(feature: str) -> bool:
        return bool(tvm.target.codegen.target_has_features(feature, target))

    # The register width comes from the CPU's features: TVM's `llvm_get_vector_width`
    # answers 512 for every x86 CPU (an AVX2 Zen 2 included), and 512-bit vector types on
    # a 256-bit unit made gcc's vector-extension GEMM spill (an fp16 GEMM 11-23x `llvm`).
    has_avx512 = has("avx512f")
    if has_avx512:
        width = 512
    elif has("avx"):
        width = 256
    else:
        width = 128  # SSE2 / NEON: the baseline of every 64-bit CPU TVM targets
    registers = 32 if has_avx512 else 16
    native_fp16 = has("avx512fp16")
    return VectorISA(vector_bits=width, num_vector_registers=registers, native_fp16=native_fp16)


def vector_isa_for_target(target: tvm.target.Target | None = None) -> VectorISA:
    """Return the vector unit of ``target``'s CPU.

    Args:
        target: an ``llvm`` target (its ``mcpu`` is used; none or ``native``
            means the host CPU), a ``c`` target or ``None`` (both mean the
            host CPU, since C is built with ``-march=native``).

    Returns:
        The `VectorISA` LLVM reports for that CPU.
    """
    mcpu = ""
    if target is not None and target.kind.name == "llvm":
        mcpu = str(target.attrs.get("mcpu", "") or "")
    if not mcpu or mcpu == "native":
        mcpu = host_cpu_name()
    return _isa_for_mcpu(mcpu)
