"""The ``tl`` command line as a conventional tool (issue 21 items 3, 5, 8): GPU artifacts
written without the device, ``--force``, eager kernels, ``--version``, ``--json``, a
closed pipe, one-line errors that name no internal class, ``--traceback`` anywhere."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GEMM = f"{ROOT / 'examples' / 'gemm.py'}:matmul"
GEMM_EAGER = f"{ROOT / 'examples' / 'gemm_eager.py'}:matmul"
GEMM_ARGS = ["--arg", "M=64", "--arg", "N=64", "--arg", "K=32"]
GEMM_ARGS += ["--arg", "block_M=32", "--arg", "block_N=32", "--arg", "block_K=16"]


def _no_gpu_env(tmp_path: Path) -> dict[str, str]:
    """An environment in which no GPU, driver or CUDA Python binding can be found."""
    blocker = tmp_path / "no_cuda"
    (blocker / "cuda").mkdir(parents=True, exist_ok=True)
    (blocker / "cuda" / "__init__.py").write_text(
        "raise ImportError('cuda-python is hidden by this test')\n"
    )
    env = {**os.environ, "TL_CACHE_DIR": str(tmp_path / "cache"), "CUDA_VISIBLE_DEVICES": ""}
    env["PYTHONPATH"] = os.pathsep.join([str(blocker), env.get("PYTHONPATH", "")]).strip(os.pathsep)
    env.pop("TL_DISABLE_CACHE", None)
    env.pop("TL_TRACEBACK", None)
    return env


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def tl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """``tl`` run in this process (tvm is imported once for the module), with no CUDA
    Python binding importable and a private cache."""
    from tl_backend_api.execution_specs import clear_availability_cache
    from tl_jit import cli

    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.delenv("TL_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("TL_TRACEBACK", raising=False)
    for name in [m for m in sys.modules if m == "cuda" or m.startswith("cuda.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "cuda", None)  # import cuda -> ImportError
    monkeypatch.chdir(tmp_path)
    clear_availability_cache()

    def run(*args: str, ok: bool = True, extra_env: dict[str, str] | None = None) -> Result:
        capsys.readouterr()
        with monkeypatch.context() as scoped:
            for key, value in (extra_env or {}).items():
                scoped.setenv(key, value)
            try:
                status = cli.main(list(args))
            except SystemExit as exc:  # argparse: --version, --help, usage errors
                status = int(exc.code or 0)
        captured = capsys.readouterr()
        result = Result(status, captured.out, captured.err)
        if ok:
            assert status == 0, result.stderr
        return result

    yield run
    clear_availability_cache()


@pytest.mark.parametrize(
    ("target", "suffix"),
    [("cuda", ".cu"), ("rocm", ".s"), ("metal", ".metal"), ("webgpu", ".wgsl")],
)
def test_gpu_source_is_written_without_the_device(
    tl, tmp_path: Path, target: str, suffix: str
) -> None:
    out = tmp_path / target
    tl(
        "compile",
        GEMM,
        *GEMM_ARGS,
        "--target",
        target,
        "--execution-backend",
        "source",
        "--out",
        str(out),
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["target"]["kind"] == target
    assert manifest["execution"]["adapter"] is None
    assert any(f["path"].endswith(suffix) for f in manifest["files"])


def test_cuda_auto_export_without_the_device_writes_source(tl, tmp_path: Path) -> None:
    out = tmp_path / "auto"
    report = json.loads(
        tl("compile", GEMM, *GEMM_ARGS, "--target", "cuda", "--out", str(out), "--json").stdout
    )
    # nothing runs CUDA here: auto picks the one that needs nothing, source
    assert report["execution_backend"] == "source"
    assert (out / "manifest.json").is_file()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (not a GPU)")
def test_a_cubin_is_built_without_a_gpu(tl, tmp_path: Path) -> None:
    out = tmp_path / "cubin"
    tl(
        "compile",
        GEMM,
        *GEMM_ARGS,
        "--target",
        "cuda",
        "--execution-backend",
        "cubin",
        "--out",
        str(out),
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["execution"]["backend"] == "cubin"
    assert manifest["execution"]["adapter"] == "cuda_driver"
    library = out / manifest["library"]
    assert library.stat().st_size > 0


def test_backends_says_what_each_row_needs(tl) -> None:
    text = tl("backends").stdout
    assert "builds here" in text and "runs here" in text and "what each needs:" in text
    rows = json.loads(tl("backends", "--json").stdout)["execution_backends"]
    by_name = {(r["backend"], r["execution_backend"]): r for r in rows}
    cubin = by_name[("cuda", "cubin")]
    assert "nvcc" in cubin["build_needs"] and "GPU" in cubin["run_needs"]
    assert cubin["runs_here"] is False  # cuda-python hidden, no device
    source = by_name[("cuda", "source")]
    assert source["builds_here"] is True and source["adapter"] is None
    assert "source only" in source["run_needs"]


def test_compile_refuses_an_existing_artifact_unless_forced(tl, tmp_path: Path) -> None:
    out = tmp_path / "art"
    tl("compile", GEMM, *GEMM_ARGS, "--target", "c", "--out", str(out))
    again = tl("compile", GEMM, *GEMM_ARGS, "--target", "c", "--out", str(out), ok=False)
    assert again.returncode == 1 and "--force" in again.stderr
    tl("compile", GEMM, *GEMM_ARGS, "--target", "llvm", "--out", str(out), "--force")
    assert json.loads((out / "manifest.json").read_text())["target"]["kind"] == "llvm"
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".art")]
    assert leftovers == []
    other = tmp_path / "not_an_artifact"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    refused = tl("compile", GEMM, *GEMM_ARGS, "--out", str(other), "--force", ok=False)
    assert refused.returncode == 1 and (other / "keep.txt").read_text() == "mine"


def test_an_eager_kernel_compiles_with_dims(tl, tmp_path: Path) -> None:
    out = tmp_path / "eager"
    tl(
        "compile",
        GEMM_EAGER,
        "--target",
        "c",
        "--dim",
        "M=64",
        "--dim",
        "N=64",
        "--dim",
        "K=32",
        "--arg",
        "block_M=32",
        "--out",
        str(out),
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert [p["shape"] for p in manifest["params"]] == [[64, 32], [32, 64], [64, 64]]
    assert manifest["out_idx"] == [2]
    missing = tl("compile", GEMM_EAGER, "--dim", "M=64", "--out", str(tmp_path / "x"), ok=False)
    assert missing.returncode == 1
    assert "--dim N=SIZE" in missing.stderr and "--dim K=SIZE" in missing.stderr


def test_version_and_json_reports(tl, tmp_path: Path) -> None:
    version = tl("--version").stdout
    assert version.startswith("tl (tl-jit ") and "tl-runtime" in version
    out = tmp_path / "art"
    report = json.loads(
        tl("compile", GEMM, *GEMM_ARGS, "--target", "c", "--out", str(out), "--json").stdout
    )
    assert report["artifact"] == str(out) and report["target"] == "c"
    info = json.loads(tl("cache", "info", "--json").stdout)
    assert info["kernels"] == 1 and info["root"] == str(tmp_path / "cache")
    assert json.loads(tl("cache", "clear", "--json").stdout)["removed_kernels"] == 1


def test_a_closed_pipe_ends_quietly(tl, tmp_path: Path) -> None:
    out = tmp_path / "art"
    tl("compile", GEMM, *GEMM_ARGS, "--target", "c", "--out", str(out))
    process = subprocess.Popen(
        [sys.executable, "-m", "tl_jit.cli", "inspect", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_no_gpu_env(tmp_path),
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()  # like `| head -1`
    process.stdout.close()
    stderr = process.stderr.read().decode()
    status = process.wait(timeout=120)
    assert "BrokenPipeError" not in stderr and "Traceback" not in stderr, stderr
    assert stderr == ""
    assert status in (0, 141)


def test_errors_are_one_line_without_class_names(tl, tmp_path: Path) -> None:
    out = tmp_path / "art"
    tl("compile", GEMM, *GEMM_ARGS, "--target", "c", "--out", str(out))
    result = tl("compile", GEMM, *GEMM_ARGS, "--target", "c", "--out", str(out), ok=False)
    first = result.stderr.splitlines()[0]
    assert first.startswith("tl: ") and "FileExistsError" not in first and "error:" not in first
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("where", ["before", "after", "env"])
def test_traceback_anywhere_on_the_line(tl, tmp_path: Path, where: str) -> None:
    args = ["compile", "nope.py:f", "--out", str(tmp_path / "x")]
    extra: dict[str, str] = {}
    if where == "before":
        args = ["--traceback", *args]
    elif where == "after":
        args = [*args, "--traceback"]
    else:
        extra["TL_TRACEBACK"] = "1"
    from tl_jit.cli import UsageError

    with pytest.raises(UsageError, match="no such file"):
        tl(*args, ok=False, extra_env=extra)


def test_a_kernel_error_ends_at_the_users_line(tl, tmp_path: Path) -> None:
    kernel = tmp_path / "bad.py"
    kernel.write_text(
        "import tl_jit\nimport tl_jit.language as T\n\n\n@tl_jit.jit\n"
        "def add(N):\n    @T.prim_func\n"
        "    def main(A: T.Tensor((N,), 'float32'), C: T.Tensor((N,), 'float32')):\n"
        "        with T.Kernel(1, threads=32) as bx:\n"
        "            for i in T.Parallel(N):\n"
        "                C[i] = A[i] + undefined_name\n"
        "    return main\n\n\ndef builder(N):\n    raise ValueError('N must be even')\n"
    )
    result = tl("compile", f"{kernel}:add", "--arg", "N=16", "--out", "o", ok=False)
    assert result.stderr.startswith(f"tl: {kernel}:11: ")
    assert "undefined_name" in result.stderr and len(result.stderr.splitlines()) <= 3
    plain = tl("compile", f"{kernel}:builder", "--arg", "N=16", "--out", "o", ok=False)
    assert plain.stderr.splitlines() == ["tl: N must be even", f"  at {kernel}:16 in builder"]


def test_a_kernel_file_calling_os_exit_fails(tl, tmp_path: Path) -> None:
    kernel = tmp_path / "exits.py"
    kernel.write_text("import os\nos._exit(0)\ndef f():\n    pass\n")
    result = tl("compile", f"{kernel}:f", "--out", str(tmp_path / "art"), ok=False)
    assert result.returncode == 1 and "os._exit(0)" in result.stderr
    assert not (tmp_path / "art").exists()


def test_a_kernel_file_crashing_the_interpreter_says_where(tmp_path: Path) -> None:
    """A builder that segfaults (its own native code) ends the process; the crash is
    reported on stderr with a stack, never a silent exit."""
    kernel = tmp_path / "crashes.py"
    kernel.write_text("import ctypes\n\ndef build(n):\n    ctypes.string_at(0)\n")
    command = ["compile", f"{kernel}:build", "--arg", "n=4", "--out", str(tmp_path / "a")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONFAULTHANDLER")}
    result = subprocess.run(  # in a process of its own: it crashes
        [sys.executable, "-m", "tl_jit.cli", *command],
        capture_output=True,
        text=True,
        env={**env, "TL_CACHE_DIR": str(tmp_path / "cache")},
        timeout=300,
    )
    assert result.returncode != 0
    assert "egmentation fault" in result.stderr or "Segfault" in result.stderr
    assert "string_at" in result.stderr
    assert not (tmp_path / "a").exists()


def test_every_option_has_help() -> None:
    from tl_jit.cli import build_parser

    parser = build_parser()
    missing = []
    parsers = [("tl", parser)]
    for action in parser._actions:
        choices = getattr(action, "choices", None)
        if isinstance(choices, dict):
            parsers.extend(choices.items())
    for name, sub in parsers:
        for action in sub._actions:
            if not action.help and not isinstance(action, type(parser._actions[0])):
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


def test_inspect_refuses_a_fifo_manifest_without_blocking(tmp_path: Path) -> None:
    directory = tmp_path / "art"
    directory.mkdir()
    os.mkfifo(directory / "manifest.json")
    try:
        result = subprocess.run(
            [sys.executable, "-m", "tl_jit.cli", "inspect", str(directory)],
            capture_output=True,
            text=True,
            env=_no_gpu_env(tmp_path),
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("tl inspect blocked on a FIFO manifest.json")
    assert result.returncode == 1
    assert result.stderr.startswith("tl: ") and "expected a regular file" in result.stderr


def test_cache_clear_survives_a_leftover_with_a_huge_pid(tl, tmp_path: Path) -> None:
    leftover = tmp_path / "cache" / "tmp" / f"{'0' * 16}-{10**30}-deadbeef"
    leftover.mkdir(parents=True)
    for directory in (tmp_path / "cache", tmp_path / "cache" / "tmp"):
        os.chmod(directory, 0o700)
    tl("cache", "clear")
    assert not leftover.exists()


def test_kernel_export_and_export_prim_func_take_force(tmp_path: Path) -> None:
    import tl_jit
    import tl_jit.language as T

    @T.prim_func
    def double(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:  # noqa: F841
            for i in T.Parallel(64):
                B[i] = A[i] * 2.0

    out = tmp_path / "art"
    written = tl_jit.export_prim_func(
        double, out, out_idx=[-1], target="webgpu", execution_backend="source"
    )
    assert written == out and (out / "manifest.json").is_file()
    with pytest.raises(FileExistsError, match="force=True"):
        tl_jit.export_prim_func(double, out, out_idx=[-1], target="webgpu")
    kernel = tl_jit.compile(double, out_idx=[-1], target="c")
    with pytest.raises(FileExistsError, match="force=True"):
        kernel.export(out)
    kernel.export(out, force=True)
    assert tl_jit.JITKernel.from_artifact(out).manifest.target["kind"] == "c"


def test_kernel_errors_end_near_the_users_line_in_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both styles: the traceback holds no parser frame (TVM's error stays chained without
    its frames); the
    message names the kernel's file and line (TL_TRACEBACK=1 keeps everything)."""
    import traceback

    import numpy as np

    source = tmp_path / "kernels_with_errors.py"
    source.write_text(
        "import tl_jit\nimport tl_jit.language as T\n\n\n@tl_jit.jit\n"
        "def classic(N):\n    @T.prim_func\n"
        "    def main(A: T.Tensor((N,), 'float32'), C: T.Tensor((N,), 'float32')):\n"
        "        with T.Kernel(1, threads=32) as bx:\n"
        "            for i in T.Parallel(N):\n"
        "                C[i] = A[i] + undefined_name\n"
        "    return main\n\n\n@tl_jit.jit\n"
        "def eager(A, block: int = 64):\n    N = T.const('N')\n"
        "    A: T.Tensor[[N], T.float32]\n    C = T.empty((N,), T.float32)\n"
        "    with T.Kernel(1, threads=32) as bx:\n"
        "        for i in T.Parallel(N):\n"
        "            C[i] = A[i] + undefined_name\n"
        "    return C\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TL_DISABLE_CACHE", "1")
    monkeypatch.delenv("TL_TRACEBACK", raising=False)
    import kernels_with_errors as module

    from tl_ir.errors import TileLangError

    for call, line in (
        (lambda: module.classic(16), 11),
        (lambda: module.eager(np.ones(16, np.float32)), 22),
    ):
        with pytest.raises(TileLangError) as info:
            call()
        assert f"{source}:{line}:" in str(info.value)
        frames = traceback.extract_tb(info.value.__traceback__)
        assert not [f for f in frames if "/tvm/" in f.filename], frames
        cause = info.value.__cause__  # TVM's error stays chained, without its frames
        assert cause is None or cause.__traceback__ is None


