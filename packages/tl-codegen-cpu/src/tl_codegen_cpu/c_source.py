"""C source generation: TVM's C printer on a module the ``c`` pipeline prepared, then `patch_c_source`.

Never runs a C compiler (`tl_codegen_cpu.build` does).
"""

from __future__ import annotations

import itertools
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_backend_api import ToolchainError
from tl_backend_api.tvm_lowering import sound_lowering
from tl_codegen_cpu.c_patches import patch_c_source
from tl_codegen_cpu.module_info import check_module
from tl_codegen_cpu.passes import PARALLEL_FOR_MARKER
from tl_passes.whole_tiles import keep_data_indexed_tiles_whole, keep_every_tile_whole


def unmarked_parallel_loops(mod: tvm.IRModule) -> list[str]:
    """Describe each parallel loop of ``mod`` not preceded by its ``PARALLEL_FOR_MARKER`` call.

    Such a loop would be printed as a serial ``for``: the module did not go
    through the ``c`` pipeline's `cpu-mark-parallel-loops` stage.
    """
    found: list[str] = []
    for global_var, func in mod.functions.items():
        if isinstance(func, tirx.PrimFunc):
            found += [f"{loop} in {global_var.name_hint}" for loop in _unmarked_loops(func.body)]
    return found


def _unmarked_loops(body: tirx.Stmt) -> list[str]:
    marked: list[tirx.For] = []
    unmarked: list[str] = []

    def collect(seq: tirx.SeqStmt) -> None:
        items = list(seq.seq)
        for before, after in itertools.pairwise(items):
            if isinstance(after, tirx.For) and _is_marker_call(before):
                marked.append(after)

    def check(loop: tirx.For) -> None:
        if loop.kind == tirx.ForKind.PARALLEL and not any(loop.same_as(m) for m in marked):
            unmarked.append(f"loop over {loop.loop_var.name}")

    tvm_ffi.structural_walk(body, (tirx.SeqStmt, collect), order="pre")
    tvm_ffi.structural_walk(body, (tirx.For, check), order="pre")
    return unmarked


def _is_marker_call(stmt: tirx.Stmt) -> bool:
    return (
        isinstance(stmt, tirx.Evaluate)
        and isinstance(stmt.value, tvm.ir.Call)
        and len(stmt.value.args) == 1
        and isinstance(stmt.value.args[0], tvm.ir.StringImm)
        and str(stmt.value.args[0].value) == PARALLEL_FOR_MARKER
    )


def check_prepared_for_c(mod: tvm.IRModule, caller: str) -> None:
    """Raise ValueError when ``mod`` has a parallel loop the C path would print serially.

    Raises:
        ValueError: naming the loops and how to prepare the module.
    """
    loops = unmarked_parallel_loops(mod)
    if loops:
        raise ValueError(
            f"{caller} mod: expected a module prepared for C (parallel loops marked), "
            f"got unmarked parallel {', '.join(loops)}; lower it with "
            "tl_codegen_cpu.C_PIPELINE or call tl_codegen_cpu.prepare_for_c(mod) first"
        )


#: How TVM's analyzer reports a variable bound twice, which its common-subexpression
#: pass caused by merging copies of a ``Let`` (`generate_c_source` retries without it).
_CSE_DOUBLE_BINDING = "conflicts with previous binding"


#: How TVM's C code generator reports an array whose size is not a constant: TVM's
#: buffer compaction shrank a tile to the range a run-time loop bound touches
#: (``for i in T.serial(n): if i < 8: S[i] = ...``); `generate_c_source` retries with
#: every tile kept whole.
_RUN_TIME_ARRAY_SIZE = "Can only handle constant size stack allocation"


def _compile_c(mod: tvm.IRModule, config: dict[str, Any]) -> Any:
    """TVM's C build of ``mod``, retried for each TVM failure a change of the input
    avoids (the messages above), each change made once; any other failure propagates."""
    whole_tiles = False
    while True:
        try:
            with sound_lowering(config, opt_level=3):
                return tvm.compile(mod, target="c")
        except Exception as error:
            message = str(error)
            if _CSE_DOUBLE_BINDING in message and not config.get("tirx.disable_cse_tir"):
                # TVM's common-subexpression pass merged copies of an expression that
                # binds variables (a bfloat16 rounding of an expanded exp2) and bound
                # one twice; gcc eliminates common subexpressions itself.
                config = {**config, "tirx.disable_cse_tir": True}
            elif _RUN_TIME_ARRAY_SIZE in message and not whole_tiles:
                mod, whole_tiles = keep_every_tile_whole(mod), True
            else:
                raise


def generate_c_source(mod: tvm.IRModule) -> str:
    """Return the C source of ``mod`` with OpenMP pragmas on its outermost parallel loops.

    ``mod`` must be lowered by `C_PIPELINE`, whose last stages prepare it for
    the C printer (`prepare_for_c` runs only those on a hand-built module).
    Never invokes a C compiler.

    Raises:
        TypeError, ValueError: for a module that is not an IRModule of
            PrimFuncs, or one whose parallel loops are not marked.
        ToolchainError: TVM's C code generation failed (its message as ``output``).
    """
    check_module(mod, "generate_c_source")
    check_prepared_for_c(mod, "generate_c_source")
    # TVM's C printer emits OpenCL-style vector types, so vectorization is off (gcc
    # vectorizes the scalar lane loops); StorageRewrite would merge the stack arrays
    # into new allocations without their disable_lower_builtin annotation.
    config = {"tirx.disable_vectorize": True, "tirx.disable_storage_rewrite": True}
    prepared = keep_data_indexed_tiles_whole(mod)
    try:
        lib = _compile_c(prepared, config)
    except Exception as error:  # TVM raises RuntimeError/ValueError/TypeError subclasses
        raise ToolchainError(
            f"TVM's C code generation failed: {type(error).__name__}", output=str(error)
        ) from error
    return patch_c_source(str(lib.mod.inspect_source()))
