"""Hostile inputs (issue 15): every case ends with its documented exit code, exactly one line on stderr and no
traceback, nothing left behind (no temporary file) and nothing replaced that is not a regular file.

Everything runs in tmp_path: FIFOs, sockets and links are made there; a device node is simulated (the real
/dev/null and /dev/full are never touched)."""
from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from opassess import output as write_module
from opassess.cli import app
from opassess.errors import ReportError
from opassess.output import append_text, write_output
from opassess.report.formats.html import SCRIPT_HASH_PLACEHOLDER, script_hash, with_script_hash
from opassess.report.text import inert
from tests.support import ROOT, TINY

runner = CliRunner()

# Module and class names that try to leave their code span or table row, start a heading, open raw HTML, drive the
# terminal (ESC, OSC, BEL) or reorder what is read (U+2028, U+202E).
HOSTILE = """
    import torch
    from torch import nn

    Evil = type("Evil\\r# All checks passed\\r<img src=x>\\x1b[2J\\u202e", (nn.Module,),
                {"forward": lambda self, x: torch.special.gammaln(x)})

    def build_model():
        model = nn.Sequential()
        model.add_module("a\\r# All checks passed", nn.Linear(4, 4))
        model.add_module("b\\r<img src=x>\\u2028\\x1b]0;title\\x07", Evil())
        return model

    def example_inputs():
        return (torch.randn(2, 4),)
"""
# Any control character but the line feed, DEL, C1, the line/paragraph separators, bidi controls.
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def run(*args, env=None):
    return runner.invoke(app, [str(a) for a in args], env=env)


