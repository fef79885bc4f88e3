"""The ``Manifest`` document: the whole of ``manifest.json``, validated, to and from JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tl_runtime.errors import ArtifactError, SchemaVersionError
from tl_runtime.manifest.fields import (
    DEFAULT_ARGUMENT_DEVICE_TYPES,
    DEFAULT_INDEX_BITS,
    DLPACK_DEVICE_TYPES,
    IDENTIFIER,
    INDEX_BITS,
    MAX_STACK_BYTES,
    SCHEMA_VERSION,
    JSONValue,
    as_mapping,
    as_str,
    fail,
)
from tl_runtime.manifest.launch import LaunchArgument, LaunchSpec
from tl_runtime.manifest.params import FileEntry, ParamSpec


@dataclass(frozen=True)
class Manifest:
    """The content of ``manifest.json``.

    Attributes:
        name: kernel name.
        entry_symbol: the library's function to call (its packed entry for tvm-ffi).
        params: every parameter, in the kernel's order.
        out_idx: indices of the params the runtime allocates and returns (role ``output``).
        target: the target as a JSON dict with at least ``kind`` plus the target's options.
        execution_backend: the execution backend that made the artifact.
        adapter: the key of the adapter that loads it by default (an entry point of
            ``tl.adapters``), or None for a source-only artifact, which no adapter loads
            unless the caller names one (``tl_runtime.load(path, adapter=...)``).
        runnable_with: the execution backends of the backend that built the artifact
            that name an adapter, in their ``"auto"`` order: what to compile the kernel
            with to get an artifact that runs (the error for a source-only artifact
            names them). Empty when the backend has none.
        library: path (relative) of the file to load; must be listed in ``files``.
        files: every file of the artifact with its sha256 (empty in a draft given to
            ``write_artifact``, which fills it; a manifest read from disk always has them).
        launches: every device kernel, in launch order (`LaunchSpec`: symbol, device
            arguments, grid, block, dynamic shared memory); empty for host kernels.
        argument_device_types: the DLPack device types (``DLDeviceType`` codes; 1 is host
            memory, docs/deploy.md lists the others) of the arrays the kernel accepts,
            declared by the backend that built it. A manifest without the field means
            ``(1,)``: host arrays only.
        index_bits: the width (32 or 64) of the integers the kernel computes element
            indices in. The runtime refuses, before any call, a tensor whose elements an
            index of that width cannot reach. A manifest without the field means 32 (what
            kernels written in tl-ir use: their symbolic dims are ``int32``).
        stack_bytes: the bytes of arrays one block of the kernel keeps on the stack of
            the thread that runs it (the ``c`` target's block-local tiles). The runtime
            compares it with the threads' stacks at load and at call time
            (`tl_runtime.stack_budget`). A manifest without the field means 0.
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
    adapter: str | None = "tvm_ffi"
    runnable_with: tuple[str, ...] = ()
    launches: tuple[LaunchSpec, ...] = ()
    versions: Mapping[str, str] = field(default_factory=dict)
    argument_device_types: tuple[int, ...] = DEFAULT_ARGUMENT_DEVICE_TYPES
    index_bits: int = DEFAULT_INDEX_BITS
    stack_bytes: int = 0
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise fail("name", "a non-empty string", self.name)
        if not isinstance(self.entry_symbol, str) or not IDENTIFIER.match(self.entry_symbol):
            raise fail("entry_symbol", "a C identifier", self.entry_symbol)
        object.__setattr__(self, "params", tuple(self.params))
        object.__setattr__(self, "files", tuple(self.files))
        object.__setattr__(self, "target", dict(self.target))
        object.__setattr__(self, "versions", dict(self.versions))
        names = [p.name for p in self.params]
        if len(set(names)) != len(names):
            raise fail("params", "unique names", names)
        if not isinstance(self.target.get("kind"), str):
            raise fail("target", "a dict with a string 'kind'", self.target)
        if not isinstance(self.execution_backend, str) or not self.execution_backend:
            raise fail("execution_backend", "a non-empty string", self.execution_backend)
        if self.adapter is not None and (not isinstance(self.adapter, str) or not self.adapter):
            raise fail("adapter", "a non-empty string or None (source only)", self.adapter)
        self._check_runnable_with()
        out_idx = []
        for i in self.out_idx:
            if isinstance(i, bool) or not isinstance(i, int):
                raise fail("out_idx", "ints", self.out_idx)
            j = i + len(self.params) if i < 0 else i
            if not 0 <= j < len(self.params):
                raise fail("out_idx", f"indices into {len(self.params)} params", self.out_idx)
            if self.params[j].role != "output":
                raise fail(f"out_idx {i}", "a param with role 'output'", self.params[j].name)
            out_idx.append(j)
        if len(set(out_idx)) != len(out_idx):
            raise fail("out_idx", "no repeated index", self.out_idx)
        object.__setattr__(self, "out_idx", tuple(sorted(out_idx)))
        bound_by_inputs = {
            s for k, p in enumerate(self.params) if k not in self.out_idx for s in p.symbols
        }
        for k in self.out_idx:
            missing = set(self.params[k].symbols) - bound_by_inputs
            if missing:
                raise fail(
                    f"out_idx param {self.params[k].name!r}",
                    "symbolic dims bound by an input parameter",
                    sorted(missing),
                )
        paths = [f.path for f in self.files]
        if len(set(paths)) != len(paths):
            raise fail("files", "unique paths", paths)
        # A manifest without files is a draft for write_artifact, which fills them in.
        if paths and self.library not in paths:
            raise fail("library", f"one of the listed files {paths}", self.library)
        for key, value in self.versions.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise fail("versions", "a mapping of strings to strings", self.versions)
        self._check_argument_device_types()
        self._check_launches()
        if type(self.index_bits) is not int or self.index_bits not in INDEX_BITS:
            raise fail("index_bits", f"one of {list(INDEX_BITS)}", self.index_bits)
        if type(self.stack_bytes) is not int or not 0 <= self.stack_bytes <= MAX_STACK_BYTES:
            raise fail("stack_bytes", f"an int in [0, {MAX_STACK_BYTES}]", self.stack_bytes)
        if isinstance(self.schema_version, bool) or not isinstance(self.schema_version, int):
            raise fail("schema_version", "an int", self.schema_version)

    def _check_argument_device_types(self) -> None:
        value = self.argument_device_types
        expected = (
            f"a non-empty list of distinct DLPack device type codes {sorted(DLPACK_DEVICE_TYPES)}"
        )
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise fail("argument_device_types", expected, value)
        codes = tuple(value)
        if (
            not codes
            or any(type(c) is not int or c not in DLPACK_DEVICE_TYPES for c in codes)
            or len(set(codes)) != len(codes)
        ):
            raise fail("argument_device_types", expected, value)
        object.__setattr__(self, "argument_device_types", codes)

    def _check_runnable_with(self) -> None:
        value = self.runnable_with
        expected = "a list of distinct execution backend names"
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise fail("runnable_with", expected, value)
        names = tuple(value)
        if any(not isinstance(n, str) or not n for n in names) or len(set(names)) != len(names):
            raise fail("runnable_with", expected, value)
        object.__setattr__(self, "runnable_with", names)

    def _check_launches(self) -> None:
        """Every launch is a `LaunchSpec`, symbols are unique, and every argument and
        expression refers to what the parameters provide at call time."""
        value = self.launches
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise fail("launches", "a list of launches", value)
        launches = tuple(value)
        object.__setattr__(self, "launches", launches)
        tensors = {p.name: p for p in self.params if p.kind == "tensor"}
        scalars = {p.name: p for p in self.params if p.kind == "scalar"}
        bound = {s for p in self.params for s in p.symbols}
        symbols: list[str] = []
        workspaces: dict[str, LaunchArgument] = {}
        for launch in launches:
            if not isinstance(launch, LaunchSpec):
                raise fail("launches", "LaunchSpec items", launch)
            symbols.append(launch.symbol)
            where = f"launch {launch.symbol!r}"
            unbound = launch.symbols - bound
            if unbound:
                raise fail(
                    where,
                    f"expressions over the parameters' symbolic dims {sorted(bound)}",
                    sorted(unbound),
                )
            for argument in launch.arguments:
                self._check_launch_argument(where, argument, tensors, scalars, workspaces)
        if len(set(symbols)) != len(symbols):
            raise fail("launches", "one entry per device kernel (unique symbols)", symbols)

    @staticmethod
    def _check_launch_argument(
        where: str,
        argument: LaunchArgument,
        tensors: Mapping[str, ParamSpec],
        scalars: Mapping[str, ParamSpec],
        workspaces: dict[str, LaunchArgument],
    ) -> None:
        at = f"{where} argument {argument.name!r}"
        if argument.kind in ("buffer", "scalar"):
            params = tensors if argument.kind == "buffer" else scalars
            what = "tensor" if argument.kind == "buffer" else "scalar"
            param = params.get(argument.name)
            if param is None:
                raise fail(at, f"the name of a {what} parameter {sorted(params)}", argument.name)
            if param.dtype != argument.dtype:
                raise fail(f"{at} dtype", f"the parameter's dtype {param.dtype!r}", argument.dtype)
        elif argument.kind == "workspace":
            if argument.name in tensors or argument.name in scalars:
                raise fail(at, "a workspace name that is not a parameter's", argument.name)
            seen = workspaces.setdefault(argument.name, argument)
            if seen != argument:
                raise fail(
                    at,
                    f"the same dtype and nbytes in every launch ({seen.to_json()})",
                    argument.to_json(),
                )

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
            "execution": {
                "backend": self.execution_backend,
                "adapter": self.adapter,
                "runnable_with": list(self.runnable_with),
            },
            "library": self.library,
            "launches": [launch.to_json() for launch in self.launches],
            "argument_device_types": list(self.argument_device_types),
            "index_bits": self.index_bits,
            "stack_bytes": self.stack_bytes,
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
        obj = as_mapping("top level", data)
        version = obj.get("schema_version")
        if version != SCHEMA_VERSION or isinstance(version, bool):
            raise SchemaVersionError(
                f"manifest schema_version: expected {SCHEMA_VERSION} (what this tl-runtime "
                f"reads), got {version!r}; re-export the artifact or use a matching tl-runtime"
            )
        kernel = as_mapping("kernel", obj.get("kernel"))
        execution = as_mapping("execution", obj.get("execution"))
        params = obj.get("params")
        files = obj.get("files")
        out_idx = obj.get("out_idx", [])
        if not isinstance(params, list):
            raise fail("params", "a list", params)
        if not isinstance(files, list) or not files:
            raise fail("files", "a non-empty list", files)
        if not isinstance(out_idx, list):
            raise fail("out_idx", "a list", out_idx)
        launches = obj.get("launches", [])
        if not isinstance(launches, list):
            raise fail("launches", "a list", launches)
        adapter = execution.get("adapter")
        runnable_with = execution.get("runnable_with", [])
        if not isinstance(runnable_with, list):
            raise fail("execution runnable_with", "a list", runnable_with)
        device_types = obj.get("argument_device_types", list(DEFAULT_ARGUMENT_DEVICE_TYPES))
        if not isinstance(device_types, list):
            raise fail("argument_device_types", "a list of DLPack device type codes", device_types)
        return cls(
            name=as_str("kernel name", kernel.get("name")),
            entry_symbol=as_str("kernel entry_symbol", kernel.get("entry_symbol")),
            params=tuple(ParamSpec.from_json(p) for p in params),
            out_idx=tuple(out_idx),
            target=as_mapping("target", obj.get("target")),
            execution_backend=as_str("execution backend", execution.get("backend")),
            adapter=None if adapter is None else as_str("execution adapter", adapter),
            runnable_with=tuple(runnable_with),
            library=as_str("library", obj.get("library")),
            launches=tuple(LaunchSpec.from_json(launch) for launch in launches),
            files=tuple(FileEntry.from_json(f) for f in files),
            versions=as_mapping("versions", obj.get("versions", {})),
            argument_device_types=tuple(device_types),
            index_bits=obj.get("index_bits", DEFAULT_INDEX_BITS),
            stack_bytes=obj.get("stack_bytes", 0),
            schema_version=version,
        )

    @classmethod
    def loads(cls, text: str) -> Manifest:
        """Parse ``manifest.json`` text; raises ArtifactError if it is not valid JSON."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ArtifactError(f"manifest.json is not valid JSON: {exc}") from None
        except ValueError as exc:  # an integer past Python's digit limit
            raise ArtifactError(f"manifest.json: a number no field can hold ({exc})") from None
        return cls.from_json(data)
