"""Exception classes raised by tl_runtime (artifact, adapter and toolchain errors)."""

from __future__ import annotations


class ArtifactError(ValueError):
    """An artifact directory or its manifest is malformed, incomplete or inconsistent."""


class SchemaVersionError(ArtifactError):
    """The manifest's schema version is not one this runtime reads."""


class HashMismatchError(ArtifactError):
    """A file of the artifact does not have the sha256 the manifest records."""


class InsecureArtifactError(ArtifactError):
    """The artifact directory (or a directory above it, without the sticky bit) can be
    written by every user, so anyone on the machine could replace the code it holds."""


class SourceOnlyArtifactError(ArtifactError):
    """The artifact holds source only (its manifest names no adapter) and the caller named
    none; the message says which execution backends would make a runnable artifact."""


class AdapterUnavailableError(RuntimeError):
    """The requested execution adapter cannot run on this machine (the message says why)."""


class NativeBuildError(RuntimeError):
    """Building a native helper (context-symbol helper, Cython launcher) failed."""


class StackBudgetError(RuntimeError):
    """A kernel's block-local stack arrays do not fit on the stacks of the threads that
    would run it (the message names the kernel, the need, the limit and what to set)."""
