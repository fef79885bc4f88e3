"""The artifact format: a typed, validated ``manifest.json`` reader/writer (JSON only, never pickle).

An artifact is a directory holding ``manifest.json`` plus the files it lists (the
compiled library, optionally its source). See docs/deploy.md for the schema.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any

from tl_runtime.errors import ArtifactError, HashMismatchError, SchemaVersionError

SCHEMA_VERSION = 1
"""The manifest schema version this runtime writes and reads."""

MANIFEST_NAME = "manifest.json"

DTYPES: frozenset[str] = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "bfloat16",
        "float32",
        "float64",
    }
)
"""Element types a parameter may declare."""

PARAM_KINDS = ("tensor", "scalar")
PARAM_ROLES = ("input", "output", "inout")
"""``input``: only read; ``output``: written (allocated by the runtime when in ``out_idx``,
else passed by the caller); ``inout``: written by the kernel and passed by the caller
(updated in place, never allocated)."""

WRITTEN_ROLES = frozenset({"output", "inout"})
"""Roles of the parameters a kernel writes: the caller's array itself must be passed."""

DEFAULT_ALIGNMENT = 64
"""The data alignment (bytes) of a tensor param whose manifest entry has no ``alignment``
(what the generated code assumed before manifests recorded it)."""
FILE_ROLES = ("library", "source", "other")

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")

Dim = int | str
"""A dimension: a non-negative int, or the name of a symbolic dim bound at call time."""

JSONValue = Any
"""A JSON-compatible value (kept ``Any`` because JSON is recursive)."""


def _fail(where: str, expected: str, got: object) -> ArtifactError:
    return ArtifactError(f"manifest {where}: expected {expected}, got {got!r}")


def _check_dim(where: str, dim: object) -> Dim:
    if isinstance(dim, bool) or not isinstance(dim, int | str):
        raise _fail(where, "an int >= 0 or a symbolic dim name", dim)
    if isinstance(dim, int) and dim < 0:
        raise _fail(where, "an int >= 0 or a symbolic dim name", dim)
    if isinstance(dim, str) and not _IDENTIFIER.match(dim):
        raise _fail(where, "a symbolic dim name (identifier)", dim)
    return dim


@dataclass(frozen=True)
class ParamSpec:
    """One kernel parameter.

    Attributes:
        name: the parameter's name (used in error messages).
        dtype: one of ``DTYPES``.
        kind: ``"tensor"`` or ``"scalar"``.
        shape: tensors only; each dim an int or a symbolic dim name shared across params.
        strides: tensors only; ``None`` means C-contiguous, else element strides (ints or names).
        role: ``"input"`` (read only), ``"output"`` (written; allocated by the runtime
            when in ``out_idx``) or ``"inout"`` (written in place in the caller's array).
        alignment: tensors only; the byte alignment (a power of two) the generated code
            assumes for the data pointer. A manifest entry without it means 64.
    """

    name: str
    dtype: str
    _: KW_ONLY
    kind: str = "tensor"
    shape: tuple[Dim, ...] = ()
    strides: tuple[Dim, ...] | None = None
    role: str = "input"
    alignment: int = DEFAULT_ALIGNMENT

    def __post_init__(self) -> None:
        where = f"param {self.name!r}"
        if not isinstance(self.name, str) or not _IDENTIFIER.match(self.name):
            raise _fail("param name", "an identifier", self.name)
        if self.dtype not in DTYPES:
            raise _fail(f"{where} dtype", f"one of {sorted(DTYPES)}", self.dtype)
        if self.kind not in PARAM_KINDS:
            raise _fail(f"{where} kind", f"one of {PARAM_KINDS}", self.kind)
        if self.role not in PARAM_ROLES:
            raise _fail(f"{where} role", f"one of {PARAM_ROLES}", self.role)
        alignment = self.alignment
        if (
            isinstance(alignment, bool)
            or not isinstance(alignment, int)
            or alignment < 1
            or alignment & (alignment - 1)
        ):
            raise _fail(f"{where} alignment", "a power of two >= 1 (bytes)", alignment)
        object.__setattr__(self, "shape", tuple(self.shape))
        for i, dim in enumerate(self.shape):
            _check_dim(f"{where} shape[{i}]", dim)
        if self.strides is not None:
            object.__setattr__(self, "strides", tuple(self.strides))
            assert self.strides is not None
            if len(self.strides) != len(self.shape):
                raise _fail(f"{where} strides", f"{len(self.shape)} entries", self.strides)
            for i, dim in enumerate(self.strides):
                _check_dim(f"{where} strides[{i}]", dim)
        if self.kind == "scalar":
            if self.shape or self.strides is not None:
                raise _fail(f"{where}", "no shape/strides for a scalar", self.shape)
            if self.role != "input":
                raise _fail(f"{where} role", "'input' for a scalar", self.role)

    @property
    def written(self) -> bool:
        """Whether the kernel writes this parameter (role ``output`` or ``inout``)."""
        return self.role in WRITTEN_ROLES

    @property
    def symbols(self) -> tuple[str, ...]:
        """Names of the symbolic dims used in this parameter's shape and strides."""
        dims = self.shape + (self.strides or ())
        return tuple(d for d in dims if isinstance(d, str))

    def to_json(self) -> dict[str, JSONValue]:
        """Return this parameter as a JSON-compatible dict."""
        out: dict[str, JSONValue] = {"name": self.name, "kind": self.kind, "dtype": self.dtype}
        if self.kind == "tensor":
            out["shape"] = list(self.shape)
            out["strides"] = None if self.strides is None else list(self.strides)
            out["alignment"] = self.alignment
        out["role"] = self.role
        return out

    @classmethod
    def from_json(cls, data: object) -> ParamSpec:
        """Build from the JSON dict; raises ArtifactError on any malformed field."""
        obj = _as_mapping("param", data)
        shape = obj.get("shape", [])
        strides = obj.get("strides")
        if not isinstance(shape, list):
            raise _fail("param shape", "a list", shape)
        if strides is not None and not isinstance(strides, list):
            raise _fail("param strides", "a list or null", strides)
        return cls(
            name=_as_str("param name", obj.get("name")),
            dtype=_as_str("param dtype", obj.get("dtype")),
            kind=_as_str("param kind", obj.get("kind", "tensor")),
            shape=tuple(shape),
            strides=None if strides is None else tuple(strides),
            role=_as_str("param role", obj.get("role", "input")),
            alignment=obj.get("alignment", DEFAULT_ALIGNMENT),
        )


