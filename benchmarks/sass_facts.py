"""Facts about compiled CUDA kernels read from their SASS, without a GPU.

Input is what NVIDIA's tools print for a cubin: ``cuobjdump -sass`` (the
machine code), ``cuobjdump -res-usage`` (registers, stack, shared and local
memory per function) and ``ptxas -v`` through ``nvcc -Xptxas -v`` (registers,
stack frame, spill stores and loads). `kernel_facts` turns them into one
`KernelFacts` per device function: instruction counts by kind and the hot
loop's size.

Counted instruction kinds (by SASS opcode, the text before the first ``.``):

* tensor-core: ``HMMA`` (fp16/bf16/tf32 ``mma``), ``IMMA`` (int8), ``HGMMA``
  and ``IGMMA``/``QGMMA`` (``wgmma``), ``QMMA`` (fp8), ``DMMA`` (fp64);
* async copies: ``LDGSTS`` (``cp.async``, global to shared) and ``UTMALDG``
  (a TMA load);
* ``LDSM`` (``ldmatrix``);
* global loads and stores (``LDG``/``STG``) by access width in bits: the
  modifiers ``U8``/``S8`` (8), ``U16``/``S16`` (16), ``64``, ``128``; none
  of those is a 32-bit access;
* local memory: ``LDL``/``STL`` (spills and thread-local arrays).

**The hot loop.** A loop in SASS is a backward branch: a ``BRA`` whose
target lies at or before its own address (the one ``BRA`` to itself after
the last ``EXIT`` is padding and not a loop). Its body is every instruction
from the target to the branch. Loops nest by containment. For every
outermost loop the instructions one iteration issues are counted: its
body, plus for each inner loop its body times (trip count - 1), the trip
count read from the inner loop's counter (`_trip_count`: a register
incremented by an immediate step and compared with an immediate limit, so
``limit / step`` iterations); an inner loop whose count cannot be read is
counted once and the figure is marked as a lower bound. The hot loop is
the outermost loop with the most instructions per iteration (for a GEMM
the K loop, for flash attention the KV loop). ptxas may unroll the source
loop, so one SASS iteration can cover several K tiles: given the number of
tiles the source loop runs (``tiles``), the tiles per iteration are
``round(tiles / trips)`` where the loop's own trip count is readable, else
1 (a run-time bound). Instructions per K tile = per iteration / tiles per
iteration. SASS instructions are issued once per warp, so this is the
per-warp figure. It is a static estimate: predicated-off instructions
count, and a loop peeled by software pipelining counts the steady-state
body only. On TileLang 0.1.15's own sm_80 builds of its example GEMM and
flash attention (benchmarks/gpu_sass.py) this gives 143 and 364, the
figures recorded for them by hand.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

TENSOR_CORE_OPCODES = frozenset({"HMMA", "IMMA", "HGMMA", "IGMMA", "QGMMA", "QMMA", "DMMA"})
ASYNC_COPY_OPCODES = frozenset({"LDGSTS"})
TMA_LOAD_OPCODES = frozenset({"UTMALDG"})
_WIDTH_MODIFIERS = {"U8": 8, "S8": 8, "U16": 16, "S16": 16, "64": 64, "128": 128}

_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;")
_PREDICATE = re.compile(r"^(@!?U?P[T0-9]+)\s+")
_BRANCH_TARGET = re.compile(r"0x([0-9a-fA-F]+)")
_IMMEDIATE = re.compile(r"^-?0x[0-9a-fA-F]+$")


@dataclasses.dataclass(frozen=True)
class Instruction:
    """One SASS instruction: its byte address, guard predicate (``@P0``, ``@!P1`` or
    ``""``), opcode with modifiers (``LDG.E.128``) and operand text."""

    address: int
    predicate: str
    opcode: str
    operands: str

    @property
    def base(self) -> str:
        """The opcode without modifiers (``LDG`` for ``LDG.E.128``)."""
        return self.opcode.split(".", 1)[0]


@dataclasses.dataclass(frozen=True)
class Loop:
    """A backward branch's loop: ``[start, end]`` byte addresses, its instructions, the
    loops it contains and its trip count where the counter shows it (else None)."""

    start: int
    end: int
    body: tuple[Instruction, ...]
    inner: tuple[Loop, ...]
    trips: int | None

    def per_iteration(self) -> tuple[int, bool]:
        """Instructions one iteration issues, inner loops at their trip counts, and whether
        every inner trip count was known (False: the figure is a lower bound)."""
        total = len(self.body)
        exact = True
        for loop in self.inner:
            inner_total, inner_exact = loop.per_iteration()
            exact = exact and inner_exact and loop.trips is not None
            total += inner_total - len(loop.body)  # the body is already in ours once
            total += inner_total * ((loop.trips or 1) - 1)
        return total, exact


@dataclasses.dataclass(frozen=True)
class HotLoop:
    """The hot loop of a kernel (the module docstring says how it is found and counted)."""

    start: int
    end: int
    per_iteration: int
    exact: bool
    tiles_per_iteration: int

    @property
    def per_tile(self) -> float:
        """Instructions per source-loop iteration (K tile or KV tile), per warp."""
        return self.per_iteration / self.tiles_per_iteration

    def describe(self) -> str:
        """``143`` or ``>=6670`` (a lower bound), with the unroll when above 1."""
        text = f"{'' if self.exact else '>='}{self.per_tile:.0f}"
        if self.tiles_per_iteration > 1:
            text += f" (x{self.tiles_per_iteration} unrolled)"
        return text


@dataclasses.dataclass(frozen=True)
class Resources:
    """What ``cuobjdump -res-usage`` and ``ptxas -v`` report for one function (bytes)."""

    registers: int = 0
    stack: int = 0
    shared: int = 0
    local: int = 0
    spill_stores: int = 0
    spill_loads: int = 0


@dataclasses.dataclass(frozen=True)
class KernelFacts:
    """Instruction counts and resources of one device function."""

    name: str
    instructions: int
    tensor_core: int
    async_copies: int
    tma_loads: int
    ldsm: int
    global_loads: Mapping[int, int]
    global_stores: Mapping[int, int]
    local_loads: int
    local_stores: int
    resources: Resources
    hot_loop: HotLoop | None

    @property
    def spills(self) -> int:
        """Spilled bytes, stores plus loads (ptxas -v)."""
        return self.resources.spill_stores + self.resources.spill_loads


def parse_sass(text: str) -> dict[str, list[Instruction]]:
    """The instructions of every function in ``cuobjdump -sass`` (or ``nvdisasm``) output.

    Returns:
        Function name -> its instructions in address order (empty when ``text`` holds no
        function). Encoding-only continuation lines are skipped.
    """
    functions: dict[str, list[Instruction]] = {}
    current: list[Instruction] | None = None
    for line in text.splitlines():
        header = _FUNCTION.match(line)
        if header:
            current = functions.setdefault(header.group(1), [])
            continue
        match = _INSTRUCTION.match(line)
        if match is None or current is None:
            continue
        body = match.group(2).strip()
        predicate = ""
        guard = _PREDICATE.match(body)
        if guard:
            predicate = guard.group(1)
            body = body[guard.end() :]
        opcode, _, operands = body.partition(" ")
        current.append(Instruction(int(match.group(1), 16), predicate, opcode, operands.strip()))
    return {name: _without_padding(found) for name, found in functions.items()}


def _without_padding(instructions: list[Instruction]) -> list[Instruction]:
    """``instructions`` less the alignment padding ptxas appends: the ``BRA`` to itself
    after the last ``EXIT`` and the ``NOP`` s after it."""
    end = len(instructions)
    while end and instructions[end - 1].base == "NOP":
        end -= 1
    if end and _branch_target(instructions[end - 1]) == instructions[end - 1].address:
        end -= 1
    return instructions[:end]


def parse_resource_usage(text: str) -> dict[str, Resources]:
    """Registers, stack, shared and local bytes per function from ``cuobjdump -res-usage``."""
    found: dict[str, Resources] = {}
    name: str | None = None
    for line in text.splitlines():
        header = re.match(r"^\s*Function\s+(\S+?):\s*$", line)
        if header:
            name = header.group(1)
            continue
        if name is None or "REG:" not in line:
            continue
        fields = dict(re.findall(r"(\w+):(\d+)", line))
        found[name] = Resources(
            registers=int(fields.get("REG", 0)),
            stack=int(fields.get("STACK", 0)),
            shared=int(fields.get("SHARED", 0)),
            local=int(fields.get("LOCAL", 0)),
        )
        name = None
    return found


def parse_ptxas_verbose(text: str) -> dict[str, Resources]:
    """Registers, stack frame and spill bytes per entry function from ``ptxas -v`` output."""
    found: dict[str, Resources] = {}
    name: str | None = None
    stack = stores = loads = 0
    for line in text.splitlines():
        header = re.search(r"Function properties for (\S+)", line)
        if header:
            name = header.group(1)
            continue
        frame = re.search(
            r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line
        )
        if frame and name is not None:
            stack, stores, loads = (int(v) for v in frame.groups())
            continue
        used = re.search(r"Used (\d+) registers", line)
        if used and name is not None:
            smem = re.search(r"(\d+) bytes smem", line)
            found[name] = Resources(
                registers=int(used.group(1)),
                stack=stack,
                shared=int(smem.group(1)) if smem else 0,
                spill_stores=stores,
                spill_loads=loads,
            )
            name, stack, stores, loads = None, 0, 0, 0
    return found


def access_width(instruction: Instruction) -> int:
    """The bits one ``LDG``/``STG``/``LDS``/``STS`` moves per thread (32 unless a width
    modifier says otherwise)."""
    for modifier in instruction.opcode.split(".")[1:]:
        if modifier in _WIDTH_MODIFIERS:
            return _WIDTH_MODIFIERS[modifier]
    return 32


def _branch_target(instruction: Instruction) -> int | None:
    if instruction.base not in {"BRA", "BRX", "JMP"}:
        return None
    found = _BRANCH_TARGET.search(instruction.operands)
    return int(found.group(1), 16) if found else None


def _immediate(text: str) -> int | None:
    text = text.strip()
    return int(text, 16) if _IMMEDIATE.match(text) else None


def _trip_count(body: Sequence[Instruction]) -> int | None:
    """``limit / step`` when a register of ``body`` is incremented by an immediate step
    (``IADD3 R, R, step, RZ``, ``VIADD R, R, step``, their uniform ``UIADD3`` form) and
    compared with an immediate limit (``ISETP.* P, PT, R, limit, PT`` or ``UISETP``);
    else None (a count-down loop, or a bound read at run time)."""
    steps: dict[str, int] = {}
    for instruction in body:
        # IADD3 d, a, b, c is a + b + c; VIADD d, a, b is a + b (IMAD's operands multiply).
        if instruction.base not in {"IADD3", "UIADD3", "VIADD", "IADD"}:
            continue
        parts = [p.strip() for p in instruction.operands.split(",")]
        if len(parts) >= 3 and parts[0] == parts[1]:
            step = _immediate(parts[2])
            if step is not None and step > 0:
                steps[parts[0]] = step
    for instruction in body:
        if instruction.base not in {"ISETP", "UISETP"}:
            continue
        parts = [p.strip() for p in instruction.operands.split(",")]
        if len(parts) < 4:
            continue
        register, limit = parts[2], _immediate(parts[3])
        if register in steps and limit is not None and limit > 0:
            return max(limit // steps[register], 1)
    return None


def find_loops(instructions: Sequence[Instruction]) -> list[Loop]:
    """The outermost loops of a function (each with its inner loops), in address order.

    Backward branches to one target are one loop (a ``continue`` adds a second branch
    to the loop's head): it ends at the last of them.
    """
    ends: dict[int, int] = {}
    for instruction in instructions:
        target = _branch_target(instruction)
        # target == address: the BRA-to-itself padding after EXIT, not a loop.
        if target is not None and target < instruction.address:
            ends[target] = max(ends.get(target, target), instruction.address)
    spans = sorted(ends.items())

    def nest(candidates: list[tuple[int, int]]) -> list[Loop]:
        loops: list[Loop] = []
        for start, end in candidates:
            if any(s <= start and end <= e and (s, e) != (start, end) for s, e in candidates):
                continue  # inside another candidate: built as its child
            inside = [
                (s, e) for s, e in candidates if start <= s and e <= end and (s, e) != (start, end)
            ]
            body = tuple(i for i in instructions if start <= i.address <= end)
            children = tuple(nest(inside))
            # The loop's own counter lives outside its inner loops.
            own = [i for i in body if not any(c.start <= i.address <= c.end for c in children)]
            loops.append(Loop(start, end, body, children, _trip_count(own)))
        return loops

    return nest(spans)


def hot_loop(instructions: Sequence[Instruction], tiles: int | None = None) -> HotLoop | None:
    """The function's hot loop (module docstring), or None when it has no loop.

    Args:
        instructions: one function's instructions (`parse_sass`).
        tiles: how many iterations the source loop runs (K tiles of a GEMM); None
            assumes one source iteration per SASS iteration.
    """
    loops = find_loops(instructions)
    if not loops:
        return None
    best = max(loops, key=lambda loop: loop.per_iteration()[0])
    per_iteration, exact = best.per_iteration()
    tiles_per_iteration = 1
    if tiles is not None and best.trips is not None and best.trips > 0:
        tiles_per_iteration = max(round(tiles / best.trips), 1)
    return HotLoop(best.start, best.end, per_iteration, exact, tiles_per_iteration)


def count_facts(
    name: str,
    instructions: Sequence[Instruction],
    resources: Resources,
    tiles: int | None = None,
) -> KernelFacts:
    """`KernelFacts` of one function from its instructions and resources."""
    bases = Counter(i.base for i in instructions)
    loads = Counter(access_width(i) for i in instructions if i.base == "LDG")
    stores = Counter(access_width(i) for i in instructions if i.base == "STG")
    return KernelFacts(
        name=name,
        instructions=len(instructions),
        tensor_core=sum(bases[o] for o in TENSOR_CORE_OPCODES),
        async_copies=sum(bases[o] for o in ASYNC_COPY_OPCODES),
        tma_loads=sum(bases[o] for o in TMA_LOAD_OPCODES),
        ldsm=bases["LDSM"],
        global_loads=dict(sorted(loads.items())),
        global_stores=dict(sorted(stores.items())),
        local_loads=bases["LDL"],
        local_stores=bases["STL"],
        resources=resources,
        hot_loop=hot_loop(instructions, tiles),
    )


# -- tools ------------------------------------------------------------------------------


def find_tool(name: str) -> str | None:
    """``cuobjdump``/``nvdisasm``/``nvcc``: on PATH, in this Python's environment (the
    ``nvidia-cuda-cuobjdump``/``nvidia-cuda-nvdisasm`` wheels put them under
    ``site-packages/nvidia/*/bin``), or under ``$CUDA_HOME/bin``; None when absent."""
    found = shutil.which(name)
    if found:
        return found
    roots = {Path(p) for p in sys.path if p.endswith("site-packages")}
    roots.add(Path(sys.prefix))
    for root in sorted(roots):
        for candidate in sorted(root.glob(f"nvidia/*/bin/{name}")):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    candidate = Path(home) / "bin" / name
    return str(candidate) if os.access(candidate, os.X_OK) else None


class SassToolError(RuntimeError):
    """A tool is missing or failed (the message names it and what it printed)."""


def _run(command: Sequence[str]) -> str:
    done = subprocess.run(list(command), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SassToolError(f"{' '.join(command)} failed:\n{done.stderr}{done.stdout}")
    return done.stdout + done.stderr


def cubin_facts(
    cubin: Path, ptxas_verbose: str = "", tiles: Mapping[str, int] | int | None = None
) -> list[KernelFacts]:
    """`KernelFacts` for every function of ``cubin`` (``cuobjdump`` found by `find_tool`).

    Args:
        cubin: the cubin file.
        ptxas_verbose: ``ptxas -v`` output of the same compile (spills and stack frame);
            empty: those come from ``-res-usage`` alone (no spill figures).
        tiles: source-loop iterations for `hot_loop`: one count for every function, or
            function name -> count.

    Raises:
        SassToolError: cuobjdump is missing or failed.
    """
    tool = find_tool("cuobjdump")
    if tool is None:
        raise SassToolError(
            "cuobjdump not found: pip install nvidia-cuda-cuobjdump (requirements-dev.txt)"
        )
    functions = parse_sass(_run([tool, "-sass", str(cubin)]))
    usage = parse_resource_usage(_run([tool, "-res-usage", str(cubin)]))
    verbose = parse_ptxas_verbose(ptxas_verbose)
    facts = []
    for name, instructions in functions.items():
        used = usage.get(name, Resources())
        ptxas = verbose.get(name)
        if ptxas is not None:
            used = dataclasses.replace(
                used,
                stack=max(used.stack, ptxas.stack),
                spill_stores=ptxas.spill_stores,
                spill_loads=ptxas.spill_loads,
            )
        count = tiles if isinstance(tiles, int) or tiles is None else tiles.get(name)
        facts.append(count_facts(name, instructions, used, count))
    return facts


def compile_cubin(
    source: Path, output: Path, arch: str, options: Iterable[str] = ()
) -> tuple[Path, str]:
    """``nvcc -cubin -arch=ARCH -O3 -Xptxas -v`` (the cuda backend's cubin flags plus the
    verbose report): returns the cubin and what ptxas printed.

    Raises:
        SassToolError: nvcc is missing or failed.
    """
    nvcc = find_tool("nvcc")
    if nvcc is None:
        raise SassToolError("nvcc not found: install the CUDA toolkit or set CUDA_HOME")
    command = [nvcc, "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", *options]
    report = _run([*command, "-o", str(output), str(source)])
    return output, report


def format_widths(widths: Mapping[int, int]) -> str:
    """``128:4 32:2`` (bits:count, widest first), ``-`` for none."""
    if not widths:
        return "-"
    return " ".join(f"{bits}:{count}" for bits, count in sorted(widths.items(), reverse=True))
