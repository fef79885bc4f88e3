"""Loading what was verified (issue 24 items 6, 7, 12): a directory swapped between the
check and the load, special files where the manifest or the library should be, and
artifact directories every user can write."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import tvm
from tvm.script import tirx as T

import tl_runtime
from tl_runtime import ArtifactError, InsecureArtifactError

Artifact = Callable[..., Path]
SRC = str(Path(tl_runtime.__file__).resolve().parent.parent)


@T.prim_func
def _subtract(
    A: T.Buffer((1024,), "float32"),
    B: T.Buffer((1024,), "float32"),
    C: T.Buffer((1024,), "float32"),
):
    T.func_attr({"tir.noalias": True})
    for i in range(1024):
        C[i] = A[i] - B[i]


def _vsub_named_vadd(directory: Path, like: Path) -> Path:
    """An artifact whose manifest matches ``like``'s (entry ``vadd``) but computes A - B."""
    directory.mkdir(parents=True)
    lib = tvm.compile(_subtract.with_attr("global_symbol", "vadd"), target="llvm")
    lib.export_library(str(directory / "vadd.so"))
    manifest = tl_runtime.read_manifest(like)
    fields = {name: getattr(manifest, name) for name in manifest.__dataclass_fields__}
    fields["files"] = ()
    return tl_runtime.write_artifact(directory, tl_runtime.Manifest(**fields), ["vadd.so"])


@pytest.mark.parametrize("adapter_key", ["tvm_ffi", "cython"])
def test_a_directory_swapped_after_verification_runs_the_verified_code(
    artifact_copy: Artifact,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    adapter_key: str,
) -> None:
    """Blue/green by rename between the hash check and the load: the kernel must run the
    library that was verified (A + B), never the one swapped in (A - B)."""
    live = artifact_copy("vadd", out_idx=(2,))
    green = _vsub_named_vadd(tmp_path / "green", live)
    import tl_runtime.stack_budget as stack_budget

    original = stack_budget.check_worker_stacks
    swapped: list[bool] = []

    def swap_then_check(manifest: tl_runtime.Manifest) -> None:
        # Kernel construction runs this after load() verified the files and before the
        # adapter opens the library: the moment a deploy's rename can land.
        if not swapped:
            os.rename(live, tmp_path / "blue")
            os.rename(green, live)
            swapped.append(True)
        original(manifest)

    monkeypatch.setattr(stack_budget, "check_worker_stacks", swap_then_check)
    kernel = tl_runtime.load(live, adapter=adapter_key)
    assert swapped == [True]
    a = np.full(1024, 5, np.float32)
    b = np.full(1024, 2, np.float32)
    assert kernel(a, b)[0] == 7.0  # the verified vadd, not the swapped-in vsub (3.0)


