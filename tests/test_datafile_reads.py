"""Every input is checked before it is read (issue 21, item 5): a FIFO, socket or device is one line, never a hang;
a file nested 100,000 deep or larger than the cap is one line naming the file, never RecursionError/MemoryError."""
from __future__ import annotations

import os
import socket
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from opassess import datafile
from opassess.cli import app
from opassess.datafile import read_bytes, read_json, read_toml
from opassess.errors import ConfigError, ReportError
from tests.support import TINY

runner = CliRunner()


def fifo(path: Path) -> Path:
    os.mkfifo(path)  # opened by nobody: a blocking open or read would hang the test
    return path


def one_line(result, code: int, *needles: str) -> str:
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / "tiny.py"
    path.write_text(textwrap.dedent(TINY))
    return path


def test_read_bytes_refuses_a_fifo_a_socket_and_a_folder(tmp_path):
    with pytest.raises(ConfigError, match="FIFO"):
        read_bytes(fifo(tmp_path / "pipe"))
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock"))
    try:
        with pytest.raises(ConfigError, match="socket"):
            read_bytes(tmp_path / "sock")
    finally:
        server.close()
    with pytest.raises(ConfigError, match="folder|Is a directory"):
        read_bytes(tmp_path)


def test_read_bytes_refuses_a_character_device_and_stops_at_the_cap(tmp_path):
    with pytest.raises(ConfigError, match="character device"):
        read_bytes("/dev/zero")  # endless: only read, never written
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 1001)
    with pytest.raises(ReportError, match="larger than 1000 bytes"):
        read_bytes(big, "report", ReportError, limit=1000)
    assert read_bytes(big, limit=1001) == b" " * 1001


def test_nested_json_and_toml_are_one_error_naming_the_file(tmp_path):
    deep_json = tmp_path / "deep.json"
    deep_json.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ConfigError, match=r"deep\.json: .*nested too deep"):
        read_json(deep_json)
    deep_toml = tmp_path / "deep.toml"
    deep_toml.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(ConfigError, match=r"deep\.toml: .*nested too deep"):
        read_toml(deep_toml)


@pytest.mark.parametrize("option", ["--weights", "--baseline"])
def test_scan_refuses_a_fifo_for_weights_and_baseline(tmp_path, tiny, option):
    pipe = fifo(tmp_path / ("w.toml" if option == "--weights" else "base.json"))
    one_line(runner.invoke(app, ["scan", str(tiny), option, str(pipe), "-f", "json", "-o", str(tmp_path / "r.json")]),
             1, str(pipe), "FIFO")
    assert not (tmp_path / "r.json").exists()


def test_scan_refuses_a_fifo_model_file(tmp_path):
    pipe = fifo(tmp_path / "model.py")
    one_line(runner.invoke(app, ["scan", str(pipe)]), 1, "model.py", "FIFO")


@pytest.mark.parametrize("kind", ["json", "toml"])
def test_scan_names_a_deeply_nested_input(tmp_path, tiny, kind):
    if kind == "json":
        path, option = tmp_path / "base.json", "--baseline"
        path.write_text("[" * 100_000 + "]" * 100_000)
    else:
        path, option = tmp_path / "w.toml", "--weights"
        path.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    one_line(runner.invoke(app, ["scan", str(tiny), option, str(path), "-f", "json", "-o", str(tmp_path / "r.json")]),
             1, str(path), "nested too deep")


def test_a_manifest_that_is_a_fifo_or_nested_is_one_line(tmp_path, tiny):
    deep = tmp_path / "deep.toml"
    deep.write_text("model = " + "[" * 100_000 + "]" * 100_000 + "\n")
    one_line(runner.invoke(app, ["scan", str(deep), "-o", str(tmp_path / "out")]), 1, "deep.toml", "nested too deep")


def test_calibrate_refuses_a_fifo_csv(tmp_path):
    pipe = fifo(tmp_path / "actuals.csv")
    one_line(runner.invoke(app, ["calibrate", str(pipe)]), 1, "actuals.csv", "FIFO")


