"""`JITKernel`: a compiled kernel, callable, with its sources, export and profiler."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tl_jit import checked
from tl_jit.profiler import Profiler

if TYPE_CHECKING:
    import tl_runtime
    from tl_backend_api import BackendContext
    from tl_jit.tensor_supply import TensorSupplyType


class JITKernel(functools.partial):  # type: ignore[type-arg]
    """A compiled kernel. Call it like the tl-runtime kernel it wraps.

    ``kernel(*args)`` checks the arguments and launches (see
    `tl_runtime.Kernel.__call__`): one value per parameter not in ``out_idx``, in
    order; it returns None, the output array, or a tuple of them (``out_idx``), and
    raises TypeError or ValueError for bad arguments (naming the parameter) and
    RuntimeError when the kernel reports an error.

    A JITKernel is a `functools.partial` over the loaded runtime kernel's call path
    (its ``func``): calling it is partial's own C call into that path, with no Python
    frame in between, so it costs what a `tl_runtime.Kernel` call costs.

    Attributes:
        runtime_kernel: the loaded `tl_runtime.Kernel`.
        artifact_dir: the artifact directory it was loaded from (a cache entry or an export).
        prim_func: the kernel's PrimFunc, when this process built or parsed it (None after a
            front-end cache hit or `from_artifact`).
        context: the `BackendContext` it was compiled with (None when loaded from disk alone).
        cache_key: the ir key of its cache entry, or None.
        config: the winning configuration when returned by `autotune`, else None.
        latency: the measured latency in ms when returned by `autotune`, else None.
        ref_latency: the reference program's latency in ms on the winner's inputs when
            returned by `autotune` with a ``ref_prog``, else None.
        debug: whether it was built in checked mode (tl_jit.checked): an out-of-bounds
            access raises `IndexError` after the call.
    """

    config: dict[str, Any] | None
    latency: float | None
    ref_latency: float | None

    def __new__(cls, runtime_kernel: tl_runtime.Kernel, **_options: Any) -> JITKernel:
        """A kernel whose call is ``runtime_kernel``'s call path (wrapped to look at the
        out-of-bounds record when it was built in checked mode)."""
        call = runtime_kernel.__call__
        checked_file = runtime_kernel.manifest.versions.get(checked.MARKER)
        if checked_file is not None:
            call = checked.checked_call(call, runtime_kernel.name, checked_file)
        return super().__new__(cls, call)

    def __init__(
        self,
        runtime_kernel: tl_runtime.Kernel,
        *,
        prim_func: Any = None,
        context: BackendContext | None = None,
        cache_key: str | None = None,
    ) -> None:
        self.runtime_kernel = runtime_kernel
        self.artifact_dir = Path(runtime_kernel.directory)
        self.prim_func = prim_func
        self.context = context
        self.cache_key = cache_key
        self.config = None
        self.latency = None
        self.ref_latency = None
        self.debug = runtime_kernel.manifest.versions.get(checked.MARKER) is not None

    def __reduce__(self) -> Any:
        raise TypeError(
            f"a JITKernel cannot be pickled ({self.name}); pass its artifact "
            "directory (kernel.artifact_dir, or kernel.export(path)) and load it with "
            "JITKernel.from_artifact"
        )

    def __copy__(self) -> JITKernel:
        # A loaded kernel does not change: a copy (copy.deepcopy of a module holding
        # one, as tl_runtime.Kernel's) is the same kernel.
        return self

    def __deepcopy__(self, _memo: dict[int, Any]) -> JITKernel:
        return self

    @classmethod
    def from_artifact(cls, path: str | os.PathLike[str], adapter: str | None = None) -> JITKernel:
        """Load an exported artifact directory (``export`` or ``tl compile`` wrote it).

        Raises:
            everything `tl_runtime.load` raises (ArtifactError, HashMismatchError...).
        """
        import tl_runtime

        return cls(tl_runtime.load(path, adapter=adapter))

    @property
    def name(self) -> str:
        """The kernel's name."""
        return self.runtime_kernel.name

    @property
    def params(self) -> tuple[tl_runtime.ParamSpec, ...]:
        """Every parameter (name, dtype, shape, role), in order."""
        return self.runtime_kernel.params

    @property
    def out_idx(self) -> tuple[int, ...]:
        """Indices of the parameters the call allocates and returns."""
        return self.runtime_kernel.out_idx

    @property
    def manifest(self) -> tl_runtime.Manifest:
        """The artifact's manifest."""
        return self.runtime_kernel.manifest

    @property
    def kernel_source(self) -> str:
        """The generated kernel source (TileLang's ``kernel.kernel_source``): as
        `get_kernel_source`."""
        return self.get_kernel_source()

    @property
    def execution_backend(self) -> str:
        """How the kernel is called (``"tvm_ffi"``, ``"cython"``...): the manifest's."""
        return self.manifest.execution_backend

    def _sources(self) -> list[Path]:
        return [self.artifact_dir / f.path for f in self.manifest.source_files]

    def get_kernel_source(self, kernel_only: bool = True) -> str:
        """The generated kernel source, as TileLang's ``get_kernel_source``.

        Args:
            kernel_only: True (default): the device kernel's source alone (the artifact's
                first source file). False: the full generated source, the device source
                followed by the host source (`get_host_source`) when the artifact has one;
                a CPU kernel's one source is both, so it is the same text.

        Raises:
            TypeError: ``kernel_only`` is not a bool.
            LookupError: the artifact holds no source file.
        """
        if not isinstance(kernel_only, bool):
            raise TypeError(
                f"get_kernel_source(kernel_only=...): expected a bool, got "
                f"{type(kernel_only).__name__} {kernel_only!r}"
            )
        files = self._sources()
        if not files:
            raise LookupError(f"kernel {self.name!r}: its artifact holds no source file")
        device = files[0].read_text(encoding="utf-8", errors="replace")
        host = None if kernel_only or len(files) < 2 else self.get_host_source()
        return device if host is None else f"{device}\n\n{host}"

    def get_host_source(self) -> str | None:
        """The generated host source: the artifact's second source file; for an artifact
        with one source (CPU kernels: their one source is both host and kernel code),
        that source; None without any.
        """
        files = self._sources()
        if not files:
            return None
        host = files[1] if len(files) > 1 else files[0]
        return host.read_text(encoding="utf-8", errors="replace")

    def export(self, path: str | os.PathLike[str], *, force: bool = False) -> Path:
        """Copy the artifact to ``path`` (absent or an empty directory); returns it.

        The copy loads with `tl_runtime.load(path)` alone (no compiler needed). It is
        written beside ``path``, verified and renamed into place; its files get the
        modes the process's umask gives new ones (the cache keeps its entries private
        to the user; an export is meant to be shared or deployed).

        Args:
            path: the artifact directory to write.
            force: replace an artifact already at ``path`` (a directory holding
                ``manifest.json``; any other non-empty directory is still refused).

        Raises:
            FileExistsError: ``path`` is a file or a directory holding files (without
                ``force``; with it, files other than an artifact).
            OSError: the directory the copy would be written in takes no new entries
                (the message names ``path`` and that directory).
        """
        from tl_jit.export import copy_artifact

        return copy_artifact(self.artifact_dir, path, force=force)

    def get_profiler(
        self,
        dims: dict[str, int] | TensorSupplyType | None = None,
        seed: int | None = 0,
        tensor_supply_type: TensorSupplyType | str | None = None,
    ) -> Profiler:
        """A `Profiler` for this kernel (inputs generated from the params).

        Args:
            dims: sizes of the symbolic dims (``{"M": 1024}``), needed when params use any.
                A `TensorSupplyType` here is the supply kind (TileLang's
                ``get_profiler(TensorSupplyType.Integer)`` gives it first).
            seed: the random seed of the generated inputs: a non-negative int, or None
                for different inputs on every draw.
            tensor_supply_type: TileLang's kind of generated values
                (``tl_jit.TensorSupplyType.Randn``, ``.Integer``, ``.Auto``...; see
                `tl_jit.tensor_supply`); None: the profiler's own.

        Raises:
            TypeError, ValueError: ``dims`` is not a mapping of names to non-negative
                ints, or ``tensor_supply_type`` is not a `TensorSupplyType`, its name
                or None; ValueError: ``seed`` is neither None nor a non-negative int.
        """
        from tl_jit.tensor_supply import TensorSupplyType as Supply

        if isinstance(dims, Supply):
            if tensor_supply_type is not None:
                raise TypeError(
                    "get_profiler: the supply kind is given twice (first argument "
                    f"{dims!r} and tensor_supply_type={tensor_supply_type!r})"
                )
            dims, tensor_supply_type = None, dims
        return Profiler(self, dims=dims, seed=seed, tensor_supply_type=tensor_supply_type)

    def as_torch_op(self, name: str, *, mutates: Sequence[str] | None = None) -> Any:
        """Register this kernel as a ``torch.library`` custom op, so that
        ``torch.compile(fullgraph=True)`` traces functions calling it without a graph break.

        The op takes the parameters not in ``out_idx`` (tensors and scalars, in order)
        and returns the ``out_idx`` outputs; its fake implementation derives their
        shapes (symbolic dims from the argument tensors) and dtypes from the manifest.
        Parameters the kernel writes in place are declared mutated.

        Args:
            name: ``"namespace::op"`` (``"op"`` alone means ``"tl_jit::op"``).
            mutates: names of the parameters written in place (default: the manifest's
                ``inout`` parameters).

        Returns:
            The op, also reachable as ``torch.ops.<namespace>.<op>``. Registering the same
            kernel under the same name again returns the same op.

        Raises:
            ImportError: torch is not installed.
            TypeError, ValueError: see `tl_jit.torch_op.make_torch_op`.
        """
        from tl_jit.torch_op import make_torch_op

        return make_torch_op(self, name, mutates=mutates)

    def __repr__(self) -> str:
        names = ", ".join(f"{p.name}: {p.dtype}{list(p.shape)}" for p in self.params)
        return (
            f"<tl_jit.JITKernel {self.name}({names}) target={self.manifest.target.get('kind')} "
            f"adapter={self.runtime_kernel.adapter}>"
        )
