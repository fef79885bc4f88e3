"""Builds tiny kernels with apache-tvm and exports them as tl-runtime artifacts (tests only).

Shared by the tl-runtime unit tests, integration_tests/test_runtime_only.py and
benchmarks/dispatch.py. Importing this module imports tvm.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tvm
from tvm.script import tirx as T

import tl_runtime
from tl_runtime import Manifest, ParamSpec

N_STATIC = 1024
N_PARALLEL = 1 << 16


@T.prim_func
def vadd(
    A: T.Buffer((1024,), "float32"),
    B: T.Buffer((1024,), "float32"),
    C: T.Buffer((1024,), "float32"),
):
    T.func_attr({"tir.noalias": True})
    for i in range(1024):
        C[i] = A[i] + B[i]


@T.prim_func
def padd(
    A: T.Buffer((65536,), "float32"),
    B: T.Buffer((65536,), "float32"),
    C: T.Buffer((65536,), "float32"),
):
    T.func_attr({"tir.noalias": True})
    for i in T.parallel(65536):
        C[i] = A[i] + B[i]


@T.prim_func
def vadd_n(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"tir.noalias": True})
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i in range(n):
        C[i] = A[i] + B[i]


@T.prim_func
def scale_rows(a: T.handle, c: T.handle):
    T.func_attr({"tir.noalias": True})
    m = T.int64()
    A = T.match_buffer(a, (m, 8), "float32", align=4)
    C = T.match_buffer(c, (m, 8), "float32", align=4)
    for i, j in T.grid(m, 8):
        C[i, j] = A[i, j] * T.float32(2)


@T.prim_func
def sum_diff(
    A: T.Buffer((16, 8), "float64"),
    B: T.Buffer((16, 8), "float64"),
    S: T.Buffer((16, 8), "float64"),
    D: T.Buffer((16, 8), "float64"),
):
    T.func_attr({"tir.noalias": True})
    for i, j in T.grid(16, 8):
        S[i, j] = A[i, j] + B[i, j]
        D[i, j] = A[i, j] - B[i, j]


@T.prim_func
def axpb(
    A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32"), alpha: T.float32, k: T.int32
):
    T.func_attr({"tir.noalias": True})
    for i in range(64):
        C[i] = A[i] * alpha + T.Cast("float32", k)


@T.prim_func
def vadd_elem(
    A: T.Buffer((1024,), "float32", align=4),
    B: T.Buffer((1024,), "float32", align=4),
    C: T.Buffer((1024,), "float32", align=4),
):
    # Declares element alignment (what tl-ir kernels do): vector loads are unaligned-safe.
    T.func_attr({"tir.noalias": True})
    for i in T.vectorized(1024):
        C[i] = A[i] + B[i]


@T.prim_func
def accumulate(A: T.Buffer((1024,), "float32", align=4), X: T.Buffer((1024,), "float32", align=4)):
    # Updates X in place (role inout): the caller must see the result.
    T.func_attr({"tir.noalias": True})
    for i in T.vectorized(1024):
        X[i] = X[i] + A[i]


@T.prim_func
def int_mix(a: T.handle, b: T.handle, c: T.handle, shift: T.int64, flag: T.bool):
    # Mixed integer dtypes, ranks and symbolic dims (int32, as tl-ir's), an int64 and a
    # bool scalar: C[i, j] = A[i, j] + B[j] + (shift if flag else 0), in int64.
    T.func_attr({"tir.noalias": True})
    m = T.int32()
    n = T.int32()
    A = T.match_buffer(a, (m, n), "int8", align=1)
    B = T.match_buffer(b, (n,), "uint16", align=2)
    C = T.match_buffer(c, (m, n), "int64", align=8)
    for i, j in T.grid(m, n):
        C[i, j] = (
            T.Cast("int64", A[i, j]) + T.Cast("int64", B[j]) + T.Select(flag, shift, T.int64(0))
        )


@T.prim_func
def strided_copy(a: T.handle, b: T.handle):
    # Column-major views with leading dimensions 16 and 12 (TileLang's StridedTensor).
    T.func_attr({"tir.noalias": True})
    A = T.match_buffer(a, (8, 32), "float32", strides=(1, 16), align=4)
    B = T.match_buffer(b, (8, 32), "float32", strides=(1, 12), align=4)
    for i, j in T.grid(8, 32):
        B[i, j] = A[i, j]


@T.prim_func
def strided_rows(a: T.handle, c: T.handle):
    # A row stride the caller chooses (symbolic), a C-contiguous output: C = 2 * A.
    T.func_attr({"tir.noalias": True})
    m = T.int32()
    s = T.int32()
    A = T.match_buffer(a, (m, 8), "float32", strides=(s, 1), align=4)
    C = T.match_buffer(c, (m, 8), "float32", align=4)
    for i, j in T.grid(m, 8):
        C[i, j] = A[i, j] * T.float32(2)


@T.prim_func
def strided_out(a: T.handle, c: T.handle):
    # A written parameter with a row stride the caller chooses: C = 2 * A.
    T.func_attr({"tir.noalias": True})
    m = T.int32()
    s = T.int32()
    A = T.match_buffer(a, (m, 8), "float32", align=4)
    C = T.match_buffer(c, (m, 8), "float32", strides=(s, 1), align=4)
    for i, j in T.grid(m, 8):
        C[i, j] = A[i, j] * T.float32(2)


def _tensor(
    name: str,
    dtype: str,
    shape: tuple[int | str, ...],
    role: str = "input",
    alignment: int = 64,
    strides: tuple[int | str, ...] | None = None,
) -> ParamSpec:
    return ParamSpec(
        name=name, dtype=dtype, shape=shape, role=role, alignment=alignment, strides=strides
    )


KERNELS: dict[str, tuple[Any, list[ParamSpec]]] = {
    "vadd": (
        vadd,
        [
            _tensor("A", "float32", (1024,)),
            _tensor("B", "float32", (1024,)),
            _tensor("C", "float32", (1024,), "output"),
        ],
    ),
    "vadd_elem": (
        vadd_elem,
        [
            _tensor("A", "float32", (1024,), alignment=4),
            _tensor("B", "float32", (1024,), alignment=4),
            _tensor("C", "float32", (1024,), "output", alignment=4),
        ],
    ),
    "accumulate": (
        accumulate,
        [
            _tensor("A", "float32", (1024,), alignment=4),
            _tensor("X", "float32", (1024,), "inout", alignment=4),
        ],
    ),
    "padd": (
        padd,
        [
            _tensor("A", "float32", (65536,)),
            _tensor("B", "float32", (65536,)),
            _tensor("C", "float32", (65536,), "output"),
        ],
    ),
    "vadd_n": (
        vadd_n,
        [
            _tensor("A", "float32", ("n",)),
            _tensor("B", "float32", ("n",)),
            _tensor("C", "float32", ("n",), "output"),
        ],
    ),
    "scale_rows": (
        scale_rows,
        [
            _tensor("A", "float32", ("m", 8), alignment=4),
            _tensor("C", "float32", ("m", 8), "output", alignment=4),
        ],
    ),
    "sum_diff": (
        sum_diff,
        [
            _tensor("A", "float64", (16, 8)),
            _tensor("B", "float64", (16, 8)),
            _tensor("S", "float64", (16, 8), "output"),
            _tensor("D", "float64", (16, 8), "output"),
        ],
    ),
    "int_mix": (
        int_mix,
        [
            _tensor("A", "int8", ("m", "n"), alignment=1),
            _tensor("B", "uint16", ("n",), alignment=2),
            _tensor("C", "int64", ("m", "n"), "output", alignment=8),
            ParamSpec(name="shift", dtype="int64", kind="scalar"),
            ParamSpec(name="flag", dtype="bool", kind="scalar"),
        ],
    ),
    "strided_copy": (
        strided_copy,
        [
            _tensor("A", "float32", (8, 32), alignment=4, strides=(1, 16)),
            _tensor("B", "float32", (8, 32), "output", alignment=4, strides=(1, 12)),
        ],
    ),
    "strided_rows": (
        strided_rows,
        [
            _tensor("A", "float32", ("m", 8), alignment=4, strides=("s", 1)),
            _tensor("C", "float32", ("m", 8), "output", alignment=4),
        ],
    ),
    "strided_out": (
        strided_out,
        [
            _tensor("A", "float32", ("m", 8), alignment=4),
            _tensor("C", "float32", ("m", 8), "output", alignment=4, strides=("s", 1)),
        ],
    ),
    "axpb": (
        axpb,
        [
            _tensor("A", "float32", (64,)),
            _tensor("C", "float32", (64,), "output"),
            ParamSpec(name="alpha", dtype="float32", kind="scalar"),
            ParamSpec(name="k", dtype="int32", kind="scalar"),
        ],
    ),
}


def build_artifact(
    directory: str | os.PathLike[str],
    kernel: str,
    *,
    out_idx: tuple[int, ...] = (),
    adapter: str = "tvm_ffi",
    target: str = "llvm",
) -> Path:
    """Compile ``KERNELS[kernel]`` for ``target`` and write a tl-runtime artifact to ``directory``."""
    func, params = KERNELS[kernel]
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    lib = tvm.compile(func.with_attr("global_symbol", kernel), target=target)
    lib.export_library(str(directory / f"{kernel}.so"))
    roles = {f"{kernel}.so": "library"}
    if target == "c":
        (directory / f"{kernel}.c").write_text(lib.mod.inspect_source())
        roles[f"{kernel}.c"] = "source"
        files_list = [f"{kernel}.so", f"{kernel}.c"]
    else:
        files_list = [f"{kernel}.so"]
    manifest = Manifest(
        name=kernel,
        entry_symbol=kernel,
        params=tuple(params),
        out_idx=out_idx,
        target={"kind": target},
        execution_backend=adapter,
        adapter=adapter,
        library=f"{kernel}.so",
        files=(),
        versions={"apache-tvm": str(tvm.__version__), "tl-runtime": tl_runtime.__version__},
    )
    return tl_runtime.write_artifact(directory, manifest, files_list, roles=roles)


_CACHE_ROOT = Path(tempfile.gettempdir()) / f"tl-runtime-test-artifacts-{os.getuid()}"


def cached_artifact(kernel: str, **options: Any) -> Path:
    """Build (once per options and tvm version, cached on disk) and return an artifact directory.

    Copy it before modifying it: other tests share it.
    """
    this_file = Path(__file__).read_bytes()
    # The manifest package's code too: an artifact written before a manifest format change
    # (a new integrity field, a new schema version) is rebuilt, not reused.
    import tl_runtime.manifest as manifest_package

    writer_code = b"".join(
        path.read_bytes() for path in sorted(Path(manifest_package.__file__).parent.glob("*.py"))
    )
    key = hashlib.sha256(
        repr((kernel, sorted(options.items()), tvm.__version__)).encode() + this_file + writer_code
    )
    directory = _CACHE_ROOT / f"{kernel}-{key.hexdigest()[:16]}"
    if not (directory / "manifest.json").exists():
        tmp = Path(tempfile.mkdtemp(dir=_CACHE_ROOT.parent, prefix=".tlrt-build-"))
        build_artifact(tmp, kernel, **options)
        _CACHE_ROOT.mkdir(exist_ok=True)
        try:
            os.replace(tmp, directory)
        except OSError:  # another process won the race: its artifact is equivalent
            shutil.rmtree(tmp, ignore_errors=True)
    return directory


def aligned_array(np: Any, shape: tuple[int, ...], dtype: str, offset_bytes: int = 0) -> Any:
    """A numpy array whose data starts ``offset_bytes`` after a 64-byte boundary."""
    itemsize = np.dtype(dtype).itemsize
    count = int(np.prod(shape))
    raw = np.zeros(count * itemsize + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset_bytes
    return raw[start : start + count * itemsize].view(dtype).reshape(shape)


Builder = Callable[..., Path]


REPO_ROOT = Path(__file__).resolve().parents[3]
RUNTIME_PACKAGE = REPO_ROOT / "packages" / "tl-runtime"
TVM_FFI_REQUIREMENT = "apache-tvm-ffi==0.1.15.post2"


def make_runtime_only_venv(directory: str | os.PathLike[str]) -> Path:
    """Create a venv holding only tl-runtime (non-editable) and its dependencies
    (apache-tvm-ffi, ml_dtypes and numpy, filelock, platformdirs).

    Returns:
        The venv's python executable.

    Raises:
        subprocess.CalledProcessError: venv creation or pip failed (output attached).
    """
    import subprocess
    import sys

    venv = Path(directory)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            str(RUNTIME_PACKAGE),
            TVM_FFI_REQUIREMENT,
            "numpy",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return python


def installed_size_bytes(venv_python: Path) -> int:
    """Total size of the files under the venv that ``venv_python`` belongs to."""
    root = venv_python.parent.parent
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            if not path.is_symlink():
                total += path.stat().st_size
    return total


WARM_CACHE_SCRIPT = (
    "from tl_runtime import context\n"
    "from tl_runtime.adapters.cython_adapter import launcher_extension\n"
    "assert context.ensure_context_symbols().parallel\n"
    "launcher_extension()\n"
)


def warm_runtime_cache_template(root: Path) -> Path:
    """A ``TL_RUNTIME_CACHE_DIR`` holding what a process's first kernel call builds in an
    empty one (the Cython launcher, ~5 s; the context helper with and without OpenMP),
    built once under ``root`` (a file lock: xdist workers sharing ``root`` share it).

    Tests that need a private runtime cache but do not test building into it copy this
    (`shutil.copytree` keeps the 0700 mode) instead of paying for the launcher build in
    every subprocess; the copy is an ordinary cache hit (the entries are keyed by name and
    checked against their ``.sha256`` records).
    """
    import subprocess
    import sys

    import filelock

    template = root / "warm-tl-runtime-cache"
    done = root / "warm-tl-runtime-cache.done"
    with filelock.FileLock(str(root / "warm-tl-runtime-cache.lock")):
        if not done.is_file():
            shutil.rmtree(template, ignore_errors=True)
            unset = ("TL_RUNTIME_LAUNCHER", "TL_RUNTIME_NO_OPENMP")
            base = {k: v for k, v in os.environ.items() if k not in unset}
            for helper in ({}, {"TL_RUNTIME_NO_OPENMP": "1"}):  # OpenMP, then pthreads
                env = {**base, "TL_RUNTIME_CACHE_DIR": str(template), **helper}
                subprocess.run(
                    [sys.executable, "-c", WARM_CACHE_SCRIPT],
                    env=env,
                    check=True,
                    capture_output=True,
                    timeout=600,
                )
            done.touch()
    return template


def shared_temp_root(tmp_path_factory: Any) -> Path:
    """The temporary directory shared by every xdist worker of this run (the session's
    own base directory when not under xdist)."""
    root = Path(tmp_path_factory.getbasetemp())
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


@pytest.fixture(scope="session")
def _warm_runtime_cache_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return warm_runtime_cache_template(shared_temp_root(tmp_path_factory))


@pytest.fixture
def warm_runtime_cache(_warm_runtime_cache_template: Path, tmp_path: Path) -> Path:
    """A private ``TL_RUNTIME_CACHE_DIR`` that already holds the Cython launcher and both
    context helpers: for subprocess tests about something other than building them
    (saves ~5 s of launcher build per subprocess)."""
    directory = tmp_path / "warm-runtime-cache"
    shutil.copytree(_warm_runtime_cache_template, directory)
    return directory
