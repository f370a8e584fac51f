"""write_output: '-' is stdout; files are replaced atomically and a failure leaves the old report and no debris."""
from __future__ import annotations

import os
import stat

import pytest

from opassess.errors import ReportError
from opassess.report import write_output


def _debris(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_dash_writes_to_stdout(capsys, tmp_path):
    write_output("hello\n", "-")
    assert capsys.readouterr().out == "hello\n"
    assert list(tmp_path.iterdir()) == []


def test_new_file_is_written_whole_with_umask_mode(tmp_path):
    target = tmp_path / "report.md"
    write_output("# report\n\u2605\n", target)
    assert target.read_text(encoding="utf-8") == "# report\n\u2605\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask  # not mkstemp's 0600
    assert _debris(tmp_path) == []


def test_existing_file_is_replaced_and_keeps_its_mode(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("old")
    target.chmod(0o640)
    write_output("new", str(target))
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_failure_mid_write_leaves_the_old_report(tmp_path):
    target = tmp_path / "report.html"
    target.write_text("complete old report")
    # A lone surrogate cannot be encoded as UTF-8: the encoder fails after the first half was written.
    text = "a" * 100_000 + "\ud800" + "b" * 10
    with pytest.raises(ReportError, match="report.html") as info:
        write_output(text, target)
    assert isinstance(info.value.__cause__, UnicodeError)
    assert target.read_text() == "complete old report"
    assert _debris(tmp_path) == []


def test_failure_at_fsync_leaves_the_old_report(tmp_path, monkeypatch):
    target = tmp_path / "report.csv"
    target.write_text("old")

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(ReportError, match=r"report\.csv: No space left on device"):
        write_output("new", target)
    assert target.read_text() == "old"
    assert _debris(tmp_path) == []


def test_failure_at_rename_leaves_the_old_report(tmp_path, monkeypatch):
    target = tmp_path / "report.csv"
    target.write_text("old")

    def broken_replace(src, dst):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(ReportError, match="Input/output error"):
        write_output("new", target)
    assert target.read_text() == "old"
    assert _debris(tmp_path) == []


def test_interrupt_mid_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "report.md"
    target.write_text("old")

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_output("new", target)
    assert target.read_text() == "old"
    assert _debris(tmp_path) == []


def test_missing_directory_names_the_path(tmp_path):
    target = tmp_path / "nowhere" / "report.md"
    with pytest.raises(ReportError, match=r"nowhere/report\.md.*does not exist"):
        write_output("x", target)


def test_directory_as_destination_is_refused(tmp_path):
    with pytest.raises(ReportError, match="is a directory"):
        write_output("x", tmp_path)


def test_relative_path_in_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_output("x", "report.txt")
    assert (tmp_path / "report.txt").read_text() == "x"