def _run_with_timeout(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    try:
        return subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for {timeout} s (a special file was opened and read)")


@pytest.mark.parametrize("which", ["manifest.json", "vadd.so"])
def test_a_fifo_in_the_artifact_is_refused_without_blocking(
    artifact_copy: Artifact, which: str
) -> None:
    directory = artifact_copy("vadd", out_idx=(2,))
    (directory / which).unlink()
    os.mkfifo(directory / which)
    code = textwrap.dedent(
        f"""
        import tl_runtime
        for call in (tl_runtime.load, tl_runtime.read_manifest):
            try:
                call({str(directory)!r})
            except tl_runtime.ArtifactError as exc:
                print("refused:", exc)
        """
    )
    result = _run_with_timeout(code)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and all("expected a regular file, got a FIFO" in x for x in lines)
    assert all(which in line for line in lines)


@pytest.mark.parametrize(("which", "size"), [("manifest.json", 3 << 30), ("vadd.so", 5 << 30)])
def test_a_huge_file_in_the_artifact_is_refused_before_it_is_read(
    artifact_copy: Artifact, which: str, size: int
) -> None:
    """A sparse file of gigabytes was read whole into memory before any check (seconds,
    then a bare MemoryError under a memory limit, or the process OOM-killed)."""
    directory = artifact_copy("vadd", out_idx=(2,))
    with open(directory / which, "r+b") as handle:
        handle.truncate(size)  # sparse: no disk used
    for call in (tl_runtime.load, tl_runtime.read_manifest):
        with pytest.raises(ArtifactError, match=rf"{which}.* holds {size} bytes or more, beyond"):
            call(directory)


def test_a_world_writable_artifact_directory_is_refused(artifact_copy: Artifact) -> None:
    directory = artifact_copy("vadd", out_idx=(2,))
    os.chmod(directory, 0o777)
    with pytest.raises(InsecureArtifactError, match=r"writable by every user \(mode 0777\)"):
        tl_runtime.load(directory)
    with pytest.raises(InsecureArtifactError):
        tl_runtime.read_manifest(directory)
    # inspection without verification still reads it
    assert tl_runtime.read_manifest(directory, verify=False).name == "vadd"
    os.chmod(directory, 0o755)
    assert tl_runtime.load(directory).name == "vadd"


def test_world_writable_files_of_an_artifact_are_refused(artifact_copy: Artifact) -> None:
    """Its files' modes count as its directory's: anyone could rewrite the library and
    the manifest's hashes together."""
    directory = artifact_copy("vadd", out_idx=(2,))
    files = sorted(p for p in directory.rglob("*") if p.is_file())
    assert any(p.name == "manifest.json" for p in files) and len(files) >= 2
    for path in files:
        os.chmod(path, 0o666)
        with pytest.raises(
            InsecureArtifactError, match=rf"'{path.name}' is writable by every user \(mode 0666\)"
        ):
            tl_runtime.load(directory)
        os.chmod(path, 0o644)
    assert tl_runtime.load(directory).name == "vadd"


def test_an_artifact_inside_a_world_writable_directory_is_refused(
    artifact_copy: Artifact, tmp_path: Path
) -> None:
    directory = artifact_copy("vadd", out_idx=(2,))
    shared = tmp_path / "shared"
    shared.mkdir()
    os.rename(directory, shared / "vadd")
    os.chmod(shared, 0o777)
    try:
        with pytest.raises(InsecureArtifactError, match="without the sticky bit"):
            tl_runtime.load(shared / "vadd")
        os.chmod(shared, 0o777 | stat.S_ISVTX)  # like /tmp: accepted
        assert tl_runtime.load(shared / "vadd").name == "vadd"
    finally:
        os.chmod(shared, 0o755)


def test_a_subdirectory_in_place_of_a_file_is_refused(artifact_copy: Artifact) -> None:
    directory = artifact_copy("vadd", out_idx=(2,))
    (directory / "vadd.so").unlink()
    (directory / "vadd.so").mkdir()
    with pytest.raises(ArtifactError, match="expected a regular file, got a directory"):
        tl_runtime.load(directory)


def test_the_source_is_the_verified_one_after_a_swap(artifact_copy: Artifact) -> None:
    # kernel.source read the artifact's path on every access: after a deploy replaced the
    # file it showed the other kernel's source (and a FIFO there blocked it forever).
    live = artifact_copy("vadd", out_idx=(2,), target="c")
    kernel = tl_runtime.load(live)
    verified = (live / "vadd.c").read_text()
    assert kernel.source == verified
    (live / "vadd.c").unlink()
    os.mkfifo(live / "vadd.c")
    import threading

    seen: list[str | None] = []
    reader = threading.Thread(target=lambda: seen.append(kernel.source), daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert not reader.is_alive(), "kernel.source opened the FIFO put in the artifact"
    assert seen == [verified]


def test_a_kernel_refuses_pickling_by_name_and_copies_as_itself(artifact: Artifact) -> None:
    import copy
    import pickle

    kernel = tl_runtime.load(artifact("vadd", out_idx=(2,)))
    with pytest.raises(
        TypeError, match=r"tl_runtime.Kernel cannot be pickled \(vadd.*tl_runtime.load"
    ):
        pickle.dumps(kernel)
    assert copy.copy(kernel) is kernel and copy.deepcopy(kernel) is kernel


def test_load_copies_of_processes_gone_without_exit_handlers_are_swept(
    artifact: Callable[..., Path], tmp_path: Path
) -> None:
    """A child that loads and ends with ``os._exit`` (a forked multiprocessing child, a
    pool worker killed) leaves its private copy; the next process's first load removes
    it, and never one of a live process."""
    from tl_runtime import load_paths

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    code = textwrap.dedent(
        f"""
        import os, tl_runtime
        tl_runtime.load({str(artifact("vadd"))!r})
        os._exit(0)
        """
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    left = list(tmp_path.glob("tl-runtime-load-*"))
    assert len(left) == 1
    mine = tmp_path / f"tl-runtime-load-{os.getpid()}-x"
    mine.mkdir()
    assert load_paths.sweep_dead_staging(str(tmp_path)) == left
    assert list(tmp_path.glob("tl-runtime-load-*")) == [mine]
