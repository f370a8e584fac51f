"""Fail loudly, never torn (issue 21, item 6): a step summary that cannot be appended whole leaves the file as it was
and fails the run in one line; a legal 250-byte -o name is written; an error line is cut to MESSAGE_LIMIT."""
from __future__ import annotations

import errno
import os
import textwrap

import pytest
from typer.testing import CliRunner

from opassess import output as write_module
from opassess.cli import app
from opassess.cli.errors import MESSAGE_LIMIT, one_line
from opassess.errors import ReportError
from opassess.output import append_text, write_output
from tests.support import TINY

runner = CliRunner()


def _disk_fills_after(monkeypatch, room: int, path) -> None:
    """os.write to `path` as on a disk with `room` bytes left (what /dev/full does at 0, on a regular file); every
    other descriptor (the worker's result channel, the report) writes as usual."""
    real = os.write
    left = [room]
    inode = os.stat(path).st_ino

    def write(fd, data):
        if os.fstat(fd).st_ino != inode:
            return real(fd, data)
        if left[0] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = real(fd, bytes(data[:left[0]]))
        left[0] -= written
        return written

    monkeypatch.setattr(write_module.os, "write", write)


def test_a_summary_that_does_not_fit_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("## earlier step\n")
    _disk_fills_after(monkeypatch, 10, summary)
    with pytest.raises(ReportError, match="No space left on device; nothing was appended"):
        append_text("## opassess\n" + "x" * 1000 + "\n", summary, "the summary")
    assert summary.read_text() == "## earlier step\n"


def test_the_cli_fails_with_one_line_when_the_summary_does_not_fit(tmp_path, monkeypatch):
    model = tmp_path / "tiny.py"
    model.write_text(textwrap.dedent(TINY))
    summary = tmp_path / "summary.md"
    summary.write_text("before\n")
    _disk_fills_after(monkeypatch, 3, summary)
    result = runner.invoke(app, ["scan", str(model), "-f", "json", "-o", str(tmp_path / "r.json")],
                           env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("opassess: error")]
    assert len(lines) == 1 and "GITHUB_STEP_SUMMARY" in lines[0] and "No space left" in lines[0], result.output
    assert "Traceback" not in result.output
    assert summary.read_text() == "before\n"


def test_a_250_byte_output_name_is_written_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / ("r" * 245 + ".json")
    write_output("{}\n", target)
    assert target.read_text() == "{}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]


def test_an_error_line_is_cut_to_the_limit():
    text = one_line(ValueError("x" * 10_000 + "\n" + "y"))
    assert len(text) == MESSAGE_LIMIT and text.endswith("…") and "\n" not in text
    assert one_line(ValueError("short\nmessage")) == "short message"


def test_a_model_raising_a_huge_message_is_one_short_line(tmp_path):
    model = tmp_path / "loud.py"
    model.write_text("def build_model():\n    raise RuntimeError('z' * 100_000)\n")
    result = runner.invoke(app, ["scan", str(model), "-f", "json", "-o", str(tmp_path / "r.json")])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and len(lines[0]) < MESSAGE_LIMIT + 100, len(lines[0])


def test_a_portfolio_model_raising_a_huge_message_is_one_short_line(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    (models / "loud.py").write_text("def build_model():\n    raise RuntimeError('z' * 100_000 + '\\nsecond line')\n")
    (models / "loud2.py").write_text("def build_model():\n    raise RuntimeError('w' * 100_000)\n")
    result = runner.invoke(app, ["scan", str(models), "-o", str(tmp_path / "out"), "-q"])
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("opassess: error:")]
    assert len(errors) == 2 and all(len(line) <= MESSAGE_LIMIT + len("opassess: error: ") for line in errors)
    assert "second line" not in result.output and not list((tmp_path / "out").glob("*.tmp"))
