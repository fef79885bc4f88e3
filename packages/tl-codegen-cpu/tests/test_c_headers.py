"""The C headers of ``tl_codegen_cpu/include/`` are valid C and define what the passes call.

Each header is compiled as the generated sources hold it (after the includes, the
half-precision header after the fp32 micro-kernel) with ``gcc -fsyntax-only -Wall
-Werror`` (``-Wno-psabi``: see `WARNINGS`), once per ISA variant its ``#if defined(__F16C__)``-style guards select:
a variant the host's gcc cannot target is skipped. The names the passes emit
(`gemm_microkernel`, `half_conversions`, `atomics`, the workspace rewrite of
`c_patches`) must each be defined in a header once preprocessed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tl_codegen_cpu import c_headers
from tl_codegen_cpu.c_headers import (
    C_HEADERS,
    atomics_c_source,
    c_header,
    half_prelude,
    microkernel_prelude,
    workspace_prelude,
)
from tl_codegen_cpu.lowering.atomics import (
    ATOMIC_KINDS,
    atomic_dtypes,
    atomic_function_name,
)
from tl_codegen_cpu.lowering.gemm_c_prelude import C_MAX_ROWS, C_MAX_VECTORS, C_PRELUDE_LANES
from tl_codegen_cpu.lowering.half_conversions import (
    C_HALF_GEMM_DTYPES,
    C_HALF_PRODUCT_DTYPES,
    ROW_CONVERSIONS,
    TRANSPOSES,
)

GCC = shutil.which("gcc")
pytestmark = pytest.mark.skipif(GCC is None, reason="gcc is not on PATH")

#: ISA variant -> gcc flags selecting it, and a predefined macro the variant must set
#: (so a flag gcc accepted but ignored does not pass for the variant).
ISA_VARIANTS: dict[str, tuple[list[str], str | None]] = {
    "x86-64 baseline": (["-march=x86-64"], None),
    "AVX2 + F16C": (["-march=haswell"], "__F16C__"),
    "AVX-512F": (["-march=skylake-avx512"], "__AVX512F__"),
    "AVX-512-FP16": (["-march=sapphirerapids"], "__AVX512FP16__"),
}

#: -Wpsabi warns that a 32/64-byte vector returned without AVX/AVX-512 has another ABI;
#: the headers' vector-returning functions are static and always inlined, so no call of
#: them crosses an ABI boundary.
WARNINGS = ["-Wall", "-Werror", "-Wno-psabi"]

_HIDDEN = '__attribute__((visibility("hidden")))'

#: Translation unit name -> its text, as the generated sources hold the headers.
UNITS: dict[str, str] = {
    "tl_gemm_f32.h + tl_half.h": "#include <stdint.h>\n" + microkernel_prelude() + half_prelude(),
    "tl_atomics.h (c: static inline)": atomics_c_source(),
    "tl_atomics.h (llvm: hidden)": atomics_c_source(_HIDDEN),
    "tl_workspace.h": "#include <stdint.h>\n" + workspace_prelude(),
}


def _gcc(flags: list[str], source: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "unit.c"
    path.write_text(source)
    assert GCC is not None
    return subprocess.run(
        [GCC, *flags, str(path)], capture_output=True, text=True, check=False, timeout=120
    )


def _variant_flags(variant: str, tmp_path: Path) -> list[str]:
    """The variant's flags, or skip when the host's gcc cannot target it."""
    flags, macro = ISA_VARIANTS[variant]
    probe = "#include <immintrin.h>\n"
    if macro is not None:
        probe += f"#ifndef {macro}\n#error {macro} not set\n#endif\n"
    done = _gcc([*flags, "-fsyntax-only"], probe, tmp_path)
    if done.returncode != 0:
        pytest.skip(f"gcc cannot target {variant}: {done.stderr.strip()[:200]}")
    return flags


@pytest.mark.parametrize("variant", list(ISA_VARIANTS))
@pytest.mark.parametrize("unit", list(UNITS))
def test_header_compiles_as_c(unit: str, variant: str, tmp_path: Path) -> None:
    flags = _variant_flags(variant, tmp_path)
    done = _gcc([*flags, "-fsyntax-only", *WARNINGS], UNITS[unit], tmp_path)
    assert done.returncode == 0, f"{unit} under {variant}:\n{done.stderr}"


def _emitted_names() -> set[str]:
    """Every C function a CPU pass or `c_patches` writes a call of."""
    names = {f"tl_gemm_f32x{lanes}" for lanes in C_PRELUDE_LANES}
    for infix in (*C_HALF_GEMM_DTYPES.values(), *C_HALF_PRODUCT_DTYPES.values()):
        names |= {f"tl_gemm_{infix}_f32x{lanes}" for lanes in C_PRELUDE_LANES}
    names |= set(ROW_CONVERSIONS.values()) | set(TRANSPOSES.values())
    for kind in ATOMIC_KINDS:
        names |= {atomic_function_name(kind, dtype) for dtype in atomic_dtypes(kind)}
    names |= {"tl_c_alloc_workspace", "tl_c_free_workspace"}
    return names


@pytest.mark.parametrize("variant", list(ISA_VARIANTS))
def test_every_emitted_helper_is_defined(variant: str, tmp_path: Path) -> None:
    flags = _variant_flags(variant, tmp_path)
    preprocessed = ""
    for unit, text in UNITS.items():
        done = _gcc([*flags, "-E", "-P"], text, tmp_path)
        assert done.returncode == 0, f"{unit}: {done.stderr}"
        preprocessed += done.stdout
    defined = set(re.findall(r"\b(tl_\w+)\s*\([^;{}]*\)\s*\{", preprocessed))
    missing = sorted(_emitted_names() - defined)
    assert not missing, f"helpers the passes call but no header defines under {variant}: {missing}"


def test_gemm_header_agrees_with_the_python_limits() -> None:
    text = microkernel_prelude()
    assert re.search(rf"^#define TL_GEMM_MAX_ROWS {C_MAX_ROWS}$", text, re.MULTILINE)
    assert re.search(rf"^#define TL_GEMM_MAX_VECTORS {C_MAX_VECTORS}$", text, re.MULTILINE)
    instantiated = tuple(int(n) for n in re.findall(r"^TL_GEMM_F32\((\d+)\)$", text, re.MULTILINE))
    assert instantiated == C_PRELUDE_LANES


def test_atomics_placeholder_is_substituted() -> None:
    raw = c_header("tl_atomics.h")
    assert c_headers.ATOMIC_STORAGE_PLACEHOLDER in raw
    for storage in ("static inline", _HIDDEN):
        text = atomics_c_source(storage)
        assert c_headers.ATOMIC_STORAGE_PLACEHOLDER not in text
        assert text.count(f"{storage} int32_t tl_atomic_") == raw.count(
            f"{c_headers.ATOMIC_STORAGE_PLACEHOLDER} int32_t tl_atomic_"
        )
    with pytest.raises(ValueError, match="storage"):
        atomics_c_source(" ")


def test_headers_are_package_data_and_unknown_names_are_refused() -> None:
    package_dir = Path(c_headers.__file__).parent / "include"
    assert sorted(p.name for p in package_dir.glob("*.h")) == sorted(C_HEADERS)
    with pytest.raises(ValueError, match=r"tl_nothing\.h"):
        c_header("tl_nothing.h")
