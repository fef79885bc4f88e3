"""What the generated CUDA holds, from its SASS: GEMM, flash attention, softmax, RMS norm.

Run: .venv/bin/python benchmarks/gpu_sass.py [--arch sm_80 sm_90] [--kernels gemm ...]
                                             [--tilelang-python PATH]

No GPU needed: each program of ``benchmarks/gpu_programs.py`` (TileLang's example
configurations: fp16 GEMM 4096^3 with 128x128x32 blocks, 3 stages and 128
threads; flash attention batch 4, 16 heads, sequence 2048, head dim 64 and
128, 64x64 blocks, one stage, 128 threads; fp32 softmax and RMS norm 8192^2)
is lowered through the project's cuda backend (``tl_jit.lower``), compiled
to a cubin with the backend's nvcc flags plus ``-Xptxas -v``, and read with
``cuobjdump -sass`` / ``-res-usage`` (the ``nvidia-cuda-cuobjdump`` wheel of
requirements-dev.txt). One row per kernel and arch:

* ``TC``: tensor-core instructions (HMMA/IMMA/HGMMA...); ``LDGSTS``: async
  copies (``cp.async``), ``+N tma`` when TMA loads (UTMALDG) appear;
  ``LDSM``: ``ldmatrix``;
* ``LDG``/``STG``: global loads/stores by width, ``bits:count``;
* ``regs``; ``spill``: spill stores + loads in bytes (ptxas -v);
  ``local``: stack frame bytes / LDL+STL instructions; ``smem``: static +
  dynamic shared bytes;
* ``loop/tile``: the hot loop's instructions per K tile (KV tile) per warp,
  as ``benchmarks/sass_facts.py`` explains (``>=``: a lower bound).

``--tilelang-python PY --tilelang-examples DIR`` name a Python with TileLang
installed (a throwaway venv: ``pip install tilelang`` with its dependencies)
and TileLang's ``examples/`` folder: TileLang lowers its own GEMM and
``flash_attention/example_mha_fwd_bhsd.py`` at the sizes above for sm_80,
nvcc compiles its sources here with its headers (``--use_fast_math`` for
flash attention, as TileLang does for that example's ``TL_ENABLE_FAST_MATH``;
this project ignores that key, so its exp2 stays IEEE), and they get rows of
their own. Without them (or when that build fails, which is said) the
figures TileLang 0.1.15 gave for sm_80 when this benchmark was written are
printed as the reference rows (recorded, not measured here).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gpu_programs
import sass_facts

Program = Callable[[], tuple[Any, list[int], int]]

PROGRAMS: dict[str, Program] = {
    "gemm": gpu_programs.gemm_program,
    "flash_attention_d64": lambda: gpu_programs.attention_program(dim=64),
    "flash_attention_d128": lambda: gpu_programs.attention_program(dim=128),
    "softmax": gpu_programs.softmax_program,
    "rms_norm": gpu_programs.rms_norm_program,
}

#: TileLang 0.1.15 with nvcc 13, sm_80, as recorded when this benchmark was written
#: (cuobjdump -sass / ptxas -v on its builds of the two examples).
TILELANG_RECORDED = [
    ("gemm (TileLang, recorded)", "192", "24", "48", "", "32-bit", "224", "0", "0", "", "143"),
    (
        "flash_attention (TileLang, recorded)",
        "128",
        "16",
        "72",
        "",
        "128",
        "138",
        "0",
        "0",
        "",
        "364",
    ),
]

HEADER = (
    "kernel",
    "arch",
    "TC",
    "LDGSTS",
    "LDSM",
    "LDG",
    "STG",
    "regs",
    "spill",
    "local",
    "smem",
    "loop/tile",
)


def measure(name: str, program: Program, arch: str, work: Path) -> list[tuple[str, ...]]:
    """Rows (one per device function) for ``program`` built for ``arch``.

    Raises:
        sass_facts.SassToolError: nvcc or cuobjdump is missing or failed.
    """
    import tl_jit

    func, _out_idx, tiles = program()
    sources = tl_jit.lower(func, target={"kind": "cuda", "arch": arch}, execution_backend="source")
    [source_name] = [f for f in sources.files if f.endswith(".cu")]
    text = sources.files[source_name]
    source = work / f"{name}-{arch}.cu"
    source.write_bytes(text if isinstance(text, bytes) else text.encode())
    cubin, report = sass_facts.compile_cubin(source, work / f"{name}-{arch}.cubin", arch)
    dynamic = {
        launch.kernel_name: launch.dynamic_shared_memory_bytes for launch in sources.launches
    }
    rows = []
    facts = sass_facts.cubin_facts(cubin, report, tiles)
    for fact in facts:
        label = name if len(facts) == 1 else f"{name}:{fact.name}"
        rows.append(row(label, arch, fact, int(dynamic.get(fact.name, 0))))
    return rows


def row(
    label: str, arch: str, fact: sass_facts.KernelFacts, dynamic_shared: int | None
) -> tuple[str, ...]:
    """One table row for `KernelFacts` (columns as `HEADER`); ``dynamic_shared`` None: the
    launch's dynamic shared memory is not known (TileLang's kernels)."""
    copies = str(fact.async_copies) + (f" +{fact.tma_loads} tma" if fact.tma_loads else "")
    used = fact.resources
    local = f"{used.stack}/{fact.local_loads + fact.local_stores}"
    smem = f"{used.shared}+{'?' if dynamic_shared is None else dynamic_shared}"
    loop = fact.hot_loop.describe() if fact.hot_loop is not None else "-"
    return (
        label,
        arch,
        str(fact.tensor_core),
        copies,
        str(fact.ldsm),
        sass_facts.format_widths(fact.global_loads),
        sass_facts.format_widths(fact.global_stores),
        str(used.registers),
        str(fact.spills),
        local,
        smem,
        loop,
    )


#: Run by the TileLang Python: lowers TileLang's own example programs (their files read
#: from --tilelang-examples) for the arch and writes each kernel's CUDA source.
_TILELANG_SCRIPT = r"""
import importlib.util, json, sys
from pathlib import Path
import tilelang
from tvm.target import Target
out, arch, examples = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])

