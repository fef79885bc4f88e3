"""The ``tl`` command line on failures that must not pass for success."""

from __future__ import annotations

from pathlib import Path

import pytest

from tl_jit import cli


@pytest.mark.parametrize("code", ["0", "None", "'bye'"])
def test_kernel_file_exiting_on_import_is_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], code: str
) -> None:
    kernel_file = tmp_path / "exits.py"
    kernel_file.write_text(f"import sys\nsys.exit({code})\ndef f():\n    pass\n")
    out = tmp_path / "artifact"
    status = cli.main(["compile", f"{kernel_file}:f", "--out", str(out)])
    assert status == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("tl: ")
        and "Error" not in err.split(":")[1]
        and "sys.exit(" in err
        and str(kernel_file) in err
    )
    assert not out.exists()


def test_kernel_code_exiting_mid_command_is_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel_file = tmp_path / "builder_exits.py"
    kernel_file.write_text("import sys\ndef f():\n    sys.exit(0)\n")
    status = cli.main(["compile", f"{kernel_file}:f", "--out", str(tmp_path / "artifact")])
    assert status == 1
    assert "called sys.exit(0) before 'tl compile' finished" in capsys.readouterr().err


def test_kernel_code_calling_os_exit_mid_command_is_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # os._exit skips every handler: tl compile ended with status 0 having written nothing.
    import os

    kernel_file = tmp_path / "builder_os_exits.py"
    kernel_file.write_text("import os\ndef f():\n    os._exit(0)\n")
    saved = os._exit
    status = cli.main(["compile", f"{kernel_file}:f", "--out", str(tmp_path / "artifact")])
    assert status == 1
    assert "called os._exit(0) before 'tl compile' finished" in capsys.readouterr().err
    assert os._exit is saved


def test_an_argument_given_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--arg N=256 --arg N=512` compiled N=512 without a word.
    kernel_file = tmp_path / "builder.py"
    kernel_file.write_text("def f(N):\n    raise AssertionError('never built')\n")
    out = tmp_path / "artifact"
    argv = ["compile", f"{kernel_file}:f", "--arg", "N=256", "--arg", "N=512", "--out", str(out)]
    assert cli.main(argv) == 1
    assert "--arg: expected each NAME once, got N twice (N=256 and 'N=512')" in (
        capsys.readouterr().err
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--arg=N=2**20", "--arg N=2**20: expected VALUE to be a Python literal"),
        ("--arg=N=1 << 20", "--arg N=1 << 20: expected VALUE to be a Python literal"),
        ("--dim=N=2.5", "--dim N=2.5: expected SIZE to be a non-negative integer, got float"),
        ("--dim=N=-1", "--dim N=-1: expected SIZE to be a non-negative integer, got int -1"),
        ("--dim=N=float16", "--dim N=float16: expected SIZE to be a non-negative integer"),
    ],
)
def test_a_value_that_is_no_literal_or_size_is_refused_by_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, message: str
) -> None:
    # `--arg N=2**20` reached the builder as the string '2**20'.
    kernel_file = tmp_path / "builder.py"
    kernel_file.write_text("def f(N=1):\n    raise AssertionError('never built')\n")
    out = tmp_path / "artifact"
    assert cli.main(["compile", f"{kernel_file}:f", flag, "--out", str(out)]) == 1
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_bare_words_and_literals_pass_as_before() -> None:
    from tl_jit.cli_support import parse_assignments

    items = ["dtype=float16", "order=row", "N=1024", "scale=0.5", "shape=(2, 3)", "name='a b'"]
    assert parse_assignments(items, "--arg") == {
        "dtype": "float16",
        "order": "row",
        "N": 1024,
        "scale": 0.5,
        "shape": (2, 3),
        "name": "a b",
    }


def test_a_kernel_file_that_is_a_fifo_is_named_for_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    fifo = tmp_path / "kernel.py"
    os.mkfifo(fifo)
    assert cli.main(["compile", f"{fifo}:f", "--out", str(tmp_path / "artifact")]) == 1
    assert f"{fifo}: expected a Python file, got a FIFO" in capsys.readouterr().err


def test_a_base_exception_of_the_kernel_file_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A BaseException subclass raised while importing printed a full traceback.
    kernel_file = tmp_path / "boom.py"
    kernel_file.write_text("class Boom(BaseException):\n    pass\nraise Boom('exploded')\n")
    assert cli.main(["compile", f"{kernel_file}:f", "--out", str(tmp_path / "art")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tl: exploded") and "Traceback" not in err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_an_out_directory_that_cannot_be_written_is_named_by_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--out /proc/x` said "tl: [Errno 2] No such file or directory: '/proc/.x.tmp-...'",
    # after building the kernel.
    kernel_file = tmp_path / "builder.py"
    kernel_file.write_text("def f():\n    raise AssertionError('never built')\n")
    assert cli.main(["compile", f"{kernel_file}:f", "--out", "/proc/x"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "tl: --out '/proc/x': cannot write the artifact there: the directory '/proc' takes "
        "no new entries"
    ), err
