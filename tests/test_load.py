"""Load: model files and package factories, example inputs, and one clear error per kind of bad input."""
from __future__ import annotations

import sys

import pytest
import torch

from opassess.errors import ModelLoadError
from opassess.load import LoadRequest, load_model, parse_shape
from tests.support import EXAMPLES


def test_model_file_is_built_on_meta_with_its_example_inputs():
    loaded = load_model(LoadRequest(str(EXAMPLES / "resnet_like.py")))
    assert loaded.device == "meta"
    assert all(p.device.type == "meta" for p in loaded.module.parameters())
    assert loaded.args[0].shape == (1, 3, 224, 224) and loaded.args[0].device.type == "meta"
    # torchvision's resnet18 has 11,689,512 parameters; the example copies its layout
    assert loaded.info.parameters == 11_689_512
    assert loaded.info.class_name == "ResNet18" and loaded.info.entry == "build_model"
    assert loaded.info.inputs == ("float32[1,3,224,224]",)


def test_package_factory_with_input_shape():
    loaded = load_model(LoadRequest("torch.nn:Identity", input_shapes=((2, 3),)))
    assert loaded.info.source == "torch.nn:Identity" and loaded.info.parameters == 0
    assert loaded.args[0].shape == (2, 3)


def test_dict_inputs_with_plain_values(model_file):
    path = model_file('''
        import torch, torch.nn as nn
        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(10, 4)
            def forward(self, input_ids, use_cache=True):
                assert use_cache is False
                return self.emb(input_ids)
        def build_model(): return LM()
        def example_inputs(): return {"input_ids": torch.zeros(1, 5, dtype=torch.long), "use_cache": False}
    ''')
    loaded = load_model(LoadRequest(str(path)))
    assert loaded.args == () and loaded.kwargs["use_cache"] is False
    assert loaded.info.inputs == ("input_ids=int64[1,5]", "use_cache=False")


def test_entry_picks_another_factory_and_dtype_casts_floats(model_file):
    path = model_file('''
        import torch, torch.nn as nn
        def build_model(): return nn.Linear(2, 2)
        def build_big(): return nn.Linear(8, 8)
        def example_inputs(): return (torch.randn(1, 8),)
    ''')
    loaded = load_model(LoadRequest(str(path), entry="build_big", dtype="bf16"))
    assert loaded.info.entry == "build_big" and loaded.info.parameters == 8 * 8 + 8
    assert loaded.module.weight.dtype == torch.bfloat16 and loaded.args[0].dtype == torch.bfloat16
    assert loaded.info.dtype == "bfloat16"
    loaded = load_model(LoadRequest("x", entry=f"{path}:build_big"))  # --entry FILE:FUNC
    assert loaded.info.parameters == 72


@pytest.mark.parametrize("source, expected", [
    (None, "no such model file"),
    ("def build_model(:\n", ":1: syntax error"),
    ("x = 1\n", "defines no build_model()"),
    ("def build_model():\n    raise RuntimeError('weights missing')\n",
     "build_model() raised RuntimeError: weights missing"),
    ("def build_model():\n    return 42\n", "returned int, expected a torch.nn.Module"),
    ("import torch.nn as nn\ndef build_model():\n    return nn.Linear(2, 2)\n", "defines no example_inputs()"),
    ("import torch.nn as nn\ndef build_model():\n    return nn.Linear(2, 2)\ndef example_inputs():\n    return 3\n",
     "example_inputs() returned int"),
    ("raise ImportError('no module named fancy_ops')\n", "importing the file raised ImportError"),
])
def test_bad_model_files_give_one_line_naming_file_and_cause(model_file, tmp_path, source, expected):
    path = tmp_path / "missing.py" if source is None else model_file(source)
    with pytest.raises(ModelLoadError) as err:
        load_model(LoadRequest(str(path)))
    message = str(err.value)
    assert expected in message and str(path) in message and "\n" not in message


def test_parse_shape():
    assert parse_shape("1,3,224,224") == (1, 3, 224, 224)
    with pytest.raises(ModelLoadError, match="comma-separated integers"):
        parse_shape("1,three")


def test_model_file_imports_a_module_beside_it(model_file, monkeypatch, tmp_path):
    # As `python model.py` would: the file's directory is importable while the model is loaded and built.
    model_file('''
        import torch.nn as nn
        def make_block(): return nn.Linear(4, 3)
    ''', name="blocks_beside_model.py")
    path = model_file('''
        import torch
        from blocks_beside_model import make_block
        def build_model(): return make_block()
        def example_inputs(): return (torch.randn(2, 4),)
    ''')
    monkeypatch.chdir(tmp_path.parent)  # the working directory is elsewhere
    loaded = load_model(LoadRequest(str(path)))
    assert loaded.info.parameters == 4 * 3 + 3
    assert str(tmp_path) not in sys.path  # and it does not stay on the path afterwards


def test_a_mistyped_dtype_fails_before_the_model_file_runs(model_file, tmp_path):
    marker = tmp_path / "imported"
    path = model_file(f'''
        import pathlib, torch, torch.nn as nn
        pathlib.Path({str(marker)!r}).write_text("imported")
        def build_model(): return nn.Linear(2, 2)
    ''')
    with pytest.raises(ModelLoadError, match="--input-dtype 'flaot16'"):
        load_model(LoadRequest(str(path), input_shapes=((1, 2),), input_dtype="flaot16"))
    assert not marker.exists()


