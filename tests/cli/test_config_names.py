"""Names and templates from configuration are data (issue 21, item 4): a manifest `name` is one path component, and a
user template runs sandboxed."""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from opassess.errors import ConfigError, ReportError
from opassess.portfolio.manifest import read_manifest
from opassess.report.templates import render_template

runner = CliRunner()


def manifest(tmp_path: Path, name: str) -> Path:
    (tmp_path / "m.py").write_text("def build_model():\n    pass\n")
    path = tmp_path / "portfolio.toml"
    path.write_text(f'[[model]]\ntarget = "m.py"\nname = {name}\n')
    return path


@pytest.mark.parametrize("name", ['"../escape"', '"/tmp/abs"', '"a/b"', '".."', '""', '"a\\u0000b"', '"a\\nb"',
                                  '"a\\u001bb"'])
def test_a_manifest_name_that_is_not_one_path_component_is_refused(tmp_path, name):
    path = manifest(tmp_path, name)
    with pytest.raises(ConfigError, match=r"portfolio\.toml: key 'model\[0\]\.name': .*not a file name"):
        read_manifest(path)


def test_the_cli_refuses_an_escaping_name_in_one_line_and_writes_nothing(tmp_path):
    path = manifest(tmp_path, '"../escape"')
    out = tmp_path / "out"
    result = runner.invoke(app, ["scan", str(path), "-o", str(out)])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "model[0].name" in lines[0] and "Traceback" not in result.output
    assert not (tmp_path / "escape.json").exists() and not any(tmp_path.glob("escape*"))


def test_a_plain_name_is_kept(tmp_path):
    assert read_manifest(manifest(tmp_path, '"detector-v2"'))[0][1] == "detector-v2"


def test_a_user_template_cannot_reach_python_internals(tmp_path):
    (tmp_path / "probe.md.j2").write_text("{{ cycler.__init__.__globals__.os.popen('echo pwned').read() }}")
    with pytest.raises(ReportError, match=r"template probe\.md\.j2.*unsafe"):
        render_template("probe.md.j2", "markdown", {}, tmp_path)


def test_a_harmless_user_template_still_renders(tmp_path):
    (tmp_path / "probe.md.j2").write_text("{{ name | upper }}")
    assert render_template("probe.md.j2", "markdown", {"name": "ok"}, tmp_path) == "OK"
