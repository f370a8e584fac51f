"""Hostile models against the inputs: what the verdict rests on is read and hashed before any model code runs, and a
file a model changes while it runs is an error naming it (isolation/inputs.py), never a verdict on other inputs."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap

from typer.testing import CliRunner

from opassess.cli import app
from tests.support import ROOT

# A model that, at import, writes a `verified: passed` result for its own op into the overlay opassess reads.
OVERLAY_AT_IMPORT = textwrap.dedent('''
    import json, os, torch
    with open(os.path.join(os.environ["OPASSESS_KB_DIR"], "verified.json"), "w") as out:
        json.dump({"format": 1, "kind": "verified", "entries": {"torch.i0": {}}}, out)
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.i0(x)
    def build_model():
        return M()
    def example_inputs():
        return (torch.randn(2, 3),)
''')

# A model that finds the --weights file on its grandparent's command line and makes custom-dev work cost nothing,
# during its forward.
WEIGHTS_IN_FORWARD = textwrap.dedent('''
    import os, torch
    def _rewrite():
        pid = os.getppid()
        for _ in range(4):
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
            if b"--weights" in argv:
                path = argv[argv.index(b"--weights") + 1].decode()
                with open(path, "a") as out:
                    out.write("\\n# rewritten by the model\\n")
                return
            pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    class M(torch.nn.Module):
        def forward(self, x):
            _rewrite()
            return torch.i0(x)
    def build_model():
        return M()
    def example_inputs():
        return (torch.randn(2, 3),)
''')

PLAIN = OVERLAY_AT_IMPORT.replace(
    'with open(os.path.join(os.environ["OPASSESS_KB_DIR"], "verified.json"), "w") as out:', "if False:")


def _scan(tmp_path, source, *extra, env=None):
    model = tmp_path / "model.py"
    model.write_text(source)
    return subprocess.run([sys.executable, "-m", "opassess", "scan", str(model), "-f", "json", *extra],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, env={**os.environ, **(env or {})})


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.startswith("opassess: error:")]
    assert len(lines) == 1, stderr
    return lines[0]


def test_an_overlay_written_at_import_is_an_error_naming_it_and_no_verdict(tmp_path):
    overlay = tmp_path / "kb"
    overlay.mkdir()
    done = _scan(tmp_path, OVERLAY_AT_IMPORT, "--fail-on", "custom-dev", "--sandbox", "off",
                 env={"OPASSESS_KB_DIR": str(overlay)})
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""  # no report
    line = _one_line(done.stderr)
    assert f"{overlay / 'verified.json'}: appeared while the model ran" in line


def test_an_overlay_file_rewritten_by_the_model_is_an_error_naming_it(tmp_path):
    overlay = tmp_path / "kb"
    overlay.mkdir()
    (overlay / "verified.json").write_text(json.dumps({"format": 1, "kind": "verified", "entries": {}}))
    done = _scan(tmp_path, OVERLAY_AT_IMPORT, "--fail-on", "custom-dev", "--sandbox", "off",
                 env={"OPASSESS_KB_DIR": str(overlay)})
    assert done.returncode == 1, done.stderr
    assert f"{overlay / 'verified.json'}: an input the verdict rests on changed while the model ran" \
        in _one_line(done.stderr)


def test_weights_rewritten_during_the_forward_are_an_error_naming_the_file(tmp_path):
    weights = tmp_path / "weights.toml"
    weights.write_text("")
    done = _scan(tmp_path, WEIGHTS_IN_FORWARD, "--weights", str(weights), "--max-person-days", "5",
                 "--sandbox", "off")
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert f"{weights}: an input the verdict rests on changed while the model ran" in _one_line(done.stderr)


def test_the_report_records_the_hash_of_every_input_and_the_overlay(tmp_path):
    weights = tmp_path / "weights.toml"
    weights.write_text("# nothing changed\n")
    overlay = tmp_path / "kb"
    overlay.mkdir()
    done = _scan(tmp_path, PLAIN, "--weights", str(weights), env={"OPASSESS_KB_DIR": str(overlay)})
    assert done.returncode == 0, done.stderr
    assert f"opassess: knowledge-base overlay: {overlay}" in done.stderr
    inputs = json.loads(done.stdout)["inputs"]
    assert inputs["overlay"] is not None and inputs["overlay"].endswith("kb")
    digests = {entry["path"]: entry["sha256"] for entry in inputs["files"]}
    assert {"<shipped>/opassess/data/kb/kernels.json", "<shipped>/opassess/data/rules.toml",
            "<shipped>/templates/md.j2"} <= set(digests)
    assert digests["<shipped>/weights.toml"] == hashlib.sha256((ROOT / "weights.toml").read_bytes()).hexdigest()
    mine = [path for path, digest in digests.items() if digest == hashlib.sha256(weights.read_bytes()).hexdigest()]
    assert len(mine) == 1 and mine[0].endswith("weights.toml") and not mine[0].startswith("<shipped>")


def test_in_a_portfolio_an_overlay_written_by_a_model_is_an_error_naming_it(tmp_path, monkeypatch):
    overlay = tmp_path / "kb"
    overlay.mkdir()
    monkeypatch.setenv("OPASSESS_KB_DIR", str(overlay))
    models = tmp_path / "models"
    models.mkdir()
    (models / "writer.py").write_text(OVERLAY_AT_IMPORT)
    (models / "plain.py").write_text(PLAIN)
    result = CliRunner().invoke(app, ["scan", str(models), "-o", str(tmp_path / "out"), "-q",
                                      "--sandbox", "off"])
    assert result.exit_code == 1, result.output
    assert f"{overlay / 'verified.json'}: appeared while the model ran" in result.output


# A model that claims to be another file: it patches the loader's naming in its worker.
OTHER_NAME = textwrap.dedent('''
    import torch
    import opassess.load
    opassess.load.display_path = lambda target: "trusted/resnet50.py"
    class M(torch.nn.Module):
        def forward(self, x):
            return x + 1
    def build_model():
        return M()
    def example_inputs():
        return (torch.randn(2, 3),)
''')


def test_the_report_names_the_scanned_file_not_the_workers_claim(tmp_path):
    done = _scan(tmp_path, OTHER_NAME)
    assert done.returncode == 0, done.stderr
    model = json.loads(done.stdout)["model"]
    assert model["source"] == "model.py" and model["entry"] == "build_model"  # (made portable, as every path)
    assert model["class"] == "M"  # the worker's claim, kept as such


def test_a_report_a_model_rewrites_in_the_output_folder_fails_the_run_and_voids_the_resume_state(tmp_path):
    """Without the sandbox, a later model of a portfolio forges an earlier one's report in -o (and could forge the
    resume state with its hash): the run checks -o against what it wrote itself, fails naming the file, and
    removes the state, so no --resume trusts it."""
    from opassess.portfolio import STATE_FILE

    out = tmp_path / "out"
    models = tmp_path / "models"
    models.mkdir()
    (models / "a_first.py").write_text(PLAIN)
    (models / "b_forger.py").write_text(PLAIN.replace("import json, os, torch", f"""import json, os, torch
open({str(out / "a_first.json")!r}, "w").write(json.dumps({{"forged": True}}))"""))
    result = CliRunner().invoke(app, ["scan", str(models), "-o", str(out), "-q", "--jobs", "1", "--sandbox", "off"])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("opassess: error:")]
    assert lines == [f"opassess: error: {out / 'a_first.json'}: changed while the models ran (something other than "
                     "opassess wrote into -o): the resume state was removed; scan again (with --sandbox on, a model "
                     "cannot write there)"]
    assert not (out / STATE_FILE).exists()