def test_a_fifo_in_a_source_tree_is_skipped_not_read(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "ok.py").write_text("import torch\nx = torch.cuda.is_available()\n")
    fifo(tmp_path / "src" / "pipe.py")
    result = runner.invoke(app, ["source", str(tmp_path / "src"), "-f", "json", "-o", str(tmp_path / "s.json")])
    assert result.exit_code in (0, 3), result.output
    text = (tmp_path / "s.json").read_text()
    assert "pipe.py" in text and "FIFO" in text


def test_a_fifo_kb_table_is_one_error_naming_it(tmp_path):
    from opassess.errors import KnowledgeBaseError
    from opassess.kb.store import KnowledgeBase

    fifo(tmp_path / "ops.json")
    kb = KnowledgeBase(directory=tmp_path, rules_path=tmp_path / "rules.toml",
                       error_codes_path=tmp_path / "error_codes.toml")
    with pytest.raises(KnowledgeBaseError, match=r"ops\.json: .*FIFO"):
        kb._table("ops")


def test_the_cap_is_a_module_constant():
    assert datafile.READ_LIMIT >= 64 * 1024 * 1024


# ---- the input kinds not covered above, each as a FIFO and nested 100,000 deep, through the command line ----

DEEP_JSON = "[" * 100_000 + "]" * 100_000


def _deep_or_fifo(path: Path, kind: str, text: str) -> Path:
    if path.exists():
        path.unlink()
    if kind == "fifo":
        return fifo(path)
    path.write_text(text)
    return path


@pytest.mark.parametrize("kind, needle", [("fifo", "FIFO"), ("nested", "nested too deep")])
def test_a_manifest_is_checked(tmp_path, kind, needle):
    manifest = _deep_or_fifo(tmp_path / "models.toml", kind, "model = " + DEEP_JSON + "\n")
    one_line(runner.invoke(app, ["scan", str(manifest), "-o", str(tmp_path / "out")]), 1, "models.toml", needle)


@pytest.mark.parametrize("kind, needle", [("fifo", "FIFO"), ("nested", "nested too deep")])
def test_a_kb_folder_table_is_checked(tmp_path, tiny, kind, needle):
    import shutil

    import opassess

    kb = tmp_path / "kb"
    shutil.copytree(Path(opassess.__file__).parent / "data" / "kb", kb)
    _deep_or_fifo(kb / "apis.json", kind, DEEP_JSON)
    one_line(runner.invoke(app, ["scan", str(tiny), "--kb", str(kb), "-f", "json", "-o", str(tmp_path / "r.json")]),
             1, "apis.json", needle)
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("kind, needle", [("fifo", "FIFO"), ("nested", "nested too deep")])
def test_a_resume_state_is_checked(tmp_path, tiny, kind, needle):
    out = tmp_path / "out"
    out.mkdir()
    state = _deep_or_fifo(out / "portfolio.state.json", kind, DEEP_JSON)
    (tmp_path / "tiny2.py").write_text(tiny.read_text())
    one_line(runner.invoke(app, ["scan", str(tiny), str(tmp_path / "tiny2.py"), "-o", str(out), "--resume", "-q"]),
             1, str(state), needle)


def test_a_deeply_nested_model_file_is_one_line(tmp_path):
    model = tmp_path / "deep.py"
    model.write_text("x = " + DEEP_JSON + "\n")
    one_line(runner.invoke(app, ["scan", str(model), "-f", "json", "-o", str(tmp_path / "r.json")]), 1,
             "deep.py:1: syntax error")


def test_a_deeply_nested_file_in_a_source_tree_is_skipped_naming_it(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "deep.py").write_text("x = " + "(" * 100_000 + ")" * 100_000 + "\n")
    result = runner.invoke(app, ["source", str(tmp_path / "src"), "-f", "json", "-o", str(tmp_path / "s.json")])
    assert result.exit_code == 0, result.output
    skipped = __import__("json").loads((tmp_path / "s.json").read_text())["source"]["skipped"]
    assert [s["file"] for s in skipped] == ["deep.py"] and "nested" in skipped[0]["reason"]
