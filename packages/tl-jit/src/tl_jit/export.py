"""Writing artifacts for another machine: `export_prim_func` and `copy_artifact`.

An export is built, never loaded: the machine that writes it needs only what
*building* the execution backend needs (`tl_backend_api.probe_buildable`), not
the device, its driver or its Python bindings. That is what lets ``tl compile
--target cuda`` write a cubin or CUDA source on a laptop.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tl_jit import env
from tl_jit.compiler import (
    OutIdx,
    build_into,
    create_context,
    toolchain_versions,
)
from tl_jit.keys import ir_key
from tl_jit.pass_configs import normalize_pass_configs


def export_path(path: object) -> Path:
    """``path`` as the `Path` of an export destination.

    Raises:
        TypeError: ``path`` is not a str or path-like object naming a directory.
        ValueError: ``path`` is empty (``""`` would mean the working directory).
    """
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise TypeError(
            f"export path: expected a directory as a str or path-like object, got "
            f"{type(path).__name__} {path!r:.80}"
        )
    text = os.fspath(path)
    if not isinstance(text, str) or not text:
        raise ValueError(f"export path: expected a directory name, got {path!r:.80}")
    return Path(text)


def _check_writable(destination: Path, name: str) -> None:
    """Refuse ``destination`` when the directory its artifact is staged in (its parent,
    or the nearest existing ancestor that would hold the parents to create) takes no
    new entry: probed by creating and removing one, since permission bits do not tell
    (root "may" write ``/proc``; a read-only mount).

    Raises:
        OSError (the class of the failure): names ``name``, the destination and that
            directory (``tl compile --out /proc/x`` said only "[Errno 2] No such file or
            directory: '/proc/.x.tmp-...'").
    """
    directory = destination.absolute().parent
    while not os.path.lexists(directory) and directory != directory.parent:
        directory = directory.parent
    try:
        os.rmdir(tempfile.mkdtemp(prefix=f".{destination.name}.probe-", dir=directory))
    except OSError as err:
        raise type(err)(
            f"{name} {str(destination)!r}: cannot write the artifact there: the directory "
            f"{str(directory)!r} takes no new entries ({err.strerror or err})"
        ) from None


def _check_destination(destination: Path, force: bool, name: str = "export path") -> bool:
    """Whether ``destination`` exists and will be replaced; raises when it may not be
    (``name``: how the messages call the destination, ``--out`` for ``tl compile``)."""
    for parent in destination.absolute().parents:
        if os.path.lexists(parent) and not parent.is_dir():
            raise FileExistsError(
                f"{name} {str(destination)!r}: {str(parent)!r} is a file, not a directory"
            )
    if not os.path.lexists(destination):
        _check_writable(destination, name)
        return False
    if destination.is_symlink() or not destination.is_dir():
        raise FileExistsError(
            f"{name} {str(destination)!r}: expected an absent or empty directory, got a file"
        )
    entries = list(destination.iterdir())
    if entries and not force:
        raise FileExistsError(
            f"{name} {str(destination)!r}: expected an absent or empty directory, got "
            "one with files (pass force=True, or --force on the command line, to replace "
            "an artifact there)"
        )
    if entries and not (destination / "manifest.json").is_file():
        # force replaces what an export wrote, never an arbitrary directory (--out ~).
        raise FileExistsError(
            f"{name} {str(destination)!r}: force replaces an artifact directory (one "
            "holding manifest.json), got a directory with other files; remove it yourself "
            "or choose another path"
        )
    _check_writable(destination, name)
    return True


def check_destination(path: object, force: bool = False, *, name: str = "export path") -> None:
    """Refuse, before anything is built, a destination `export_prim_func` could not write
    (``name``: how the messages call it; ``tl compile`` passes ``"--out"``).

    Raises:
        TypeError, ValueError: ``path`` is not a path (None, bytes, empty).
        FileExistsError: as `copy_artifact`.
        OSError: the directory the artifact would be written in takes no new entries
            (it names ``name``, the path and that directory).
    """
    _check_destination(export_path(path), force, name)


def copy_artifact(
    source: str | os.PathLike[str], destination: str | os.PathLike[str], *, force: bool = False
) -> Path:
    """Copy the artifact directory ``source`` to ``destination``; returns ``destination``.

    The copy is written beside ``destination`` and renamed into place, so a reader never
    sees half an artifact, and verified (every sha256) before it is. Its files get the
    modes the process's umask gives new ones (the cache keeps entries private to the
    user; an export is meant to be shared or deployed).

    Args:
        source: an artifact directory (a cache entry).
        destination: absent or an empty directory; with ``force``, also an existing
            artifact directory (one holding ``manifest.json``), which is replaced.

    Raises:
        TypeError, ValueError: ``destination`` is not a path (None, bytes, empty).
        FileExistsError: ``destination`` is a file, lies under one, is ``source`` or
            inside or around it, or is a directory holding files (without ``force``;
            with it, files other than an artifact).
        OSError: the directory the copy would be staged in takes no new entries (named).
        tl_runtime.ArtifactError: ``source`` is not a valid artifact (the copy is removed).
    """
    import tl_runtime

    source_path = Path(source)
    target = export_path(destination)
    inside = target.resolve()
    origin = source_path.resolve()
    if inside == origin or origin in inside.parents or inside in origin.parents:
        # Replacing the source with a copy of itself would turn a private cache entry
        # into a shared directory (umask modes) holding what it holds.
        raise FileExistsError(
            f"export path {str(target)!r}: expected a place outside the artifact it copies "
            f"({str(source_path)!r}), got that directory or one inside or around it"
        )
    replace = _check_destination(target, force)
    target.parent.mkdir(parents=True, exist_ok=True)
    token = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    staging = target.parent / f".{target.name}.tmp-{token}"
    try:
        for directory, _subdirs, files in os.walk(source_path):
            here = staging / Path(directory).relative_to(source_path)
            here.mkdir(parents=True, exist_ok=True)
            for name in files:
                # copyfile: the bytes only, not the cache's 0600 mode
                shutil.copyfile(Path(directory) / name, here / name)
        tl_runtime.read_manifest(staging, verify=True)
        if replace:
            old = target.parent / f".{target.name}.old-{token}"
            os.rename(target, old)
            os.rename(staging, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(staging, target)
    finally:
        if os.path.lexists(staging):
            shutil.rmtree(staging, ignore_errors=True)
    return target


def export_prim_func(
    func: Any,
    path: str | os.PathLike[str],
    *,
    out_idx: OutIdx = None,
    target: object = "auto",
    target_host: object = None,
    execution_backend: str = "auto",
    pass_configs: Mapping[str, object] | None = None,
    force: bool = False,
) -> Path:
    """Build ``func`` into the artifact directory ``path`` without loading it; returns it.

    The execution backend is resolved for export (`tl_backend_api.create_backend_context`
    with ``purpose="export"``): a named one needs only to *build* here (``cubin`` needs
    nvcc, not a GPU; ``source`` needs nothing), ``"auto"`` takes the first that runs
    here, else the first that builds. The build goes through the disk cache (keyed as
    `tl_jit.compile` keys it) unless ``TL_DISABLE_CACHE=1``.

    Args:
        func: the kernel, a ``@T.prim_func``.
        path: where to write the artifact (see `copy_artifact`).
        out_idx, target, target_host, execution_backend, pass_configs: as for
            `tl_jit.compile`.
        force: replace an artifact already at ``path``.

    Raises:
        TypeError: ``func`` is not a PrimFunc.
        FileExistsError, OSError: ``path`` cannot be written (see `copy_artifact`).
        tl_backend_api.BackendError: the target or execution backend cannot be resolved,
            or cannot build here (the message says what building needs).
        tl_backend_api.ToolchainError: the compiler failed.
    """
    from tvm.tirx import PrimFunc

    from tl_jit.cache import default_cache
    from tl_runtime.out_idx import normalize_out_idx

    if not isinstance(func, PrimFunc):
        raise TypeError(
            f"func: expected a PrimFunc (a @T.prim_func kernel), got {type(func).__name__}"
        )
    _check_destination(export_path(path), force)  # before the build: fail fast
    context = create_context(target, target_host, execution_backend, purpose="export")
    normalized_out = normalize_out_idx(out_idx, len(func.params))
    configs = normalize_pass_configs(pass_configs)
    key = ir_key(
        func,
        context,
        out_idx=normalized_out,
        pass_configs=configs,
        toolchain_versions=toolchain_versions(context),
    )

    def build(directory: Path) -> Path:
        return build_into(
            context, func, directory, out_idx=normalized_out, pass_configs=configs, key=key
        )

    if env.cache_disabled():
        staging = Path(path).parent / f".{Path(path).name}.build-{uuid.uuid4().hex[:8]}"
        try:
            build(staging)
            return copy_artifact(staging, path, force=force)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    import tl_runtime

    def proves_its_key(entry: Path) -> bool:
        # An entry found under another key (a copied or swapped directory) is rebuilt,
        # as `KernelCache.load` does (docs/cache.md, "Trust model").
        try:
            manifest = tl_runtime.read_manifest(entry, verify=False)
        except tl_runtime.ArtifactError:
            return False
        return manifest.versions.get("tl_jit.cache_key") == key

    cache = default_cache()
    entry = cache.get_or_build(key, build, is_valid=proves_its_key)
    try:
        return copy_artifact(entry, path, force=force)
    except tl_runtime.ArtifactError as exc:
        # A damaged cache entry: drop it and build once more.
        cache.discard(key, f"it failed verification on export: {exc}")
        return copy_artifact(
            cache.get_or_build(key, build, is_valid=proves_its_key), path, force=force
        )