def module(relative):
    spec = importlib.util.spec_from_file_location(Path(relative).stem, examples / relative)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded

gemm = module("gemm/example_gemm.py")
attention = module("flash_attention/example_mha_fwd_bhsd.py")
funcs = {"gemm": gemm.matmul.get_tir(M=4096, N=4096, K=4096, block_M=128, block_N=128, block_K=32)}
for dim in (64, 128):
    funcs[f"flash_attention_d{dim}"] = attention.flashattn.jit_impl.get_tir(
        4, 16, 2048, 2048, dim, False, block_M=64, block_N=64, num_stages=1, threads=128)
target = Target({"kind": "cuda", "arch": arch})
for name, func in funcs.items():
    with target:
        artifact = tilelang.lower(func, target=target)
    (out / f"{name}.cu").write_text(artifact.kernel_source)
print(json.dumps({"tilelang": tilelang.__version__}))
"""
#: TileLang's kernels: source-loop iterations, and whether the example turns on
#: ``TL_ENABLE_FAST_MATH`` (TileLang then compiles with ``--use_fast_math``).
PEER_KERNELS = {
    "gemm": (4096 // 32, False),
    "flash_attention_d64": (2048 // 64, True),
    "flash_attention_d128": (2048 // 64, True),
}


def tilelang_rows(
    python: str, examples: Path, arch: str, work: Path
) -> tuple[list[tuple[str, ...]], str]:
    """Rows for TileLang's own builds of its examples (``examples``: TileLang's
    ``examples/`` folder), through ``python`` (a Python with TileLang installed), compiled
    here with nvcc and TileLang's headers; ``([], reason)`` when that fails."""
    script = work / "tilelang_peer.py"
    script.write_text(_TILELANG_SCRIPT)
    peer = work / "tilelang"
    peer.mkdir()
    done = subprocess.run(
        [python, str(script), str(peer), arch, str(examples)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return [], f"TileLang build failed: {tail[0]}"
    version = json.loads(done.stdout.strip().splitlines()[-1])["tilelang"]
    options = tilelang_include_options(python)
    rows = []
    for name, (tiles, fast_math) in PEER_KERNELS.items():
        flags = [*options, "--use_fast_math"] if fast_math else options
        try:
            cubin, report = sass_facts.compile_cubin(
                peer / f"{name}.cu", peer / f"{name}.cubin", arch, flags
            )
        except sass_facts.SassToolError as exc:
            return [], f"nvcc refused TileLang's {name}: {str(exc).splitlines()[-1]}"
        for fact in sass_facts.cubin_facts(cubin, report, tiles):
            rows.append(row(f"{name} (TileLang {version})", arch, fact, None))
    return rows, ""


def tilelang_include_options(python: str) -> list[str]:
    """The include directories TileLang's generated CUDA needs (its templates, CUTLASS)."""
    done = subprocess.run(
        [python, "-c", "import tilelang, os; print(os.path.dirname(tilelang.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    )
    root = Path(done.stdout.strip())
    candidates = [root / "src", root / "3rdparty" / "cutlass" / "include", root / "3rdparty"]
    return [f"-I{c}" for c in candidates if c.is_dir()] + [
        "-std=c++17",
        "--expt-relaxed-constexpr",
        "-w",
    ]


def print_table(rows: list[tuple[str, ...]]) -> None:
    """Rows as a markdown table (the form docs/performance.md records)."""
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    for cells in rows:
        print("| " + " | ".join(cells) + " |")


def main() -> int:
    """Build, read and print; returns the exit status (1 when a tool is missing)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", nargs="+", default=["sm_80", "sm_90"])
    parser.add_argument("--kernels", nargs="+", default=list(PROGRAMS), choices=list(PROGRAMS))
    parser.add_argument("--tilelang-python", default=None, help="a Python with TileLang")
    parser.add_argument("--tilelang-examples", default=None, help="TileLang's examples/ dir")
    args = parser.parse_args()
    rows: list[tuple[str, ...]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="tl-gpu-sass-") as scratch:
        work = Path(scratch)
        try:
            for arch in args.arch:
                for name in args.kernels:
                    rows += measure(name, PROGRAMS[name], arch, work)
        except sass_facts.SassToolError as exc:
            print(f"gpu_sass: {exc}", file=sys.stderr)
            return 1
        peer: list[tuple[str, ...]] = []
        if args.tilelang_python and args.tilelang_examples:
            peer, reason = tilelang_rows(
                args.tilelang_python, Path(args.tilelang_examples), "sm_80", work
            )
            if reason:
                notes.append(reason)
        else:
            notes.append("no --tilelang-python/--tilelang-examples given")
    if not peer:
        notes.append(
            "TileLang rows: the figures recorded for TileLang 0.1.15, sm_80, not measured here"
        )
        peer = [(r[0], "sm_80", *r[1:]) for r in TILELANG_RECORDED]
    print_table(rows + peer)
    for note in notes:
        print(f"gpu_sass: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