def test_inspect_shows_terminal_escapes_in_an_artifact_instead_of_sending_them(
    tl, tmp_path: Path
) -> None:
    import tl_runtime

    out = tmp_path / "art"
    tl("compile", GEMM, *GEMM_ARGS, "--target", "c", "--out", str(out))
    manifest = tl_runtime.read_manifest(out, verify=True)
    source = manifest.source_files[0].path
    hostile = "\x1b]0;owned\x07\x1b[2J\u202ereversed\r"
    with open(out / source, "a") as handle:
        handle.write(f"/* {hostile} */\n")
    versions = {**manifest.versions, "tl-jit": f"1.0{hostile}"}
    tl_runtime.write_artifact(
        out, dataclasses.replace(manifest, versions=versions), [f.path for f in manifest.files]
    )
    shown = tl("inspect", str(out)).stdout
    for raw in ("\x1b", "\x07", "\u202e", "\r"):
        assert raw not in shown
    assert shown.count(r"\x1b]0;owned\x07\x1b[2J\u202ereversed\r") == 2
    assert "\n----- " in shown  # the sources keep their lines


SCALE_ROWS = f"{ROOT / 'examples' / 'symbolic_shape_eager.py'}:scale_rows"
ELEMENTWISE = f"{ROOT / 'examples' / 'elementwise.py'}:add"


