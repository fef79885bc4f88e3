"""The core names no target kind: every target fact comes from a backend's descriptor;
and tl_runtime names no vendor API (its device launchers are plug-ins; see the end).

`tl_jit`, `tl_backend_api`, `tl_passes` and `tl_runtime` must not branch on,
look up or mention a target kind by name: a new backend package brings its
kinds, aliases, probes and launcher without an edit in them. This test reads
their sources (docstrings and comments excluded, since docs may give
examples) and fails on any string literal that uses a kind name as a kind:

* the whole literal is a kind (``"cuda"``, ``kind == "c"``, ``("c", "llvm")``);
* a kind quoted inside a message (``"expected 'cuda'"``);
* a kind followed by target options (``"cuda -arch=sm_90"``).

The one-letter ``c`` is also an ordinary name (T.gemm's C operand, a loop
variable), so a literal ``"c"`` handed to a call as an argument counts only
when the call builds a target (``Target("c")``) or the keyword says it is one
(``kind="c"``); everywhere else (comparisons, collections, assignments) it
counts. The fragments of an f-string are read by the second and third rules
only (``f"    c{i}"`` holds no kind).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

CORE_PACKAGES = {
    "tl_jit": REPO / "packages" / "tl-jit" / "src" / "tl_jit",
    "tl_backend_api": REPO / "packages" / "tl-backend-api" / "src" / "tl_backend_api",
    "tl_passes": REPO / "packages" / "tl-passes" / "src" / "tl_passes",
    "tl_runtime": REPO / "packages" / "tl-runtime" / "src" / "tl_runtime",
}

#: Target kind names (TVM's and the aliases users write) the core must not use.
KIND_NAMES = ("c", "llvm", "cuda", "nvptx", "rocm", "hip", "metal", "webgpu", "opencl", "vulkan")

_KIND = "|".join(KIND_NAMES)
_QUOTED = re.compile(rf"""(['"`])({_KIND})\1""")
_WITH_OPTIONS = re.compile(rf"(?:^|\s)({_KIND}) -\w")


def _docstring_nodes(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
        ):
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    # A bare string statement after an assignment documents it (attribute docstrings).
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for statement in body:
                if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                    found.add(id(statement.value))
    return found


def kind_names_in(text: str) -> list[str]:
    """The kind names a string literal uses as kinds (rules in the module docstring)."""
    stripped = text.strip()
    if stripped in KIND_NAMES:
        return [stripped]
    names = [match.group(2) for match in _QUOTED.finditer(text)]
    names += [match.group(1) for match in _WITH_OPTIONS.finditer(text)]
    return names


_TARGET_KEYWORDS = frozenset({"kind", "target", "target_host", "host", "target_kind"})


def _call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _an_ordinary_name(node: ast.Constant, parents: dict[int, ast.AST]) -> bool:
    """True when ``node`` is an argument of a call that does not build a target."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.keyword):
        if parent.arg in _TARGET_KEYWORDS:
            return False
        parent = parents.get(id(parent))
    return isinstance(parent, ast.Call) and _call_name(parent) != "Target"


def offending_literals(source: str) -> Iterator[tuple[int, str, str]]:
    """``(line, kind, literal)`` for every literal of ``source`` that names a kind."""
    tree = ast.parse(source)
    docstrings = _docstring_nodes(tree)
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    fragments = {
        id(part)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for part in node.values
    }
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        if id(node) in docstrings:
            continue
        text = node.value
        if id(node) in fragments:
            text = f"<{text}>"  # a fragment is never a whole literal
        elif text.strip() == "c" and _an_ordinary_name(node, parents):
            continue
        for kind in kind_names_in(text):
            yield node.lineno, kind, node.value


def _sources() -> list[Path]:
    return sorted(path for root in CORE_PACKAGES.values() for path in root.rglob("*.py"))


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        ("cuda", ["cuda"]),
        (" c ", ["c"]),
        ("expected 'rocm' here", ["rocm"]),
        ('kind "hip"', ["hip"]),
        ("cuda -arch=sm_90", ["cuda"]),
        ("dst", []),
        ("cuda-python", []),
        ("a C compiler", []),
        ("metallic", []),
        ("kernel.c", []),
    ],
)
def test_the_rules_catch_kinds_and_only_kinds(literal: str, expected: list[str]) -> None:
    assert kind_names_in(literal) == expected


def test_docstrings_and_comments_are_not_read() -> None:
    source = '"""Targets such as "cuda"."""\nX = 1\n"""About X: \'cuda\'."""\n# "cuda"\n'
    assert list(offending_literals(source)) == []
    assert list(offending_literals('if kind == "cuda":\n    pass\n')) == [(1, "cuda", "cuda")]
    assert list(offending_literals("f\"{x} on 'metal'\"\n")) == [(1, "metal", " on 'metal'")]


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        ('kind == "c"', True),
        ('KINDS = ("c", "llvm")', True),
        ('Target("c")', True),
        ('make(kind="c")', True),
        ('fresh("c")', False),
        ('loop_nest(x, name="c")', False),
        ('f"    c{i} = last[{i}]"', False),
        ('fresh("cuda")', True),
    ],
)
def test_a_one_letter_c_counts_only_where_it_is_a_kind(source: str, flagged: bool) -> None:
    assert bool(list(offending_literals(source))) is flagged