@dataclass(frozen=True)
class FileEntry:
    """A file of the artifact: its path relative to the artifact directory, sha256 and role."""

    path: str
    sha256: str
    role: str = "other"

    def __post_init__(self) -> None:
        pure = Path(self.path)
        if not self.path or pure.is_absolute() or ".." in pure.parts or self.path == MANIFEST_NAME:
            raise _fail("file path", "a relative path inside the artifact", self.path)
        if not _HEX64.match(self.sha256):
            raise _fail(f"file {self.path!r} sha256", "64 lowercase hex digits", self.sha256)
        if self.role not in FILE_ROLES:
            raise _fail(f"file {self.path!r} role", f"one of {FILE_ROLES}", self.role)

    def to_json(self) -> dict[str, JSONValue]:
        """Return this entry as a JSON-compatible dict."""
        return {"path": self.path, "sha256": self.sha256, "role": self.role}

    @classmethod
    def from_json(cls, data: object) -> FileEntry:
        """Build from the JSON dict; raises ArtifactError on any malformed field."""
        obj = _as_mapping("file", data)
        return cls(
            path=_as_str("file path", obj.get("path")),
            sha256=_as_str("file sha256", obj.get("sha256")),
            role=_as_str("file role", obj.get("role", "other")),
        )


@dataclass(frozen=True)
class LaunchSpec:
    """Launch metadata for GPU targets.

    Attributes:
        grid: up to 3 grid extents, each an int or an expression string over symbolic dims.
        block: up to 3 block extents (ints or expressions).
        dynamic_shared_memory: bytes of dynamic shared memory (int or expression).
        extra: free-form, JSON-compatible extra fields a GPU adapter needs.
    """

    grid: tuple[Dim, ...] = (1, 1, 1)
    block: tuple[Dim, ...] = (1, 1, 1)
    dynamic_shared_memory: Dim = 0
    extra: Mapping[str, JSONValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("grid", "block"):
            dims = tuple(getattr(self, name))
            object.__setattr__(self, name, dims)
            if not 1 <= len(dims) <= 3:
                raise _fail(f"launch {name}", "1 to 3 extents", dims)
            for d in dims:
                if isinstance(d, bool) or not isinstance(d, int | str):
                    raise _fail(f"launch {name}", "ints or expression strings", dims)
        shm = self.dynamic_shared_memory
        if isinstance(shm, bool) or not isinstance(shm, int | str):
            raise _fail("launch dynamic_shared_memory", "an int or expression string", shm)
        object.__setattr__(self, "extra", dict(self.extra))

    def resolve(self, bindings: Mapping[str, int]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        """Evaluate grid, block and dynamic shared memory for the given symbolic dim values.

        Expressions may use ints, symbolic dim names, ``+ - * // % ( )``, unary minus,
        ``min(...)`` and ``max(...)``; nothing else is evaluated (no ``eval``).

        Returns:
            ``(grid, block, dynamic_shared_memory)`` as ints.

        Raises:
            ArtifactError: an expression is malformed or uses an unbound name.
        """
        grid = tuple(evaluate_dim_expression(d, bindings) for d in self.grid)
        block = tuple(evaluate_dim_expression(d, bindings) for d in self.block)
        return grid, block, evaluate_dim_expression(self.dynamic_shared_memory, bindings)

    def to_json(self) -> dict[str, JSONValue]:
        """Return the launch section as a JSON-compatible dict."""
        return {
            "grid": list(self.grid),
            "block": list(self.block),
            "dynamic_shared_memory": self.dynamic_shared_memory,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_json(cls, data: object) -> LaunchSpec:
        """Build from the JSON dict; raises ArtifactError on any malformed field."""
        obj = _as_mapping("launch", data)
        grid, block = obj.get("grid", [1, 1, 1]), obj.get("block", [1, 1, 1])
        if not isinstance(grid, list) or not isinstance(block, list):
            raise _fail("launch grid/block", "lists", (grid, block))
        return cls(
            grid=tuple(grid),
            block=tuple(block),
            dynamic_shared_memory=obj.get("dynamic_shared_memory", 0),
            extra=_as_mapping("launch extra", obj.get("extra", {})),
        )


@dataclass(frozen=True)
class Manifest:
    """The content of ``manifest.json``.

    Attributes:
        name: kernel name.
        entry_symbol: the library's function to call (its packed entry for tvm-ffi).
        params: every parameter, in the kernel's order.
        out_idx: indices of the params the runtime allocates and returns (role ``output``).
        target: the target as a JSON dict with at least ``kind`` (``"llvm"``, ``"c"``, ``"cuda"``...).
        execution_backend: the execution backend that made the artifact (e.g. ``"tvm_ffi"``).
        adapter: the default adapter key used to load it (``"tvm_ffi"``, ``"cython"``...).
        library: path (relative) of the file to load; must be listed in ``files``.
        files: every file of the artifact with its sha256 (empty in a draft given to
            ``write_artifact``, which fills it; a manifest read from disk always has them).
        launch: GPU launch metadata, or None for CPU targets.
        versions: package and toolchain versions that produced the artifact.
        schema_version: the schema version (``SCHEMA_VERSION`` when written by this runtime).
    """

    name: str
    entry_symbol: str
    params: tuple[ParamSpec, ...]
    target: Mapping[str, JSONValue]
    library: str
    files: tuple[FileEntry, ...] = ()
    out_idx: tuple[int, ...] = ()
    execution_backend: str = "tvm_ffi"
    adapter: str = "tvm_ffi"
    launch: LaunchSpec | None = None
    versions: Mapping[str, str] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise _fail("name", "a non-empty string", self.name)
        if not isinstance(self.entry_symbol, str) or not _IDENTIFIER.match(self.entry_symbol):
            raise _fail("entry_symbol", "a C identifier", self.entry_symbol)
        object.__setattr__(self, "params", tuple(self.params))
        object.__setattr__(self, "files", tuple(self.files))
        object.__setattr__(self, "target", dict(self.target))
        object.__setattr__(self, "versions", dict(self.versions))
        names = [p.name for p in self.params]
        if len(set(names)) != len(names):
            raise _fail("params", "unique names", names)
        if not isinstance(self.target.get("kind"), str):
            raise _fail("target", "a dict with a string 'kind'", self.target)
        for key in ("execution_backend", "adapter"):
            if not isinstance(getattr(self, key), str) or not getattr(self, key):
                raise _fail(key, "a non-empty string", getattr(self, key))
        out_idx = []
        for i in self.out_idx:
            if isinstance(i, bool) or not isinstance(i, int):
                raise _fail("out_idx", "ints", self.out_idx)
            j = i + len(self.params) if i < 0 else i
            if not 0 <= j < len(self.params):
                raise _fail("out_idx", f"indices into {len(self.params)} params", self.out_idx)
            if self.params[j].role != "output":
                raise _fail(f"out_idx {i}", "a param with role 'output'", self.params[j].name)
            out_idx.append(j)
        if len(set(out_idx)) != len(out_idx):
            raise _fail("out_idx", "no repeated index", self.out_idx)
        object.__setattr__(self, "out_idx", tuple(sorted(out_idx)))
        bound_by_inputs = {
            s for k, p in enumerate(self.params) if k not in self.out_idx for s in p.symbols
        }
        for k in self.out_idx:
            missing = set(self.params[k].symbols) - bound_by_inputs
            if missing:
                raise _fail(
                    f"out_idx param {self.params[k].name!r}",
                    "symbolic dims bound by an input parameter",
                    sorted(missing),
                )
        paths = [f.path for f in self.files]
        if len(set(paths)) != len(paths):
            raise _fail("files", "unique paths", paths)
        # A manifest without files is a draft for write_artifact, which fills them in.
        if paths and self.library not in paths:
            raise _fail("library", f"one of the listed files {paths}", self.library)
        for key, value in self.versions.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise _fail("versions", "a mapping of strings to strings", self.versions)
        if isinstance(self.schema_version, bool) or not isinstance(self.schema_version, int):
            raise _fail("schema_version", "an int", self.schema_version)

    @property
    def source_files(self) -> tuple[FileEntry, ...]:
        """The files with role ``source``."""
        return tuple(f for f in self.files if f.role == "source")

    def to_json(self) -> dict[str, JSONValue]:
        """Return the whole manifest as a JSON-compatible dict."""
        return {
            "schema_version": self.schema_version,
            "kernel": {"name": self.name, "entry_symbol": self.entry_symbol},
            "params": [p.to_json() for p in self.params],
            "out_idx": list(self.out_idx),
            "target": dict(self.target),
            "execution": {"backend": self.execution_backend, "adapter": self.adapter},
            "library": self.library,
            "launch": None if self.launch is None else self.launch.to_json(),
            "files": [f.to_json() for f in self.files],
            "versions": dict(self.versions),
        }

    def dumps(self) -> str:
        """Serialize to the JSON text written to ``manifest.json``."""
        return json.dumps(self.to_json(), indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, data: object) -> Manifest:
        """Build from the parsed JSON; checks the schema version first.

        Raises:
            SchemaVersionError: the schema version is missing or not ``SCHEMA_VERSION``.
            ArtifactError: any other field is malformed.
        """
        obj = _as_mapping("top level", data)
        version = obj.get("schema_version")
        if version != SCHEMA_VERSION or isinstance(version, bool):
            raise SchemaVersionError(
                f"manifest schema_version: expected {SCHEMA_VERSION} (what this tl-runtime "
                f"reads), got {version!r}; re-export the artifact or use a matching tl-runtime"
            )
        kernel = _as_mapping("kernel", obj.get("kernel"))
        execution = _as_mapping("execution", obj.get("execution"))
        params = obj.get("params")
        files = obj.get("files")
        out_idx = obj.get("out_idx", [])
        if not isinstance(params, list):
            raise _fail("params", "a list", params)
        if not isinstance(files, list) or not files:
            raise _fail("files", "a non-empty list", files)
        if not isinstance(out_idx, list):
            raise _fail("out_idx", "a list", out_idx)
        launch = obj.get("launch")
        return cls(
            name=_as_str("kernel name", kernel.get("name")),
            entry_symbol=_as_str("kernel entry_symbol", kernel.get("entry_symbol")),
            params=tuple(ParamSpec.from_json(p) for p in params),
            out_idx=tuple(out_idx),
            target=_as_mapping("target", obj.get("target")),
            execution_backend=_as_str("execution backend", execution.get("backend")),
            adapter=_as_str("execution adapter", execution.get("adapter")),
            library=_as_str("library", obj.get("library")),
            launch=None if launch is None else LaunchSpec.from_json(launch),
            files=tuple(FileEntry.from_json(f) for f in files),
            versions=_as_mapping("versions", obj.get("versions", {})),
            schema_version=version,
        )

    @classmethod
    def loads(cls, text: str) -> Manifest:
        """Parse ``manifest.json`` text; raises ArtifactError if it is not valid JSON."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ArtifactError(f"manifest.json is not valid JSON: {exc}") from None
        return cls.from_json(data)


def evaluate_dim_expression(expression: Dim, bindings: Mapping[str, int]) -> int:
    """Evaluate an int or an integer expression over symbolic dims (see ``LaunchSpec.resolve``).

    Raises:
        ArtifactError: malformed expression, unsupported construct, unbound name, or
            division by zero.
    """
    if isinstance(expression, int):
        return expression
    import ast

    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        raise _fail("launch expression", "an integer expression", expression) from None

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in bindings:
                raise _fail(
                    f"launch expression {expression!r}",
                    f"names bound at call time {sorted(bindings)}",
                    node.id,
                )
            return int(bindings[node.id])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp):
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, ast.FloorDiv | ast.Mod):
                if right == 0:
                    raise _fail(f"launch expression {expression!r}", "a non-zero divisor", 0)
                return left // right if isinstance(node.op, ast.FloorDiv) else left % right
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("min", "max")
            and node.args
            and not node.keywords
        ):
            values = [walk(arg) for arg in node.args]
            return min(values) if node.func.id == "min" else max(values)
        raise _fail(
            f"launch expression {expression!r}",
            "ints, names, + - * // %, min, max",
            ast.dump(node),
        )

    return walk(tree.body)


def _as_mapping(where: str, value: object) -> dict[str, JSONValue]:
    if not isinstance(value, dict):
        raise _fail(where, "a JSON object", value)
    return value


def _as_str(where: str, value: object) -> str:
    if not isinstance(value, str):
        raise _fail(where, "a string", value)
    return value


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Return the lowercase hex sha256 of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_manifest(directory: str | os.PathLike[str], *, verify: bool = True) -> Manifest:
    """Read and validate ``<directory>/manifest.json``.

    Args:
        directory: the artifact directory.
        verify: also check that every listed file exists and has its recorded sha256.

    Returns:
        The validated Manifest.

    Raises:
        ArtifactError: no manifest, malformed manifest, or a listed file is missing.
        SchemaVersionError: the schema version is not ``SCHEMA_VERSION``.
        HashMismatchError: a file's sha256 differs from the manifest (the message names it).
    """
    root = Path(directory)
    path = root / MANIFEST_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ArtifactError(f"{root} is not an artifact: {MANIFEST_NAME} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"cannot read {path}: {exc}") from None
    manifest = Manifest.loads(text)
    if verify:
        verify_files(root, manifest)
    return manifest


def verify_files(directory: str | os.PathLike[str], manifest: Manifest) -> None:
    """Check that every file of ``manifest`` exists under ``directory`` with its sha256.

    Raises:
        ArtifactError: a file is missing.
        HashMismatchError: a file's content differs (names the file and both hashes).
    """
    root = Path(directory)
    for entry in manifest.files:
        file_path = root / entry.path
        if not file_path.is_file():
            raise ArtifactError(f"artifact file {entry.path!r} listed in the manifest is missing")
        actual = sha256_file(file_path)
        if actual != entry.sha256:
            raise HashMismatchError(
                f"artifact file {entry.path!r} has sha256 {actual}, the manifest records "
                f"{entry.sha256}: the file was modified or truncated after export"
            )


def write_artifact(
    directory: str | os.PathLike[str],
    manifest: Manifest,
    files: Mapping[str, str | os.PathLike[str] | bytes] | Sequence[str] = (),
    *,
    roles: Mapping[str, str] | None = None,
) -> Path:
    """Write an artifact: copy ``files`` into ``directory``, hash them, write ``manifest.json``.

    Args:
        directory: target directory (created if missing).
        manifest: the manifest to write; its ``files`` entries are replaced by fresh ones
            computed here (path, sha256, role).
        files: either a mapping ``{relative path: source path or bytes}`` of files to place in the
            directory, or a sequence of relative paths already present in it.
        roles: role per relative path (``library``/``source``/``other``); the manifest's
            ``library`` gets ``library`` by default, existing entries keep their role.

    Returns:
        The artifact directory as a Path.

    Raises:
        ArtifactError: a path escapes the directory, a file is missing, or the resulting
            manifest is invalid (e.g. its ``library`` is not among the files).
    """
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    known_roles = {f.path: f.role for f in manifest.files}
    known_roles.setdefault(manifest.library, "library")
    known_roles.update(roles or {})
    names: list[str] = []
    if isinstance(files, Mapping):
        for rel, src in files.items():
            dest = root / rel
            FileEntry(path=rel, sha256="0" * 64)  # validates the relative path
            dest.parent.mkdir(parents=True, exist_ok=True)
            data = src if isinstance(src, bytes) else Path(src).read_bytes()
            _atomic_write(dest, data)
            names.append(rel)
    else:
        names = list(files)
    if not names:
        names = [f.path for f in manifest.files] or [manifest.library]
    entries = []
    for rel in names:
        if not (root / rel).is_file():
            raise ArtifactError(f"write_artifact: file {rel!r} not found in {root}")
        entries.append(
            FileEntry(path=rel, sha256=sha256_file(root / rel), role=known_roles.get(rel, "other"))
        )
    final = Manifest(**{**_fields(manifest), "files": tuple(entries)})
    _atomic_write(root / MANIFEST_NAME, final.dumps().encode("utf-8"))
    return root


def _fields(manifest: Manifest) -> dict[str, Any]:
    return {name: getattr(manifest, name) for name in manifest.__dataclass_fields__}


def _atomic_write(dest: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
