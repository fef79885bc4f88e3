"""TileLang's pass-config keys (``tilelang.PassConfigKey``) and what each means here.

A program written for TileLang passes ``pass_configs={PassConfigKey.X: value}`` or the
raw ``"tl.*"`` strings. Every ``tl.*`` key TileLang defines is known here: a few are
applied, the rest are hints about NVIDIA-specific lowering this compiler does not
perform and are accepted and ignored on every target (`KNOWN_TL_KEYS` says which and
why). An unknown ``tl.*`` key is an error that lists the known ones. Keys outside the
``tl.`` namespace (``tirx.*``, ``tir.*``, ``cuda.*``) go to TVM's pass context as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any


class PassConfigKey(str, Enum):
    """TileLang's pass-config key names (a member compares equal to its string)."""

    TL_SIMPLIFY = "tl.Simplify"
    TL_DISABLE_BUFFER_INIT_CHECK = "tl.disable_buffer_init_check"
    TL_DISABLE_DATA_RACE_CHECK = "tl.disable_data_race_check"
    TL_DISABLE_PRELOWER_SEMANTIC_CHECK = "tl.disable_prelower_semantic_check"
    TL_DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
    TL_ENABLE_FAST_MATH = "tl.enable_fast_math"
    TL_PTXAS_REGISTER_USAGE_LEVEL = "tl.ptxas_register_usage_level"
    TL_DEVICE_COMPILE_FLAGS = "tl.device_compile_flags"
    TL_EMIT_LINE_DIRECTIVES = "tl.emit_line_directives"
    TL_CONFIG_INDEX_BITWIDTH = "tl.config_index_bitwidth"
    TL_ENABLE_REDUCER_PLAN_VERBOSE = "tl.enable_reducer_plan_verbose"
    TL_LAYOUT_COST_MODEL = "tl.layout_cost_model"
    TL_REDUCER_FORCE_BASELINE = "tl.reducer_force_baseline"
    TL_DISABLE_TMA_LOWER = "tl.disable_tma_lower"
    TL_DISABLE_SAFE_MEMORY_ACCESS = "tl.disable_safe_memory_legalize"
    TL_DISABLE_VECTORIZE_256 = "tl.disable_vectorize_256"
    TL_ENABLE_ASYNC_COPY = "tl.enable_async_copy"
    TL_ENABLE_LOWER_LDGSTG = "tl.enable_lower_ldgstg"
    TL_ENABLE_LOWER_LDGSTG_PREDICATED = "tl.enable_lower_ldgstg_predicated"
    TL_ENABLE_VECTORIZE_PLANNER_VERBOSE = "tl.enable_vectorize_planner_verbose"
    TL_DISABLE_WGMMA = "tl.disable_wgmma"
    TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS = "tl.debug_merge_shared_memory_allocations"
    TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE = "tl.enable_aggressive_shared_memory_merge"
    TL_DISABLE_SHARED_MEMORY_REUSE = "tl.disable_shared_memory_reuse"
    TL_DISABLE_SHUFFLE_ELECT = "tl.disable_shuffle_elect"
    TL_DISABLE_LOOP_UNSWITCHING = "tl.disable_loop_unswitching"
    TL_LOOP_UNSWITCHING_ALLOW_NON_TRIVIAL_ELSE = "tl.loop_unswitching_allow_non_trivial_else"
    TL_IF_STMT_BINDING_INLINE_REPLAYABLE_BINDS = "tl.if_stmt_binding_inline_replayable_binds"
    TL_DISABLE_THREAD_STORAGE_SYNC = "tl.disable_thread_storage_sync"
    TL_FORCE_LET_INLINE = "tl.force_let_inline"
    TL_AST_PRINT_ENABLE = "tl.ast_print_enable"
    TL_LAYOUT_VISUALIZATION_ENABLE = "tl.layout_visualization_enable"
    TL_LAYOUT_VISUALIZATION_FORMATS = "tl.layout_visualization_formats"
    TL_STORAGE_REWRITE_DETECT_INPLACE = "tl.storage_rewrite_detect_inplace"
    TL_DISABLE_OUT_OF_BOUND_WARNING = "tl.disable_out_of_bound_warning"
    TL_ENABLE_DUMP_IR = "tl.enable_dump_ir"
    TL_DUMP_IR_DIR = "tl.dump_ir_path"
    TL_PASS_PROFILE = "tl.pass_profile"
    TL_PASS_PROFILE_THRESHOLD_MS = "tl.pass_profile_threshold_ms"
    TIR_ENABLE_EQUIV_TERMS_IN_CSE = "tir.enable_equiv_terms_in_cse_tir"
    TIR_DISABLE_CSE = "tirx.disable_cse_tir"
    TIR_SIMPLIFY = "tirx.Simplify"
    TIR_DISABLE_STORAGE_REWRITE = "tirx.disable_storage_rewrite"
    TIR_DISABLE_VECTORIZE = "tirx.disable_vectorize"
    TIR_USE_ASYNC_COPY = "tirx.use_async_copy"
    TIR_ENABLE_DEBUG = "tirx.enable_debug"
    TIR_MERGE_STATIC_SMEM = "tirx.merge_static_smem"
    TIR_ADD_LOWER_PASS = "tirx.add_lower_pass"
    TIR_NOALIAS = "tirx.noalias"
    CUDA_KERNELS_OUTPUT_DIR = "cuda.kernels_output_dir"

    def __str__(self) -> str:
        return str(self.value)


