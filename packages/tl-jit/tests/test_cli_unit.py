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
