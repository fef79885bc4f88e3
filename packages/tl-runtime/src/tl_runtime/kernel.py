"""``load``: an artifact directory to a callable ``Kernel``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tl_runtime.errors import AdapterUnavailableError, ArtifactError, SourceOnlyArtifactError
from tl_runtime.manifest import Manifest, ParamSpec
from tl_runtime.manifest.snapshot import ArtifactSnapshot, read_artifact


class Kernel:
    """A loaded kernel: call it with the inputs (``out_idx`` outputs are allocated and returned).

    ``kernel(*args)`` checks ``args`` and launches:

    Args:
        *args: one value per parameter not in ``out_idx``, in order: arrays (any DLPack
            producer, numpy arrays, torch tensors) or Python scalars. ``inout``
            parameters are updated in place in the array passed.

    Returns:
        None when the kernel has no ``out_idx`` outputs, the output array for one, a tuple
        for several (numpy in, numpy out; torch in, torch out).

    Raises:
        TypeError: wrong argument count, non-array, wrong dtype or scalar type.
        ValueError: wrong rank/dims, disagreeing symbolic dims, non-contiguous, wrong
            device, an ``output``/``inout`` array the kernel writes that is read-only or
            below its parameter's declared ``alignment`` (such arrays are never copied;
            misaligned inputs are), scalar out of range.
        RuntimeError: the kernel itself reported an error.

    Attributes:
        manifest: the artifact's validated manifest.
        directory: the artifact directory.
        adapter: the adapter key in use.
    """

    # The call path lives in a slot: ``Kernel.__call__`` is that slot's descriptor (set
    # below the class), so ``kernel(*args)`` reads the adapter's call function from the
    # instance in C and calls it, with no Python frame of Kernel's own in between.
    __slots__ = {
        "__dict__": "The other attributes.",
        "__weakref__": "Kernels may be weakly referenced.",
        "_call": "The adapter's call path (``make_call()``, stack-guarded): what a call runs.",
    }

    def __init__(
        self,
        manifest: Manifest,
        directory: Path,
        adapter: str,
        snapshot: ArtifactSnapshot | None = None,
    ) -> None:
        from tl_runtime.adapters import get_adapter
        from tl_runtime.checking import ArgumentChecker
        from tl_runtime.load_paths import load_directory
        from tl_runtime.stack_budget import check_worker_stacks, guard_calling_thread_stack

        if snapshot is None:
            snapshot = read_artifact(directory, verify=True)
            if snapshot.manifest != manifest:
                raise ArtifactError(
                    f"artifact {str(directory)!r}: its manifest is not the one given to Kernel"
                )

        self.manifest = manifest
        self.directory = directory
        self.adapter = adapter
        # The artifact says which memory its kernel reads (manifest argument_device_types).
        self._checker = ArgumentChecker(manifest, manifest.argument_device_types)
        # A block's stack arrays must fit the threads that run it: a short stack is SIGSEGV.
        check_worker_stacks(manifest)
        # Code is loaded from a private copy of the bytes that were verified (never from
        # the artifact's path, which a deploy may swap; dlopen caches by path).
        code_directory = load_directory(manifest, snapshot.manifest_bytes, snapshot.contents)
        self._code_directory = code_directory
        self._impl = get_adapter(adapter)(manifest, code_directory, self._checker)
        self._call = guard_calling_thread_stack(manifest, self._impl.make_call())

    if TYPE_CHECKING:  # at run time ``__call__`` is the ``_call`` slot (below the class)

        def __call__(self, *args: Any) -> Any: ...

    @property
    def name(self) -> str:
        """The kernel's name."""
        return self.manifest.name

    @property
    def params(self) -> tuple[ParamSpec, ...]:
        """Every parameter, in order (``out_idx`` ones included)."""
        return self.manifest.params

    @property
    def out_idx(self) -> tuple[int, ...]:
        """Indices of the parameters allocated and returned by the call."""
        return self.manifest.out_idx

    @property
    def source(self) -> str | None:
        """The kernel's source text (first ``source`` file of the artifact), or None.

        Read from the private copy of the verified bytes the code was loaded from, never
        from the artifact's path: a deploy may have swapped the directory since (its
        source is another kernel's) or put a FIFO there (a read would block forever).
        """
        entries = self.manifest.source_files
        if not entries:
            return None
        path = self._code_directory / entries[0].path
        return path.read_text(encoding="utf-8", errors="replace")

    def bind_dims(self, *args: Any) -> dict[str, int]:
        """Check ``args`` like a call would and return the symbolic dims they bind (no launch).

        GPU adapters evaluate launch metadata (grid/block expressions) from these values.
        """
        return self._checker.prepare(args).bindings

    def __reduce__(self) -> Any:
        raise TypeError(
            f"a tl_runtime.Kernel cannot be pickled ({self.name}: it holds a loaded library); "
            f"pass its artifact directory ({str(self.directory)!r}) and call "
            "tl_runtime.load(path) in the other process"
        )

    def __copy__(self) -> Kernel:
        return self  # immutable once loaded: a copy would be the same kernel

    def __deepcopy__(self, _memo: dict[int, Any]) -> Kernel:
        return self

    def __repr__(self) -> str:
        names = ", ".join(f"{p.name}: {p.dtype}{list(p.shape)}" for p in self.params)
        return f"<tl_runtime.Kernel {self.name}({names}) adapter={self.adapter}>"