def test_the_core_names_no_target_kind() -> None:
    assert all(root.is_dir() for root in CORE_PACKAGES.values()), CORE_PACKAGES
    problems = []
    for path in _sources():
        for line, kind, literal in offending_literals(path.read_text(encoding="utf-8")):
            problems.append(f"{path.relative_to(REPO)}:{line}: {kind!r} in {literal!r}")
    assert not problems, (
        "target kinds named in the core (declare them in the backend's descriptor "
        "instead):\n" + "\n".join(problems)
    )


# ---------------------------------------------------------------- vendor API names
# A device's launcher is a runtime plug-in (tl-runtime-cuda for CUDA), so tl_runtime
# itself holds no vendor API name: no driver call, no compiler, no binary format, no
# vendor package. Unlike kinds above, these are read everywhere in its text: code,
# docstrings, comments, native sources and the distribution's metadata.

RUNTIME_TEXT = [
    *sorted(
        path
        for path in CORE_PACKAGES["tl_runtime"].rglob("*")
        if path.suffix in {".py", ".pyx", ".pxi", ".pxd", ".c", ".h"}
    ),
    REPO / "packages" / "tl-runtime" / "pyproject.toml",
    REPO / "packages" / "tl-runtime" / "README.md",
]

#: CUDA's names: the platform and its packages (any case: "CUDA", "cuda-python",
#: "cuda.bindings"), NVRTC and nvcc, the cubin/fatbin/PTX formats, GPU arch names
#: ("sm_90"), and the driver API's functions ("cuInit", "cuModuleLoadData",
#: "cuLaunchKernel", ...) and types and constants ("CUdevice", "CU_DEVICE_ATTRIBUTE_...").
VENDOR_NAMES = (
    re.compile(r"cuda|nvrtc|nvcc|cubin|fatbin|\bptx\b|\bsm_\d+", re.IGNORECASE),
    re.compile(r"\bcu[A-Z][A-Za-z]*"),
    re.compile(r"\bCU[a-z_]\w*"),
)


def vendor_names_in(text: str) -> list[str]:
    """Every vendor API name in ``text`` (the patterns of `VENDOR_NAMES`)."""
    return [match.group(0) for pattern in VENDOR_NAMES for match in pattern.finditer(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("driver.cuInit(0)", ["cuInit"]),
        ("cuModuleLoadData(image)", ["cuModuleLoadData"]),
        ("cuLaunchKernel", ["cuLaunchKernel"]),
        ("nvrtcCompileProgram", ["nvrtc"]),
        ('"cuda-python"', ["cuda"]),
        ("2 CUDA, 10 ROCm", ["CUDA"]),
        (
            "attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR",
            ["CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"],
        ),
        ("driver.CUdevice_attribute", ["CUdevice_attribute"]),
        ("a .cubin image for sm_90", ["cubin", "sm_90"]),
        ("current cumsum CUSTOM cursor", []),
        ("the device's launcher is a plug-in", []),
    ],
)
def test_the_vendor_rules_catch_vendor_names_and_only_those(text: str, expected: list[str]) -> None:
    assert vendor_names_in(text) == expected


def test_tl_runtime_holds_no_cuda_name() -> None:
    assert all(path.is_file() for path in RUNTIME_TEXT), RUNTIME_TEXT
    assert len(RUNTIME_TEXT) > 10  # the package's sources were found
    problems = []
    for path in RUNTIME_TEXT:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for name in vendor_names_in(line):
                problems.append(f"{path.relative_to(REPO)}:{number}: {name!r} in {line.strip()!r}")
    assert not problems, (
        "CUDA names in tl_runtime (a device's launcher belongs in its runtime plug-in, "
        "e.g. packages/tl-runtime-cuda):\n" + "\n".join(problems)
    )
