"""Inventory: operators grouped as users write them, with counts derived by hand from the model source."""
from __future__ import annotations

from opassess.options import ScanOptions
from opassess.pipeline.capture import scan_inventory
from tests.support import EXAMPLES


def test_resnet_inventory_matches_hand_counts():
    # examples/resnet_like.py docstring: ResNet-18 = stem (conv, bn, relu, maxpool) + 8 BasicBlocks
    # (conv, bn, relu, conv, bn, +, relu) + 3 downsample shortcuts (conv 1x1, bn) + avgpool, flatten, fc.
    #   Conv2d 1 + 8*2 + 3 = 20; BatchNorm2d 20; ReLU 1 + 8*2 = 17; add 8; the rest 1 each -> 69 calls.
    inv = scan_inventory(ScanOptions(str(EXAMPLES / "resnet_like.py")))
    counts = {op.key: op.count for op in inv.operators}
    assert counts == {
        "torch.nn.Conv2d": 20, "torch.nn.BatchNorm2d": 20, "torch.nn.ReLU": 17, "torch.nn.MaxPool2d": 1,
        "Tensor.add": 8, "torch.nn.AdaptiveAvgPool2d": 1, "torch.flatten": 1, "torch.nn.Linear": 1,
    }
    assert sum(counts.values()) == 69
    conv = next(op for op in inv.operators if op.key == "torch.nn.Conv2d")
    # 11 distinct (kernel, stride, padding, channels, input size) combinations, listed in the example's docstring
    assert len(conv.signatures) == 11
    assert sum(s.count for s in conv.signatures) == 20
    assert conv.aten == ("aten::convolution",)
    assert "aten::conv2d" in conv.entry
    assert len(conv.modules) == 20 and "conv1" in conv.modules and "layer2.0.downsample.0" in conv.modules
    stem = next(s for s in conv.signatures if s.attrs["kernel_size"] == [7, 7])
    assert stem.attrs["stride"] == [2, 2] and stem.attrs["padding"] == [3, 3]
    assert stem.input_shapes[0] == (1, 3, 224, 224)
    assert all(src.startswith("examples/resnet_like.py:") for src in conv.sources)
    add = next(op for op in inv.operators if op.key == "Tensor.add")
    assert add.kind == "method" and add.aten == ("aten::add.Tensor",)


def test_operators_keep_first_occurrence_order_and_module_paths():
    inv = scan_inventory(ScanOptions(str(EXAMPLES / "resnet_like.py")))
    assert inv.operators[0].key == "torch.nn.Conv2d"  # the stem conv runs first
    assert inv.operators[-1].key == "torch.nn.Linear"
    relu = next(op for op in inv.operators if op.key == "torch.nn.ReLU")
    assert "layer4.1.relu2" in relu.modules


def test_signatures_split_on_attributes_and_dtypes(model_file):
    path = model_file('''
        import torch, torch.nn as nn, torch.nn.functional as F
        class M(nn.Module):
            def forward(self, x):
                a = F.gelu(x)                       # signature 1: approximate none, float32
                b = F.gelu(x, approximate="tanh")   # signature 2: approximate tanh
                c = F.gelu(x.double())              # signature 3: float64 input
                return a + b + c.float()
        def build_model(): return M()
        def example_inputs(): return (torch.randn(2, 4),)
    ''')
    inv = scan_inventory(ScanOptions(str(path)))
    gelu = next(op for op in inv.operators if op.key == "torch.nn.functional.gelu")
    assert gelu.count == 3 and len(gelu.signatures) == 3
    # F.gelu is a C builtin without a Python signature: only the arguments actually passed are recorded
    assert {s.attrs.get("approximate") for s in gelu.signatures} == {None, "tanh"}
    assert {s.input_dtypes for s in gelu.signatures} == {("float32",), ("float64",)}
