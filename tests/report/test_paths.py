"""Tests for opassess.report.paths: no report holds an absolute path of the scanning machine (library files from
their site-packages, standard-library files from their lib folder, project files relative to the scanned root), so
two checkouts in different places give the same reports but for their timings (issue 23, item 4)."""
from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from opassess.cli import app
from opassess.messages import Text
from opassess.report.paths import STDLIB, portable, scrub, scrub_in_place
from tests.source.support import write_project

MLP = """
import torch
from torch import nn

def build_model():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))

def example_inputs():
    return (torch.randn(2, 8),)
"""


def test_portable_paths():
    assert portable("/venv/lib/python3.11/site-packages/transformers/x.py:3") == "site-packages/transformers/x.py:3"
    assert portable("/opt/py/lib/python3/dist-packages/t/y.py") == "dist-packages/t/y.py"
    assert portable(f"{STDLIB[0]}/multiprocessing/process.py:108") == "stdlib/multiprocessing/process.py:108"
    assert portable("/home/me/proj/models/net.py:12", ["/home/me/proj"]) == "models/net.py:12"
    assert portable("/elsewhere/net.py:12", ["/home/me/proj"]) == "net.py:12"
    assert portable("models/net.py:12") == "models/net.py:12"  # relative already
    assert scrub({"e": ["boom (at /v/lib/site-packages/t/x.py:3)", "https://x.org/a"]}) == \
        {"e": ["boom (at site-packages/t/x.py:3)", "https://x.org/a"]}


def test_scrub_in_place_scrubs_as_scrub_does():
    said = Text("kept as it is: %(n)s", {"n": "1"})
    findings = [{"file": "src/a.py", "code": "load( /home/me/proj/w.pt)", "n": 3, "said": said,
                 "evidence": ["x (at /v/lib/site-packages/t/x.py:3)", "x (at /v/lib/site-packages/t/x.py:3)"],
                 "risk": {"signals": ["c:\\w\\x.py"], "stars": 2}, "kept": ("/tuple/left.py",)}]
    expected = scrub(findings, ["/home/me/proj"])
    inner = findings[0]["evidence"]
    assert scrub_in_place(findings, ["/home/me/proj"]) is findings and findings == expected
    assert findings[0]["code"] == "load( w.pt)" and findings[0]["evidence"][1] == "x (at site-packages/t/x.py:3)"
    assert findings[0]["evidence"] is inner and findings[0]["said"] is said  # the same list; the Text kept


def _reports(tmp_path, monkeypatch, place: str) -> dict[str, str]:
    """A model and its project (tests/source/support.PROJECT) checked out at tmp_path/place, scanned from there with
    absolute arguments: the JSON (timings left out) and Markdown (timing cells left out) reports."""
    checkout = tmp_path / place
    write_project(checkout / "src")
    (checkout / "model.py").write_text(MLP, encoding="utf-8")
    monkeypatch.chdir(checkout)
    out = {}
    for fmt in ("json", "md"):
        result = CliRunner().invoke(app, ["scan", str(checkout / "model.py"), "--source", str(checkout / "src"),
                                          "-f", fmt, "-o", "-", "-q"])
        assert result.exit_code == 0, result.output
        assert str(tmp_path) not in result.stdout
        out[fmt] = result.stdout
    document = json.loads(out["json"])
    document.pop("seconds")
    for attempt in document["model"]["capture"]["attempts"]:
        attempt.pop("seconds")
    out["json"] = json.dumps(document, sort_keys=True)
    out["md"] = re.sub(r"\d+\.\d+ s\b", "", out["md"])
    return out


def test_two_checkout_locations_give_the_same_reports(tmp_path, monkeypatch):
    first = _reports(tmp_path, monkeypatch, "a")
    second = _reports(tmp_path, monkeypatch, "b/deeper/checkout")
    assert first == second
    document = json.loads(first["json"])
    assert document["model"]["source"] == "model.py" and document["source"]["root"] == "."
    assert {f["file"] for f in document["source_findings"]} >= {"src/train.py", "src/setup.py"}


ITEM = """
import torch
from torch import nn

class M(nn.Module):
    def forward(self, x):
        return x * x.abs().max().item()

def build_model():
    return M()

def example_inputs():
    return (torch.randn(2, 8),)
"""


def test_capture_errors_in_the_human_formats_hold_no_absolute_path(tmp_path):
    """A model that cannot run on meta leaves capture errors and a device note naming its file; the JSON scrubbed them,
    but the Markdown, HTML and terminal reports printed them with the scanning machine's absolute path."""
    model = tmp_path / "deep" / "item_model.py"
    model.parent.mkdir()
    model.write_text(ITEM)
    for fmt in ("md", "html", "terminal"):
        result = CliRunner().invoke(app, ["scan", str(model), "-q", "-f", fmt, "-o", "-"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        text = result.stdout.replace("\\_", "_")  # Markdown escapes underscores
        assert "item_model.py:7" in text, fmt  # the capture errors are there, named portably
        assert "/deep/" not in text, (fmt, re.findall(r".{60}/deep/.{30}", text)[:2])