# Calling a Kernel calls its ``_call`` slot: the slot's descriptor is the class's
# ``__call__``, an explicit per-instance dispatch that costs what a method lookup costs.
Kernel.__call__ = Kernel.__dict__["_call"]  # type: ignore[method-assign]


def load(path: str | os.PathLike[str], adapter: str | None = None) -> Kernel:
    """Load the artifact at ``path`` and return a callable Kernel.

    Args:
        path: the artifact directory (holding ``manifest.json``).
        adapter: key of an installed adapter to use instead of the manifest's
            (``"tvm_ffi"``, ``"cython"``...; ``tl_runtime.adapter_keys()`` lists them).

    Returns:
        The Kernel.

    Raises:
        ArtifactError: no/invalid manifest, a missing file, or an unloadable library.
        SourceOnlyArtifactError: the artifact holds source only (its manifest names no
            adapter) and ``adapter`` is None; the message names the execution backends
            that would make a runnable artifact of the kernel.
        SchemaVersionError: the manifest's schema version is not the one this runtime reads.
        HashMismatchError: a file's sha256 differs from the manifest (names the file).
        InsecureArtifactError: the directory is writable by every user (an ArtifactError).
        AdapterUnavailableError: the adapter is not installed (the message lists the
            installed ones), fails to load, or cannot run here (says why).
        TypeError: ``path`` is not a str or path-like object naming a directory, or
            ``adapter`` is neither None nor a str.
        StackBudgetError: the kernel's block-local stack arrays (manifest ``stack_bytes``)
            do not fit the OpenMP worker threads' stacks (``OMP_STACKSIZE``).
    """
    from tl_runtime.adapters import get_adapter

    if adapter is not None and not isinstance(adapter, str):
        raise TypeError(f"load: adapter: expected an adapter key (str) or None, got {adapter!r}")
    if not isinstance(path, str | os.PathLike) or isinstance(path, bytes):
        raise TypeError(
            f"load: path: expected the artifact directory as a str or path-like object, "
            f"got {type(path).__name__} {path!r:.80}"
        )
    try:
        directory = Path(path)
    except TypeError as err:
        raise TypeError(f"load: path: expected a str path, got {path!r:.80} ({err})") from None
    if not directory.is_dir():
        what = "does not exist" if not directory.exists() else "is not a directory"
        raise ArtifactError(f"artifact path {str(directory)!r} {what}")
    # Read once: the bytes verified here are the bytes loaded (Kernel's private copy).
    snapshot = read_artifact(directory, verify=True)
    manifest = snapshot.manifest
    key = adapter if adapter is not None else manifest.adapter
    if key is None:
        raise SourceOnlyArtifactError(source_only_message(manifest, directory))
    availability = get_adapter(key).probe()
    if not availability:
        raise AdapterUnavailableError(f"adapter {key!r} is unavailable: {availability.reason}")
    return Kernel(manifest, directory, key, snapshot)


def source_only_message(manifest: Manifest, directory: Path) -> str:
    """Why the source-only artifact at ``directory`` does not load, and what would run it."""
    where = (
        f"artifact {manifest.name!r} ({directory}) holds source only: its execution backend "
        f"{manifest.execution_backend!r} compiled nothing and names no adapter to load it"
    )
    if manifest.runnable_with:
        names = " or ".join(repr(name) for name in manifest.runnable_with)
        advice = f"compile the kernel with execution_backend={names} to get one that runs"
    else:
        advice = "no execution backend of the backend that built it runs its kernels"
    return (
        f"{where}; {advice}, or pass adapter=... to tl_runtime.load when an installed "
        f"adapter loads this source ({manifest.library!r})"
    )
