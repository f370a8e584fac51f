"""Hostile names in the hand-offs (handoff/escape.py): a model's operator, class and attribute names cannot add code
to a generated Python file, lines to a line file or a YAML entry, or a file name the file system refuses. The
generated files are executed here, and nothing the names carry runs.
"""
from __future__ import annotations

import ast
import copy
import functools
import subprocess
import sys

from opassess.handoff import VERIFY_FILE, handoff_files, to_verify, write_handoffs
from opassess.handoff.escape import STEM_LIMIT, file_stem, one_line
from opassess.kb.wheel_import import parse_functions_yaml
from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.report import build_view
from tests.score.records import MODELS

# A name that closes a docstring and imports what it likes, with ESC, CR, a bidi override and a line separator.
INJECTED = 'x"""\nimport pathlib; pathlib.Path(MARK).write_text("injected")\n"""\x1b[2J\r\u202e\u2028#'


@functools.cache
def _document() -> dict:
    return build_view(assess(ScanOptions(target=str(MODELS / "opdesc_custom.py")))).document


def _hostile(mark) -> dict:
    """The real document of a model with a custom-dev operator, its names replaced by hostile ones."""
    document = copy.deepcopy(_document())
    document["model"]["class"] = INJECTED
    for op in document["operators"]:
        if op.get("category") == "custom-dev":
            op["op"] = f"opassess_desc::{INJECTED.replace('MARK', repr(str(mark)))}"
            for sig in op.get("signatures") or ():
                sig["attrs"] = {**sig["attrs"], INJECTED: INJECTED} if "scale" in sig["attrs"] else sig["attrs"]
    long = copy.deepcopy(next(op for op in document["operators"] if op.get("category") == "custom-dev"))
    long["op"] = "opassess_desc::" + "L" * 400
    document["operators"].append(long)
    return document


def test_generated_python_runs_without_the_names_code(tmp_path):
    mark = tmp_path / "injected"
    written = write_handoffs(_hostile(mark), tmp_path / "handoff")
    scripts = [p for p in written if p.suffix == ".py"]
    assert any(p.name.startswith("repro_") for p in scripts) and any(p.name.startswith("test_") for p in scripts)
    for script in scripts:
        tree = ast.parse(script.read_text(encoding="utf-8"))  # valid Python
        docstring = ast.get_docstring(tree, clean=False)
        assert "import pathlib" not in {n.names[0].name for n in tree.body if isinstance(n, ast.Import)}
        assert docstring is not None and "\n" not in docstring.split(":", 1)[0]  # the name stayed on its line
        # executed as the NPU host would: the script itself, and the harness under pytest
        if script.name.startswith("repro_"):
            subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, timeout=300)
        else:
            subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(script)],
                           cwd=tmp_path, capture_output=True, timeout=300)
        assert not mark.exists(), f"{script.name} ran the operator name's code"


def test_line_files_and_yaml_keep_one_entry_per_name(tmp_path):
    document = _hostile(tmp_path / "injected")
    files = handoff_files(document)
    ops = [line for line in files[VERIFY_FILE].splitlines() if not line.startswith("#")]
    assert len(ops) == sum(1 for op in document["operators"] if to_verify(op))
    assert all(line.isascii() and line.isprintable() for line in files[VERIFY_FILE].splitlines())
    for name, text in files.items():
        if name.endswith(".yaml"):
            assert all(line.isascii() and line.isprintable() for line in text.splitlines()), name
            [entry] = parse_functions_yaml(text, name)["custom"]
            assert entry["func"].startswith("npu_") and "\n" not in entry["func"]
            assert set(entry) == {"func", "op_api", "gen_opapi"}
        if name.endswith(".md"):
            assert not any(line.startswith("import pathlib") for line in text.splitlines()), name
            assert "\x1b" not in text and "\r" not in text and "\u2028" not in text


def test_file_names_from_names_are_sanitised_and_capped_with_a_hash(tmp_path):
    written = write_handoffs(_hostile(tmp_path / "injected"), tmp_path / "handoff")
    assert all(len(p.name.encode()) <= STEM_LIMIT + len("op_plugin_.yaml") for p in written)
    assert all(p.name.isascii() and "/" not in p.name for p in written)
    assert file_stem("a::" + "L" * 400) != file_stem("b::" + "L" * 400)
    assert len(file_stem("L" * 400)) == STEM_LIMIT
    assert file_stem("opassess_examples::fused_bias_gelu") == "opassess_examples__fused_bias_gelu"


def test_one_line_round_trips_through_a_docstring():
    text = one_line(INJECTED + "\\\"\udcff")
    assert text.isascii() and text.isprintable()
    assert ast.literal_eval(f'"""{text}"""') == INJECTED + "\\\"\udcff"


def test_a_scan_with_a_hostile_class_name_gates_and_hands_off(tmp_path):
    """End to end: an autograd.Function named to inject, a 400-character name and an ESC/CR name: the scan writes
    its hand-offs (exit 0, not 1: the long name is a capped file name), the terminal report holds no control."""
    model = tmp_path / "evil.py"
    model.write_text(HOSTILE_MODEL.replace("MARK_PATH", repr(str(tmp_path / "injected"))))
    done = subprocess.run([sys.executable, "-m", "opassess", "scan", str(model), "--handoff", str(tmp_path / "out"),
                           "-f", "terminal"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not any(c in done.stdout for c in "\x1b\r\x85\u2028\u202e")
    assert not any(ord(c) < 32 and c != "\n" for c in done.stdout)
    scripts = sorted((tmp_path / "out").glob("*.py"))
    assert len(scripts) == 3
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *map(str, scripts)],
                   cwd=tmp_path, capture_output=True, timeout=300)
    assert not (tmp_path / "injected").exists()
    assert len((tmp_path / "out" / VERIFY_FILE).read_text().splitlines()) == 2 + 3


HOSTILE_MODEL = '''
import torch
MARK = MARK_PATH
def _fn(name):
    class F(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.sign()
        @staticmethod
        def backward(ctx, g):
            return g
    F.__qualname__ = F.__name__ = name
    return F
INJECT = _fn('F"""\\nimport pathlib; pathlib.Path(MARK).write_text("x")\\n"""')
ESC = _fn("E\\x1b[2J\\rok\\u202e\\x85")
LONG = _fn("L" * 400)
class M(torch.nn.Module):
    def forward(self, x):
        return LONG.apply(ESC.apply(INJECT.apply(x)))
def build_model():
    return M()
def example_inputs():
    return (torch.randn(2, 3),)
'''
