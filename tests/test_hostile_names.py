"""File names a model's author chose: a newline in a model file's name, bytes that are not UTF-8 in a source file's.
Each scan works, and the JSON report holds the name losslessly (json.loads gives it back; os.fsencode its bytes).
(The other formats are left as they were: a name that is not UTF-8 in them is still a write error, exit 1.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support import ROOT

MODEL = (ROOT / "tests" / "models" / "custom_op.py").read_text(encoding="utf-8")


def _opassess(*args, cwd):
    return subprocess.run([sys.executable, "-m", "opassess", *map(str, args)], capture_output=True, cwd=cwd,
                          timeout=300)


def test_a_model_file_named_with_a_newline_is_scanned_and_named(tmp_path):
    model = tmp_path / "new\nline.py"
    model.write_text(MODEL, encoding="utf-8")
    done = _opassess("scan", model, "-f", "json", "--handoff", tmp_path / "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["model"]["source"] == "new\nline.py"
    markdown = _opassess("scan", model, "-f", "md", cwd=tmp_path)
    assert markdown.returncode == 0, markdown.stderr
    assert b"new line.py" in markdown.stdout and b"\nline.py" not in markdown.stdout  # one line of the header
    verify = (tmp_path / "out" / "verify_apis.txt").read_text(encoding="utf-8")
    assert "new\\nline.py" in verify.splitlines()[0]


@pytest.mark.skipif(sys.platform != "linux", reason="a file name of any bytes is Linux's")
def test_a_source_file_name_that_is_not_utf8_is_kept_losslessly_in_json(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    name = os.fsdecode(b"bad\xff.py")
    (tree / name).write_text("import torch\nx = torch.ones(1).cuda()\n", encoding="utf-8")
    for args in (("-f", "json"), ("-o", tmp_path / "report.json")):
        done = _opassess("source", tree, *args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        data = done.stdout if args[0] == "-f" else (tmp_path / "report.json").read_bytes()
        assert b"\xff" not in data
        files = json.loads(data.decode("utf-8"))["source"]["files"]
        assert os.fsencode(next(f for f in files if f.startswith("bad"))) == b"bad\xff.py"
