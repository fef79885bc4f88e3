"""`JITKernel`: a compiled kernel, callable, with its sources, export and profiler."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tl_jit import checked
from tl_jit.profiler import Profiler

if TYPE_CHECKING:
    import tl_runtime
    from tl_backend_api import BackendContext


class JITKernel:
    """A compiled kernel. Call it like the tl-runtime kernel it wraps.

    A call goes straight to the loaded tl-runtime kernel's call path (bound at
    construction), so it costs what a `tl_runtime.Kernel` call costs.

    Attributes:
        runtime_kernel: the loaded `tl_runtime.Kernel`.
        artifact_dir: the artifact directory it was loaded from (a cache entry or an export).
        prim_func: the kernel's PrimFunc, when this process built or parsed it (None after a
            front-end cache hit or `from_artifact`).
        context: the `BackendContext` it was compiled with (None when loaded from disk alone).
        cache_key: the ir key of its cache entry, or None.
        config: the winning configuration when returned by `autotune`, else None.
        latency: the measured latency in ms when returned by `autotune`, else None.
        debug: whether it was built in checked mode (tl_jit.checked): an out-of-bounds
            access raises `IndexError` after the call.
    """

    config: dict[str, Any] | None
    latency: float | None

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
        call = runtime_kernel.__call__
        checked_file = runtime_kernel.manifest.versions.get(checked.MARKER)
        self.debug = checked_file is not None
        if checked_file is not None:  # checked mode: look at the out-of-bounds record
            call = checked.checked_call(call, runtime_kernel.name, checked_file)
        # The runtime kernel's __call__ is a staticmethod holding its adapter's call:
        # a per-instance subclass makes it this object's __call__ too (no extra frame).
        self.__class__ = type(
            "JITKernel",
            (JITKernel,),
            {"__call__": staticmethod(call), "__module__": __name__},
        )

    def __call__(self, *args: Any) -> Any:
        """Check ``args`` and launch (see `tl_runtime.Kernel.__call__`).

        Args:
            *args: one value per parameter not in ``out_idx``, in order.

        Returns:
            None, the output array, or a tuple of them (``out_idx``).

        Raises:
            TypeError, ValueError: bad arguments (naming the parameter); RuntimeError: the
                kernel reported an error; IndexError: a checked kernel (``debug``)
                found an index out of bounds.
        """
        return self.runtime_kernel(*args)

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

    def _sources(self) -> list[Path]:
        return [self.artifact_dir / f.path for f in self.manifest.source_files]

    def get_kernel_source(self) -> str:
        """The generated kernel (device) source: the artifact's first source file.

        Raises:
            LookupError: the artifact holds no source file.
        """
        files = self._sources()
        if not files:
            raise LookupError(f"kernel {self.name!r}: its artifact holds no source file")
        return files[0].read_text(encoding="utf-8", errors="replace")

    def get_host_source(self) -> str | None:
        """The generated host source (the artifact's second source file), or None.

        CPU kernels have no separate host code: their one source is both.
        """
        files = self._sources()
        if len(files) < 2:
            return None
        return files[1].read_text(encoding="utf-8", errors="replace")

    def export(self, path: str | os.PathLike[str]) -> Path:
        """Copy the artifact to ``path`` (absent or an empty directory); returns it.

        The copy loads with `tl_runtime.load(path)` alone (no compiler needed). Its
        files and directories get the modes the process's umask gives new ones (the
        cache keeps its entries private to the user; an export is meant to be shared
        or deployed).

        Raises:
            FileExistsError: ``path`` exists and is not an empty directory.
        """
        destination = Path(path)
        if destination.exists():
            if not destination.is_dir() or any(destination.iterdir()):
                raise FileExistsError(
                    f"export path {str(destination)!r}: expected an absent or empty directory"
                )
            destination.rmdir()
        source = Path(self.artifact_dir)
        for directory, _subdirs, files in os.walk(source):
            target = destination / Path(directory).relative_to(source)
            target.mkdir(parents=True, exist_ok=True)
            for name in files:
                # copyfile: the bytes only, not the cache's 0600 mode
                shutil.copyfile(Path(directory) / name, target / name)
        return destination

    def get_profiler(self, dims: dict[str, int] | None = None, seed: int = 0) -> Profiler:
        """A `Profiler` for this kernel (inputs generated from the params).

        Args:
            dims: sizes of the symbolic dims (``{"M": 1024}``), needed when params use any.
            seed: the random seed of the generated inputs.
        """
        return Profiler(self, dims=dims, seed=seed)

    def __repr__(self) -> str:
        names = ", ".join(f"{p.name}: {p.dtype}{list(p.shape)}" for p in self.params)
        return (
            f"<tl_jit.JITKernel {self.name}({names}) target={self.manifest.target.get('kind')} "
            f"adapter={self.runtime_kernel.adapter}>"
        )