def test_bench_takes_an_eager_kernels_dynamic_dim(tl) -> None:
    # --dim M=100 (a T.dynamic dim) was refused as "unexpected keyword argument 'M'".
    result = tl(
        "bench", SCALE_ROWS, "--dim", "N=64", "--dim", "M=100", "--rep", "2", "--warmup", "1"
    )
    assert "scale_rows: median" in result.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # each of these was accepted and silently ignored or overridden
        (["compile", SCALE_ROWS, "--dim", "N=64", "--dim", "M=100"], "--dim M: "),
        (
            ["compile", SCALE_ROWS, "--dim", "N=64", "--arg", "alpha=2.0"],
            "--arg alpha: 'alpha' is an argument of the kernel",
        ),
        (
            ["compile", SCALE_ROWS, "--dim", "N=64", "--arg", "N=5"],
            "N is given both as --arg N=5 and as --dim N=64",
        ),
        (
            ["bench", ELEMENTWISE, "--arg", "M=64", "--arg", "N=64", "--dim", "K=5"],
            "--dim K: kernel 'main' has no symbolic dim 'K'",
        ),
    ],
)
def test_a_flag_that_would_be_ignored_is_refused(
    tl, tmp_path: Path, argv: list[str], message: str
) -> None:
    if argv[0] == "compile":
        argv = [*argv, "--out", str(tmp_path / "art")]
    result = tl(*argv, ok=False)
    assert result.returncode == 1 and message in result.stderr, result.stderr


