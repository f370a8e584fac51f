"""Shipping a portfolio: which folders are staged, under which paths, what is left out, and paths taken back."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from opassess.errors import OpassessError
from opassess.options import ScanOptions
from opassess.portfolio import PortfolioOptions, expand_targets, shipping


def _options(tmp_path, targets, **scan):
    return PortfolioOptions(targets=tuple(str(t) for t in targets), scan=ScanOptions(target="", **scan),
                            out_dir=tmp_path / "zoo" / "out")


@pytest.fixture
def zoo(tmp_path):
    root = tmp_path / "zoo"
    for path in ("a/net.py", "a/sub/net2.py", "a/layers.py", "b/net3.py", ".hidden/x.py", "a/__pycache__/c.pyc",
                 "out/old.json", "a/.env"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("def build_model():\n    pass\n" if path.endswith("net.py") else "x = 1\n")
    (root / "a" / "sub" / "net2.py").write_text("def build_model():\n    pass\n")
    (root / "b" / "net3.py").write_text("def build_model():\n    pass\n")
    return root


def test_each_model_folder_is_staged_once_under_its_absolute_path(tmp_path, zoo):
    models, _ = expand_targets([str(zoo / "a"), str(zoo / "b" / "net3.py"), "torchvision.models:resnet50"])
    weights = tmp_path / "w.toml"
    weights.write_text("[effort]\n")
    options = _options(tmp_path, [], weights=weights)
    folders, files = shipping.staged_paths(models, options)
    # a/sub lies inside a/: shipped with it; the module:factory target ships nothing (it must be installed)
    assert folders == (str(zoo / "a"), str(zoo / "b"))
    assert files == (str(weights),)
    stage = tmp_path / "stage"
    stage.mkdir()
    total = shipping.stage(models, options, stage)
    copied = sorted(str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file())
    inside = str(zoo).lstrip(os.sep)
    assert copied == sorted([f"{inside}/a/layers.py", f"{inside}/a/net.py", f"{inside}/a/sub/net2.py",
                             f"{inside}/b/net3.py", str(weights).lstrip(os.sep)])  # no hidden, cache or output
    assert total == sum((stage / c).stat().st_size for c in copied)
    assert (stage / os.getcwd().lstrip(os.sep)).is_dir()  # where the worker runs from


def test_the_output_directory_is_not_shipped_even_inside_a_model_folder(tmp_path, zoo):
    (zoo / "net.py").write_text("def build_model():\n    pass\n")
    models, _ = expand_targets([str(zoo / "net.py")])
    stage = tmp_path / "stage"
    stage.mkdir()
    shipping.stage(models, _options(tmp_path, []), stage)
    staged = stage / str(zoo).lstrip(os.sep)
    assert (staged / "net.py").exists() and (staged / "a" / "net.py").exists()
    assert not (staged / "out").exists()


def test_too_much_to_ship_is_one_error_naming_the_folder(tmp_path, zoo, monkeypatch):
    monkeypatch.setattr(shipping, "MAX_STAGED_BYTES", 20)
    models, _ = expand_targets([str(zoo / "a")])
    with pytest.raises(OpassessError, match=rf"exceed 0 MiB \(the largest is {zoo / 'a'}\)"):
        shipping.stage(models, _options(tmp_path, []), tmp_path)


def test_paths_move_under_the_node_root_and_come_back_out_of_reports(tmp_path):
    root = "/tmp/ray/session_1/runtime_resources/working_dir_files/_ray_pkg_abc"
    options = _options(tmp_path, [], entry="/src/factories.py:make", weights=Path("/etc/w.toml"),
                       kb_dir=Path("kb"))
    scan = shipping.relocate_options(options, "/home/me/zoo/net.py", root)
    assert scan.target == root + "/home/me/zoo/net.py"
    assert scan.entry == root + "/src/factories.py:make"
    assert scan.weights == Path(root + "/etc/w.toml") and scan.kb_dir == Path("kb")  # relative: as on the driver
    assert shipping.relocate_options(options, "zoo/net.py", root).target == "zoo/net.py"
    assert shipping.relocate_options(options, "torchvision.models:resnet50", root).target == \
        "torchvision.models:resnet50"
    escaped = root.replace("/", "\\/")  # JSON inside an HTML <script> writes \/ for /
    text = f'"source": "{root}/home/me/zoo/net.py" <script>"{escaped}\\/home\\/me"</script>'
    assert shipping.restore(text, root) == '"source": "/home/me/zoo/net.py" <script>"\\/home\\/me"</script>'