APPLIED = "applied"
IGNORED = "ignored"

_NO_NVIDIA_SPECIFIC = (
    "this compiler does not generate the NVIDIA-specific code the key tunes "
    "(TMA, warp specialization, WGMMA, ldg/stg lowering, ptxas options)"
)
_NO_SUCH_PASS = "the TileLang pass it configures has no counterpart here"
_DIAGNOSTIC = "a TileLang diagnostic or visualization switch; no counterpart here"

KNOWN_TL_KEYS: Mapping[str, tuple[str, str]] = {
    "tl.enable_dump_ir": (APPLIED, "with tl.dump_ir_path: the IR after every pass is dumped"),
    "tl.dump_ir_path": (APPLIED, "the directory tl.enable_dump_ir dumps into"),
    "tl.Simplify": (IGNORED, "TVM's simplifier runs with its defaults"),
    "tl.disable_buffer_init_check": (IGNORED, _NO_SUCH_PASS),
    "tl.disable_data_race_check": (IGNORED, _NO_SUCH_PASS),
    "tl.disable_prelower_semantic_check": (IGNORED, _NO_SUCH_PASS),
    "tl.disable_warp_specialized": (IGNORED, _NO_NVIDIA_SPECIFIC),
    "tl.enable_fast_math": (IGNORED, "math follows IEEE on every target (no fast-math flags)"),
    "tl.ptxas_register_usage_level": (IGNORED, _NO_NVIDIA_SPECIFIC),
    "tl.device_compile_flags": (IGNORED, "device compiler flags are the backend's"),
    "tl.emit_line_directives": (IGNORED, _DIAGNOSTIC),
    "tl.config_index_bitwidth": (IGNORED, "indices keep the kernel's own dtypes"),
    "tl.enable_reducer_plan_verbose": (IGNORED, _DIAGNOSTIC),
    "tl.layout_cost_model": (IGNORED, _NO_SUCH_PASS),
    "tl.reducer_force_baseline": (IGNORED, _NO_SUCH_PASS),
    "tl.disable_tma_lower": (IGNORED, _NO_NVIDIA_SPECIFIC),
    "tl.disable_safe_memory_legalize": (IGNORED, "partial tiles are always bounds-checked"),
    "tl.disable_vectorize_256": (IGNORED, _NO_NVIDIA_SPECIFIC),
    "tl.enable_async_copy": (IGNORED, _NO_NVIDIA_SPECIFIC),
    "tl.enable_lower_ldgstg": (IGNORED, _NO_NVIDIA_SPECIFIC),
    "tl.enable_lower_ldgstg_predicated": (IGNORED, _NO_NVIDIA_SPECIFIC),
    "tl.enable_vectorize_planner_verbose": (IGNORED, _DIAGNOSTIC),
    "tl.disable_wgmma": (IGNORED, _NO_NVIDIA_SPECIFIC),
    "tl.debug_merge_shared_memory_allocations": (IGNORED, _DIAGNOSTIC),
    "tl.enable_aggressive_shared_memory_merge": (IGNORED, _NO_SUCH_PASS),
    "tl.disable_shared_memory_reuse": (IGNORED, _NO_SUCH_PASS),
    "tl.disable_shuffle_elect": (IGNORED, _NO_NVIDIA_SPECIFIC),
    "tl.disable_loop_unswitching": (IGNORED, _NO_SUCH_PASS),
    "tl.loop_unswitching_allow_non_trivial_else": (IGNORED, _NO_SUCH_PASS),
    "tl.if_stmt_binding_inline_replayable_binds": (IGNORED, _NO_SUCH_PASS),
    "tl.disable_thread_storage_sync": (IGNORED, "barriers are inserted where the code needs them"),
    "tl.force_let_inline": (IGNORED, _NO_SUCH_PASS),
    "tl.ast_print_enable": (IGNORED, _DIAGNOSTIC),
    "tl.layout_visualization_enable": (IGNORED, _DIAGNOSTIC),
    "tl.layout_visualization_formats": (IGNORED, _DIAGNOSTIC),
    "tl.storage_rewrite_detect_inplace": (IGNORED, _NO_SUCH_PASS),
    "tl.disable_out_of_bound_warning": (IGNORED, _DIAGNOSTIC),
    "tl.pass_profile": (IGNORED, _DIAGNOSTIC),
    "tl.pass_profile_threshold_ms": (IGNORED, _DIAGNOSTIC),
}
"""Every ``tl.*`` key TileLang defines: ``key -> (APPLIED or IGNORED, what it does here)``."""


