"""The parameter and file entries of a manifest (``params`` and ``files``)."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from pathlib import Path

from tl_runtime.dtypes import DTYPE_ALIASES, canonical_dtype, dtype_info
from tl_runtime.manifest.fields import (
    DEFAULT_ALIGNMENT,
    DTYPES,
    FILE_ROLES,
    HEX64,
    IDENTIFIER,
    MANIFEST_NAME,
    MAX_ALIGNMENT,
    MAX_EXTENT,
    PARAM_KINDS,
    PARAM_ROLES,
    WRITTEN_ROLES,
    Dim,
    JSONValue,
    as_mapping,
    as_str,
    check_dim,
    fail,
)


@dataclass(frozen=True)
class ParamSpec:
    """One kernel parameter.

    Attributes:
        name: the parameter's name (used in error messages).
        dtype: one of ``DTYPES``, or an alias of one (``tl_runtime.dtypes.DTYPE_ALIASES``).
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
        if not isinstance(self.name, str) or not IDENTIFIER.match(self.name):
            raise fail("param name", "an identifier", self.name)
        if canonical_dtype(self.dtype) is None:
            raise fail(
                f"{where} dtype",
                f"one of {sorted(DTYPES)} (or {sorted(DTYPE_ALIASES)})",
                self.dtype,
            )
        if self.kind not in PARAM_KINDS:
            raise fail(f"{where} kind", f"one of {PARAM_KINDS}", self.kind)
        if self.role not in PARAM_ROLES:
            raise fail(f"{where} role", f"one of {PARAM_ROLES}", self.role)
        alignment = self.alignment
        if (
            isinstance(alignment, bool)
            or not isinstance(alignment, int)
            or not 1 <= alignment <= MAX_ALIGNMENT
            or alignment & (alignment - 1)
        ):
            raise fail(
                f"{where} alignment", f"a power of two in [1, {MAX_ALIGNMENT}] (bytes)", alignment
            )
        object.__setattr__(self, "shape", tuple(self.shape))
        for i, dim in enumerate(self.shape):
            check_dim(f"{where} shape[{i}]", dim)
        static_bytes = dtype_info(self.dtype).itemsize
        for dim in self.shape:
            if isinstance(dim, int):
                static_bytes *= dim
        if static_bytes > MAX_EXTENT:
            # Caught here, once, instead of as OverflowError/MemoryError at every call.
            raise fail(
                f"{where} shape", "static dims totalling at most 2**63 - 1 bytes", self.shape
            )
        if self.strides is not None:
            object.__setattr__(self, "strides", tuple(self.strides))
            assert self.strides is not None
            if len(self.strides) != len(self.shape):
                raise fail(f"{where} strides", f"{len(self.shape)} entries", self.strides)
            for i, dim in enumerate(self.strides):
                check_dim(f"{where} strides[{i}]", dim)
        if self.kind == "scalar":
            if self.shape or self.strides is not None:
                raise fail(f"{where}", "no shape/strides for a scalar", self.shape)
            if self.role != "input":
                raise fail(f"{where} role", "'input' for a scalar", self.role)

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
        obj = as_mapping("param", data)
        shape = obj.get("shape", [])
        strides = obj.get("strides")
        if not isinstance(shape, list):
            raise fail("param shape", "a list", shape)
        if strides is not None and not isinstance(strides, list):
            raise fail("param strides", "a list or null", strides)
        return cls(
            name=as_str("param name", obj.get("name")),
            dtype=as_str("param dtype", obj.get("dtype")),
            kind=as_str("param kind", obj.get("kind", "tensor")),
            shape=tuple(shape),
            strides=None if strides is None else tuple(strides),
            role=as_str("param role", obj.get("role", "input")),
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
        if (
            not self.path
            or not pure.parts  # "."
            or pure.is_absolute()
            or ".." in pure.parts
            or pure.as_posix() == MANIFEST_NAME
        ):
            raise fail("file path", "a relative path inside the artifact", self.path)
        if any(ord(c) < 32 or c == "\x7f" for c in self.path):
            raise fail("file path", "a path without control characters", self.path)
        if len(self.path.encode(errors="surrogatepass")) > 1024 or any(
            len(part.encode(errors="surrogatepass")) > 255 for part in pure.parts
        ):
            raise fail(
                "file path", "a path of at most 1024 bytes, 255 per component", self.path[:80]
            )
        if pure.as_posix() != self.path:  # "./lib.so", "a//b", "lib.so/.": one file, two names
            raise fail("file path", f"a normalized path ({pure.as_posix()!r})", self.path)
        if not HEX64.match(self.sha256):
            raise fail(f"file {self.path!r} sha256", "64 lowercase hex digits", self.sha256)
        if self.role not in FILE_ROLES:
            raise fail(f"file {self.path!r} role", f"one of {FILE_ROLES}", self.role)

    def to_json(self) -> dict[str, JSONValue]:
        """Return this entry as a JSON-compatible dict."""
        return {"path": self.path, "sha256": self.sha256, "role": self.role}

    @classmethod
    def from_json(cls, data: object) -> FileEntry:
        """Build from the JSON dict; raises ArtifactError on any malformed field."""
        obj = as_mapping("file", data)
        return cls(
            path=as_str("file path", obj.get("path")),
            sha256=as_str("file sha256", obj.get("sha256")),
            role=as_str("file role", obj.get("role", "other")),
        )