def one_line(result, code: int, *needles: str) -> str:
    """The result exited with `code` and said exactly one line on stderr, with every needle in it, no traceback."""
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output and "internal error" not in result.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def usage_error(result, *needles: str) -> str:
    """Exit 2 with typer's usage box (its lines are the box's, so only the text inside is checked)."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())
    for needle in needles:
        assert needle in text, text
    return text


def debris(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture
def tiny(model_file):
    return model_file(TINY, "tiny.py")


# ---------------------------------------------------------------- 1. -o replaces only a regular file

def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("make, kind", [
    (_fifo, "it is a FIFO"),
    (lambda p: (p.mkdir(), p)[1], "it is a directory"),
    (lambda p: (p.symlink_to(_fifo(p.parent / "pipe")), p)[1], "a symbolic link to a FIFO"),
    (lambda p: (p.symlink_to(p.parent / "nowhere"), p)[1], "a symbolic link to nothing"),
    (lambda p: (p.symlink_to(p.parent), p)[1], "a symbolic link to a directory"),
])
def test_writer_refuses_anything_but_a_regular_file(tmp_path, make, kind):
    target = make(tmp_path / "report.json")
    before = os.lstat(target)
    with pytest.raises(ReportError, match=re.escape(kind)) as info:
        write_output("x", target)
    assert str(target) in str(info.value) and "only a regular file" in str(info.value)
    after = os.lstat(target)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)  # nothing replaced
    assert debris(tmp_path) == []


def test_writer_refuses_a_socket(tmp_path):
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(ReportError, match="it is a socket"):
            write_output("x", path)
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
    finally:
        server.close()


def test_writer_refuses_a_device_node_simulated(tmp_path, monkeypatch):
    """A character device (as /dev/null is) refused: lstat reports one for a sandbox path, no real device used."""
    target = tmp_path / "null"
    target.write_text("stand-in")
    real_lstat = os.lstat

    def device_lstat(path, *args, **kwargs):
        status = real_lstat(path, *args, **kwargs)
        if Path(path) == target:
            return os.stat_result((stat.S_IFCHR | 0o666, *tuple(status)[1:]))
        return status

    monkeypatch.setattr(write_module.os, "lstat", device_lstat)
    with pytest.raises(ReportError, match="it is a character device"):
        write_output("x", target)
    assert target.read_text() == "stand-in" and debris(tmp_path) == []


def test_a_link_to_a_regular_file_is_written_through(tmp_path):
    real = tmp_path / "real.md"
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "link.md"
    link.symlink_to(real)
    write_output("new", link)
    assert link.is_symlink() and os.readlink(link) == str(real)  # the link kept
    assert real.read_text() == "new" and stat.S_IMODE(real.stat().st_mode) == 0o640
    assert debris(tmp_path) == []


def test_a_target_swapped_for_a_fifo_during_the_write_is_refused(tmp_path, monkeypatch):
    target = tmp_path / "report.md"
    target.write_text("old")
    real_fsync = os.fsync

    def swap(fd):  # between the first check and the rename, the path becomes a FIFO
        real_fsync(fd)
        target.unlink()
        os.mkfifo(target)

    monkeypatch.setattr(write_module.os, "fsync", swap)
    with pytest.raises(ReportError, match="became a FIFO"):
        write_output("new", target)
    assert stat.S_ISFIFO(os.lstat(target).st_mode) and debris(tmp_path) == []


def test_step_summary_appends_to_a_regular_file_only(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    append_text("part\n", summary, "the summary")
    assert summary.read_text() == "# earlier step\npart\n"
    fifo = _fifo(tmp_path / "fifo")  # opened without blocking, then refused (no reader ever comes)
    with pytest.raises(ReportError, match="FIFO"):
        append_text("part\n", fifo, "the summary")
    with pytest.raises(ReportError, match="symbolic link to nothing"):
        (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
        append_text("part\n", tmp_path / "dangling", "the summary")
    assert not (tmp_path / "nowhere").exists()


def test_scan_refuses_a_fifo_before_the_model_runs(tmp_path, model_file):
    marker = tmp_path / "ran"
    model = model_file(TINY.replace("def build_model():", f"def build_model():\n        open({str(marker)!r}, 'w')"))
    fifo = _fifo(tmp_path / "report.json")
    one_line(run("scan", model, "-o", fifo, "-q"), 1, str(fifo), "FIFO")
    assert not marker.exists() and stat.S_ISFIFO(os.lstat(fifo).st_mode) and debris(tmp_path) == []


def test_every_writer_refuses_a_fifo(tmp_path, tiny):
    """diff, calibrate, the step summary, hand-offs, kb import and a portfolio's own files, through the CLI."""
    report = tmp_path / "r.json"
    assert run("scan", tiny, "-o", report, "-q").exit_code == 0
    one_line(run("diff", report, report, "-o", _fifo(tmp_path / "diff.md")), 1, "diff.md", "FIFO")
    actuals = tmp_path / "actuals.csv"
    actuals.write_text("operator,category,person_days\na,custom-dev,12\nb,custom-dev,14\n")
    one_line(run("calibrate", actuals, "-o", _fifo(tmp_path / "cal.toml")), 1, "cal.toml", "FIFO")
    step = _fifo(tmp_path / "step")
    one_line(run("scan", tiny, "-o", tmp_path / "r2.json", "-q", env={"GITHUB_STEP_SUMMARY": str(step)}), 1,
             "GITHUB_STEP_SUMMARY", "FIFO")
    hand = tmp_path / "hand"
    hand.mkdir()
    _fifo(hand / "verify_apis.txt")
    one_line(run("scan", tiny, "-o", tmp_path / "r3.json", "-q", "--handoff", hand), 1, "verify_apis.txt", "FIFO")
    out = tmp_path / "pf"
    out.mkdir()
    _fifo(out / "portfolio.md")
    one_line(run("scan", tiny, ROOT / "examples" / "lstm_tagger.py", "-o", out, "-q", "--jobs", "1"), 1,
             "portfolio.md", "FIFO")
    for folder in (tmp_path, hand, out):
        assert debris(folder) == []


def test_kb_import_refuses_a_fifo_in_place_of_the_table(tmp_path):
    dest = tmp_path / "kb"
    dest.mkdir()
    _fifo(dest / "kernels-2.14.json")
    one_line(run("kb", "import", _wheel(tmp_path), "--dest", dest), 1, "kernels-2.14.json", "FIFO")
    assert debris(dest) == []


# ---------------------------------------------------------------- 6. control characters in every text format