BOOL_TL_KEYS = frozenset(
    key
    for key in KNOWN_TL_KEYS
    if key
    not in {
        "tl.Simplify",
        "tl.ptxas_register_usage_level",
        "tl.device_compile_flags",
        "tl.config_index_bitwidth",
        "tl.layout_cost_model",
        "tl.layout_visualization_formats",
        "tl.dump_ir_path",
        "tl.pass_profile_threshold_ms",
    }
)
"""The ``tl.*`` keys TileLang registers as ``Bool`` (``tl.disable_tma_lower``...)."""


def _check_bool_value(key: str, value: object) -> None:
    """Refuse a value of a boolean ``tl.*`` key other than a bool or 0/1 (TileLang's
    ``Bool`` option; ``"maybe"`` was taken as it came).

    Raises:
        TypeError: names the key and what came.
    """
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return
    if type(value).__module__ == "numpy":
        import numpy as np

        if isinstance(value, np.bool_) or (isinstance(value, np.integer) and value in (0, 1)):
            return
    raise TypeError(
        f"pass_configs[{key!r}]: expected a bool (True or False; 0 or 1), got "
        f"{type(value).__name__} {value!r:.80}"
    )


def split_pass_configs(
    pass_configs: Mapping[Any, object] | None,
) -> tuple[dict[str, object], dict[str, object]]:
    """``(tvm configs, tl configs)``: TileLang's ``tl.*`` keys apart from TVM's.

    Keys may be strings or `PassConfigKey` members.

    Raises:
        TypeError: ``pass_configs`` is not a mapping, a key is not a string, or a
            boolean ``tl.*`` key (`BOOL_TL_KEYS`) has a value other than a bool or 0/1.
        ValueError: a ``tl.*`` key TileLang does not define (the message lists the known
            ones).
    """
    if pass_configs is not None and not isinstance(pass_configs, Mapping):
        raise TypeError(
            "pass_configs: expected a dict of option names to values, got "
            f"{type(pass_configs).__name__} {pass_configs!r:.80}"
        )
    tvm_configs: dict[str, object] = {}
    tl_configs: dict[str, object] = {}
    for raw_key, value in (pass_configs or {}).items():
        if not isinstance(raw_key, str):
            raise TypeError(f"pass_configs: keys must be strings, got {raw_key!r}")
        key = str(raw_key.value) if isinstance(raw_key, PassConfigKey) else raw_key
        if not key.startswith("tl."):
            tvm_configs[key] = value
            continue
        if key not in KNOWN_TL_KEYS:
            raise ValueError(
                f"pass_configs: unknown TileLang key {key!r}; the known tl.* keys are: "
                + ", ".join(sorted(KNOWN_TL_KEYS))
            )
        if key in BOOL_TL_KEYS:
            _check_bool_value(key, value)
        tl_configs[key] = value
    return tvm_configs, tl_configs


def normalize_pass_configs(
    pass_configs: Mapping[Any, object] | None,
) -> dict[str, object] | None:
    """``pass_configs`` with `PassConfigKey` keys as plain strings, validated; None if empty.

    Raises:
        TypeError, ValueError: as `split_pass_configs`.
    """
    tvm_configs, tl_configs = split_pass_configs(pass_configs)
    merged = {**tvm_configs, **tl_configs}
    return merged or None


def check_compile_flags(compile_flags: object) -> None:
    """Check TileLang's ``compile_flags=`` of ``jit``/``compile``: None, a string or a
    list/tuple of strings. Like ``tl.device_compile_flags`` they are not applied: each
    backend chooses its compiler's flags (and math follows IEEE on every target).

    Raises:
        TypeError: anything else (the message says what came).
    """
    if compile_flags is None or isinstance(compile_flags, str):
        return
    if isinstance(compile_flags, list | tuple) and all(
        isinstance(flag, str) for flag in compile_flags
    ):
        return
    raise TypeError(
        "compile_flags: expected None, a string or a list of strings (device compiler "
        f"flags, not applied here), got {compile_flags!r:.120}"
    )


def check_verbose(verbose: object, where: str = "verbose") -> None:
    """Check ``verbose=`` of ``compile``/``jit``/``par_compile``: a bool, or 0/1 as the
    boolean pass configs take (``"yes"`` was taken by its truth, and ``verbose="no"``
    printed).

    Raises:
        TypeError: anything else, naming ``where`` and what came.
    """
    if isinstance(verbose, bool) or (isinstance(verbose, int) and verbose in (0, 1)):
        return
    raise TypeError(
        f"{where}: expected True or False (or 0/1), got {type(verbose).__name__} {verbose!r:.80}"
    )


def dump_dir(tl_configs: Mapping[str, object]) -> Path | None:
    """Where ``tl.enable_dump_ir`` + ``tl.dump_ir_path`` ask the IR to be dumped, or None.

    Raises:
        ValueError: ``tl.enable_dump_ir`` is set without a ``tl.dump_ir_path`` string.
    """
    if not tl_configs.get("tl.enable_dump_ir"):
        return None
    path = tl_configs.get("tl.dump_ir_path")
    if not isinstance(path, str | Path) or not str(path):
        raise ValueError(
            f"pass_configs: tl.enable_dump_ir needs tl.dump_ir_path (a directory), got {path!r}"
        )
    return Path(path)