FIXED_KERNEL = (
    "import tl_jit.language as T\n"
    "@T.prim_func\n"
    "def fixed(A: T.Tensor((64,), 'float32')):\n"
    "    with T.Kernel(1, threads=1) as bx:\n"
    "        A[0] = T.float32(0)\n"
)


def test_an_argument_to_a_prim_func_is_refused(tl, tmp_path: Path) -> None:
    kernel_file = tmp_path / "fixed.py"
    kernel_file.write_text(FIXED_KERNEL)
    result = tl(
        "compile", f"{kernel_file}:fixed", "--arg", "N=1000", "--out", str(tmp_path / "a"), ok=False
    )
    assert (
        "--arg N: " in result.stderr
        and "is a PrimFunc, which takes no compile-time" in result.stderr
    )


def test_json_stdout_holds_only_the_document(tl, tmp_path: Path) -> None:
    # A kernel file's print (or a toolchain's notice) went into the --json document.
    kernel_file = tmp_path / "chatty.py"
    kernel_file.write_text("print('hello from the kernel file')\n" + FIXED_KERNEL)
    result = tl(
        "compile", f"{kernel_file}:fixed", "--target", "c", "--out", str(tmp_path / "a"), "--json"
    )
    assert json.loads(result.stdout)["kernel"] == "fixed"
    assert "hello from the kernel file" in result.stderr