def test_model_code_sees_its_own_argv_and_may_not_exit(model_file, monkeypatch):
    # A training script parsing its flags at import time must get its defaults, as under `python model.py`,
    # not opassess's own command line; a sys.exit() in the model's code is an error naming it, not an exit.
    monkeypatch.setattr(sys, "argv", ["opassess", "scan", "model.py", "-q"])
    path = model_file('''
        import argparse, sys, torch, torch.nn as nn
        parser = argparse.ArgumentParser()
        parser.add_argument("--hidden", type=int, default=6)
        args = parser.parse_args()
        def build_model(): return nn.Linear(args.hidden, 2)
        def build_on_gpu(): sys.exit("no GPU found")
        def example_inputs(): return (torch.randn(1, args.hidden),)
    ''')
    assert load_model(LoadRequest(str(path))).info.parameters == 6 * 2 + 2
    assert sys.argv == ["opassess", "scan", "model.py", "-q"]  # restored
    with pytest.raises(ModelLoadError, match=r"build_on_gpu\(\) raised SystemExit: no GPU found"):
        load_model(LoadRequest(str(path), entry="build_on_gpu"))


def test_nested_inputs_are_described_by_dtype_and_shape_not_by_their_values(model_file):
    # ModelInfo.inputs goes into every report: a tensor inside a container (a list, a namedtuple, a dataclass)
    # is described like a top-level one, never by its repr (values on the CPU, "tensor(..., device='meta')").
    path = model_file('''
        import collections, dataclasses, torch, torch.nn as nn
        Pair = collections.namedtuple("Pair", "a b")
        @dataclasses.dataclass
        class Batch:
            x: torch.Tensor
            n: int
        def build_model(): return nn.Identity()
        def example_inputs():
            return ([torch.ones(2), torch.ones(3, dtype=torch.long)], Pair(torch.ones(1), None),
                    Batch(torch.ones(4), 7))
    ''')
    for device in ("meta", "cpu"):
        assert load_model(LoadRequest(str(path), device=device)).info.inputs == (
            "[float32[2], int64[3]]", "Pair(a=float32[1], b=None)", "Batch(x=float32[4], n=7)")


def _captured(path, monkeypatch, skip: bool):
    import contextlib

    import opassess.load as load
    from opassess.trace.driver import trace_model

    if not skip:
        monkeypatch.setattr(load, "skip_init_on_meta", lambda device: contextlib.nullcontext())
    capture = trace_model(load_model(LoadRequest(target=str(path))))
    return capture.method, [(n.key, n.module_path, n.input_shapes, n.output_shapes, n.output_dtypes, n.attrs, n.aten)
                            for n in capture.nodes]


@pytest.mark.parametrize("name", ["resnet_like.py", "transformer_lm.py", "lstm_tagger.py"])
def test_skipping_initialisers_on_meta_gives_the_same_capture(name, monkeypatch):
    with_skip = _captured(EXAMPLES / name, monkeypatch, skip=True)
    without = _captured(EXAMPLES / name, monkeypatch, skip=False)
    assert with_skip == without and with_skip[1]


def test_initialisers_are_skipped_only_on_meta_and_restored():
    from opassess.load import skip_init_on_meta

    original = torch.nn.init.normal_
    with skip_init_on_meta("meta"):
        meta = torch.empty(3, device="meta")
        assert torch.nn.init.normal_(meta) is meta and meta.normal_() is meta
        cpu = torch.nn.init.constant_(torch.zeros(3), 2.0)  # a CPU tensor is still initialised
        assert cpu.tolist() == [2.0, 2.0, 2.0]
    assert torch.nn.init.normal_ is original and "normal_" not in torch.Tensor.__dict__


def test_building_resnet_on_meta_does_not_import_dynamo():
    import subprocess

    code = ("import sys; from opassess.load import LoadRequest, load_model; "
            f"load_model(LoadRequest(target={str(EXAMPLES / 'resnet_like.py')!r})); "
            "print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_model_folder_without_transformers_installed_is_one_line(tmp_path, monkeypatch):
    import json
    import sys

    from opassess.errors import ModelLoadError
    from opassess.load import LoadRequest, load_model

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"]}))
    monkeypatch.setitem(sys.modules, "transformers", None)  # as if it were not installed
    with pytest.raises(ModelLoadError, match="needs transformers: pip install transformers"):
        load_model(LoadRequest(target=str(tmp_path)))
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 8}))
    with pytest.raises(ModelLoadError, match=r'not a Hugging Face model config \(no "model_type"\)'):
        load_model(LoadRequest(target=str(tmp_path)))
    with pytest.raises(ModelLoadError, match="is a directory without a config.json"):
        load_model(LoadRequest(target=str(tmp_path.parent)))


def test_a_folder_of_model_folders_is_a_portfolio_of_them(tmp_path):
    from opassess.portfolio.targets import expand_targets

    for name in ("Qwen2.5-7B", "vit"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text('{"model_type": "qwen2"}')
    (tmp_path / "Qwen2.5-7B" / "modeling_qwen.py").write_text("def build_model():\n    pass\n")
    (tmp_path / "plain.py").write_text("def build_model():\n    pass\n")
    models, _ = expand_targets([str(tmp_path)])
    assert sorted(m.name for m in models) == ["Qwen2.5-7B", "plain", "vit"]
    alone, _ = expand_targets([str(tmp_path / "vit")])
    assert [m.name for m in alone] == ["vit"]
