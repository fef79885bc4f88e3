"""The artifact format: a typed, validated ``manifest.json`` reader/writer (JSON only, never pickle).

An artifact is a directory holding ``manifest.json`` plus the files it lists (the
compiled library, optionally its source). See docs/deploy.md for the schema.

The modules, by job: ``fields`` (constants and checks of single values), ``params``
(parameter and file entries), ``launch`` (each device kernel's launch and the expressions
a launcher evaluates), ``document`` (the whole manifest to and from JSON), ``storage``
(reading, hash checks, writing an artifact directory). Import the public names from here.
"""

from __future__ import annotations

from tl_runtime.manifest.document import Manifest
from tl_runtime.manifest.fields import (
    DEFAULT_ALIGNMENT,
    DTYPES,
    FILE_ROLES,
    MANIFEST_NAME,
    PARAM_KINDS,
    PARAM_ROLES,
    SCHEMA_VERSION,
    WRITTEN_ROLES,
    Dim,
    JSONValue,
)
from tl_runtime.manifest.launch import (
    LAUNCH_ARGUMENT_KINDS,
    LaunchArgument,
    LaunchSpec,
    dim_expression_names,
    evaluate_dim_expression,
)
from tl_runtime.manifest.params import FileEntry, ParamSpec
from tl_runtime.manifest.snapshot import ArtifactSnapshot, read_artifact
from tl_runtime.manifest.storage import read_manifest, sha256_file, verify_files, write_artifact

__all__ = [
    "DEFAULT_ALIGNMENT",
    "DTYPES",
    "FILE_ROLES",
    "LAUNCH_ARGUMENT_KINDS",
    "MANIFEST_NAME",
    "PARAM_KINDS",
    "PARAM_ROLES",
    "SCHEMA_VERSION",
    "WRITTEN_ROLES",
    "ArtifactSnapshot",
    "Dim",
    "FileEntry",
    "JSONValue",
    "LaunchArgument",
    "LaunchSpec",
    "Manifest",
    "ParamSpec",
    "dim_expression_names",
    "evaluate_dim_expression",
    "read_artifact",
    "read_manifest",
    "sha256_file",
    "verify_files",
    "write_artifact",
]