@pytest.fixture(scope="module")
def hostile_reports(tmp_path_factory):
    """One real scan of a model with hostile names through the CLI (JSON, the step summary with a baseline diff),
    and every other format rendered from the same model by the library."""
    from opassess.options import ScanOptions
    from opassess.pipeline.assess import assess
    from opassess.report import REPORTERS, render

    folder = tmp_path_factory.mktemp("hostile")
    model = folder / "evil\r# All checks passed\r<img src=x>.py"  # the file name is shown in every report too
    model.write_text(textwrap.dedent(HOSTILE))
    plain = folder / "plain.py"
    plain.write_text(textwrap.dedent(TINY))
    baseline = folder / "base.json"
    assert run("scan", plain, "-o", baseline, "-q", "--label", "m").exit_code == 0
    summary = folder / "summary.md"
    result = run("scan", model, "-o", folder / "evil.json", "-q", "--baseline", baseline, "--label", "m",
                 env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 0, result.output
    texts = {"summary": summary.read_text(encoding="utf-8")}
    diff = run("diff", baseline, folder / "evil.json")
    assert diff.exit_code == 0
    texts["diff"] = diff.stdout
    assessment = assess(ScanOptions(target=str(model)))
    for fmt in REPORTERS:
        if fmt not in ("json", "html"):
            texts[fmt] = render(assessment, fmt)
    texts["terminal-color"] = render(assessment, "terminal", color=True)
    return texts


@pytest.mark.parametrize("fmt", ["summary", "diff", "md", "terminal", "terminal-color", "csv", "junit", "sarif"])
def test_hostile_names_stay_inert(hostile_reports, fmt):
    text = hostile_reports[fmt]
    assert RAW_CONTROL.findall(text.replace("\x1b[", "")) == []  # only rich's own styles (ESC '[') in colour
    assert "\x1b[2J" not in text and "\x1b]0;" not in text
    assert not re.search(r"(?m)^\s*#+ All checks passed", text)  # no forged heading
    if fmt in ("summary", "diff", "md"):  # raw HTML only inside a code span, where it is literal text
        for line in text.splitlines():
            outside = re.sub(r"(`+)(?:(?!\1).)*\1", "", line)  # the line without its code spans
            assert "<img" not in outside, line
    if fmt != "diff":  # the diff names no hostile string (it lists operators only)
        # the carriage return shown as its escape (Markdown text escapes the backslash itself)
        assert "\\r# All checks passed" in text.replace("\\\\", "\\")


def test_inert_shows_every_control_character():
    assert inert("a\rb\nc\td\x1b\x85\u2028\u202e") == "a\\rb\\nc\\td\\x1b\\x85\\u2028\\u202e"
    assert inert("a\nb", newline=" ") == "a b"
    assert inert("plain · ü 中") == "plain · ü 中"


def test_an_error_line_stays_one_line_whatever_the_model_raised(model_file):
    model = model_file(TINY.replace("return nn.Sequential", "raise ValueError('x\\x1b[2Jy\\r# forged\\nline')\n"
                                                         "        return nn.Sequential"))
    line = one_line(run("scan", model, "-q"), 1, "ValueError: x\\x1b[2Jy")  # ESC shown, the rest cut at the CR
    assert "\r" not in line and "\x1b" not in line and "forged" not in line


# ---------------------------------------------------------------- 7. kb import: capped, streamed, UTF-8 named

def _wheel(folder: Path, yaml: bytes = b"official:\n- func: relu(Tensor self) -> Tensor\n", name: str = "w") -> Path:
    path = folder / f"{name}" / "torch_npu-2.14.0-cp311-cp311-manylinux_2_17_aarch64.whl"
    path.parent.mkdir(exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("torch_npu-2.14.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch_npu\n"
                                                                 "Version: 2.14.0\n")
        archive.writestr("torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml", yaml)
    return path


def test_kb_import_refuses_a_member_that_inflates_past_the_cap(tmp_path, monkeypatch):
    from opassess.kb import wheel_import

    monkeypatch.setattr(wheel_import, "MEMBER_LIMIT", 4096)
    wheel = _wheel(tmp_path, b"official:\n" + b"#" * 10_000 + b"\n")
    one_line(run("kb", "import", str(wheel), "--dest", tmp_path / "kb"), 1, str(wheel), "4096-byte limit")
    assert not (tmp_path / "kb").exists() or list((tmp_path / "kb").iterdir()) == []


def test_kb_import_real_cap_on_a_small_zip_bomb(tmp_path):
    """The shipped 64 MiB cap: a 64 KiB wheel whose YAML inflates to 64 MiB + 1 is refused before reading it."""
    from opassess.kb.wheel_import import MEMBER_LIMIT

    wheel = _wheel(tmp_path, b"\n" * (MEMBER_LIMIT + 1))
    assert wheel.stat().st_size < 1 << 20
    one_line(run("kb", "import", str(wheel), "--dest", tmp_path / "kb"), 1, f"{MEMBER_LIMIT}-byte limit")


def test_kb_import_streaming_stops_at_the_cap_whatever_the_directory_claims(tmp_path):
    """The member is read in chunks and refused once past the cap, even when its zip entry claims less (zipfile
    itself stops at the claimed size; this guards the loop should a reader not)."""
    import io
    from types import SimpleNamespace

    from opassess.errors import KnowledgeBaseError
    from opassess.kb.wheel_import import read_member

    class LyingArchive:
        def getinfo(self, name):
            return SimpleNamespace(file_size=10)

        def open(self, info):
            return io.BytesIO(b"x" * (3 << 20))

    with pytest.raises(KnowledgeBaseError, match="inflates past the 2097152-byte limit"):
        read_member(tmp_path / "w.whl", LyingArchive(), "m.yaml", limit=2 << 20)


def test_kb_import_names_non_utf8_yaml(tmp_path):
    wheel = _wheel(tmp_path, b"official:\n- func: r\xe9lu(Tensor self) -> Tensor\n")
    one_line(run("kb", "import", str(wheel), "--dest", tmp_path / "kb"), 1, "not UTF-8 text", "npu_native_functions")


# ---------------------------------------------------------------- 8. HTML: the policy allows only the page's script

def test_html_policy_lists_the_hash_of_its_own_script_only(tmp_path, tiny):
    out = tmp_path / "r.html"
    assert run("scan", tiny, "-o", out, "-q").exit_code == 0
    page = out.read_text(encoding="utf-8")
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1)
    script_src = re.search(r"script-src ([^;]*)", policy).group(1)
    scripts = re.findall(r"<script>(.*?)</script>", page, re.DOTALL)
    assert len(scripts) == 1 and script_src == script_hash(scripts[0])
    assert "unsafe-inline" not in script_src and SCRIPT_HASH_PLACEHOLDER not in page
    # Were escaping to fail and a script come earlier in the page, its hash would not be listed.
    injected = page.replace("<body>", "<body><script>alert(1)</script>", 1).replace(script_src,
                                                                                    SCRIPT_HASH_PLACEHOLDER)
    rehashed = with_script_hash(injected)
    assert script_hash("alert(1)") not in rehashed and script_hash(scripts[0]) in rehashed


# ---------------------------------------------------------------- 9. bad configuration and state: one line, exit 1

def test_weights_problems_are_one_line_naming_file_and_key(tmp_path, tiny):
    cases = {
        "latin1.toml": (b"[estimate]\nsamples = 10 # caf\xe9\n", "not UTF-8"),
        "huge.toml": (b"[effort.custom-dev]\nlow = 1e308\nhigh = 1.7e308\n", "effort.custom-dev.low"),
        "samples.toml": (b"[estimate]\nsamples = 1000000000\n", "estimate.samples"),
        "float_samples.toml": (b"[estimate]\nsamples = 1e9\n", "estimate.samples"),
        "pessimism.toml": (b"[effort.direct]\npessimism = 1e300\n", "effort.direct.pessimism"),
    }
    for name, (content, key) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        one_line(run("scan", tiny, "--weights", path, "-q"), 1, str(path), key)


def test_resume_state_of_the_wrong_shape(tmp_path, tiny):
    out = tmp_path / "out"
    out.mkdir()
    (out / "portfolio.state.json").write_text(json.dumps({"state_version": 1, "models": [1, 2]}))
    line = one_line(run("scan", tiny, ROOT / "examples" / "lstm_tagger.py", "-o", out, "--resume", "-q"), 1,
                    "portfolio.state.json", "delete the file")
    assert "'models' is list" in line


def test_resume_entries_of_the_wrong_shape_are_rescanned(tmp_path):
    from opassess.portfolio.state import resumable

    for entry in ({"status": "ok", "fingerprint": "f", "name": "../../x", "target": "t", "reports": [],
                   "seconds": 1}, {"status": "ok", "fingerprint": "f", "name": "m", "target": 3, "reports": [],
                                   "seconds": 1},
                  {"status": "ok", "fingerprint": "f", "name": "m", "target": "t", "reports": "x", "seconds": 1},
                  {"status": "ok", "fingerprint": "f", "name": "m", "target": "t", "reports": [], "seconds": "x"}):
        assert resumable(entry, "f", tmp_path) is None


@pytest.mark.parametrize("content", ["[1, 2]", '{"torch_version": "2.14", "kernels": [1]}',
                                     '{"torch_version": "2.14", "kernels": {"add": 3}}', "\udcff"])
def test_a_broken_overlay_in_the_user_data_folder(tmp_path, tiny, content):
    overlay = tmp_path / "data" / "opassess" / "kb"
    overlay.mkdir(parents=True)
    table = overlay / "kernels-2.14.json"
    table.write_bytes(content.encode("utf-8", "surrogateescape"))
    one_line(run("scan", tiny, "-q", env={"XDG_DATA_HOME": str(tmp_path / "data")}), 1, str(table),
             "remove the file")


def test_calibrate_with_huge_values(tmp_path):
    actuals = tmp_path / "a.csv"
    actuals.write_text("operator,category,person_days\na,custom-dev,1e308\nb,custom-dev,1.5e308\n")
    one_line(run("calibrate", actuals), 1, f"{actuals}:2", "above 10000")


def test_an_example_input_whose_repr_raises_is_described(tmp_path, model_file):
    model = model_file("""
        import torch
        from torch import nn

        class Weird:
            def __repr__(self):
                raise RuntimeError("no repr")

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.l = nn.Linear(4, 4)

            def forward(self, x, extra=None):
                return self.l(x)

        def build_model():
            return M()

        def example_inputs():
            return (torch.randn(2, 4), Weird())
    """)
    out = tmp_path / "r.json"
    assert run("scan", model, "-o", out, "-q").exit_code == 0
    assert "Weird whose repr raised RuntimeError" in out.read_text()


# ---------------------------------------------------------------- 10. invalid option values: exit 2

@pytest.mark.parametrize("value", ["int8", "float64", "nope"])
def test_dtype_values_are_usage_errors_listing_what_is_accepted(tiny, value):
    usage_error(run("scan", tiny, "--dtype", value, "-q"), f"'{value}': expected one of float16 (fp16, half), "
                                                           f"bfloat16 (bf16), float32 (fp32)")


@pytest.mark.parametrize("args, needle", [
    (["--input-dtype", "int8"], "'int8': expected one of bfloat16"),
    (["--input-shape", "a,b"], "comma-separated integers"),
    (["--capture", "fx,bogus"], "unknown capture method 'bogus'"),
    (["--profile", "fast"], "'fast': expected one of default, classic"),
    (["--device", "cuda"], "expected meta or cpu"),
    (["--amp", "int8", "--train"], "expected bf16 or fp16"),
    (["--executor", "k8s"], "expected local or ray"),
    (["--lang", "xx"], "xx"),
    (["-f", "docx"], "docx"),
    (["--fail-on", "everything"], "everything"),
    (["--max-risk", "9"], "less than or equal to 5"),
])
def test_fixed_set_options_are_usage_errors(tiny, args, needle):
    usage_error(run("scan", tiny, *args, "-q"), needle)


@pytest.mark.parametrize("args, needle", [(["--target", "Atlas Z9"], "unknown Ascend product 'Atlas Z9'"),
                                          (["--torch-npu", "1.0"], "torch version 1.0 is not covered")])
def test_values_the_knowledge_base_does_not_know_are_usage_errors(tiny, args, needle):
    one_line(run("scan", tiny, *args, "-q"), 2, needle)


# ---------------------------------------------------------------- 11. the rest: one clear line each

def test_a_binary_model_file(tmp_path):
    path = tmp_path / "binary.py"
    path.write_bytes(b"\x00\x01\xfe" * 50)
    line = one_line(run("scan", path, "-q"), 1, str(path), "not Python source")
    assert "None" not in line


def test_a_folder_without_model_files_says_which_and_what_counts(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line(run("scan", empty, "-o", tmp_path / "out", "-q"), 1, str(empty), "no *.py file",
             "defines build_model()")
    (empty / "helper.py").write_text("x = 1\n")
    (empty / "gone.py").symlink_to(tmp_path / "nowhere.py")
    one_line(run("scan", empty, "-o", tmp_path / "out", "-q"), 1, str(empty), "helper.py: defines no build_model()",
             "gone.py: a symbolic link to nothing")


@pytest.mark.parametrize("content", ['{"format_version": 1, "model": 3}', "[1, 2", "\xff", "null"])
def test_a_malformed_baseline(tmp_path, tiny, content):
    baseline = tmp_path / "base.json"
    baseline.write_bytes(content.encode("latin-1"))
    one_line(run("scan", tiny, "--baseline", baseline, "-q"), 1, str(baseline))


def test_a_closed_stdout_is_one_line_not_a_traceback(tmp_path, tiny):
    """`opassess scan ... -f json | head -c0`: the reader is gone before the report is written."""
    read, write = os.pipe()
    os.close(read)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for fmt in ("json", "terminal"):
        proc = subprocess.run([sys.executable, "-m", "opassess", "scan", str(tiny), "-f", fmt, "-q"], stdout=write,
                              stderr=subprocess.PIPE, text=True, env=env, timeout=300)
        lines = [line for line in proc.stderr.splitlines() if line.startswith(("opassess", "Traceback", "Exception"))]
        assert proc.returncode == 1 and len(lines) == 1 and "closed" in lines[0], proc.stderr
    os.close(write)
