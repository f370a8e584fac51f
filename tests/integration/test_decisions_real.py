"""A torchvision ResNet-18 run the way GPU training scripts run convolution nets under AMP: the weights and the input
moved to channels_last (PyTorch's channels_last recipe). The NPU takes the default format only (Tensor.to:
memory_format contiguous_format; the migration guide's hand edit), so the operator and the sites that ask for the
layout are one layout decision, not a port of Tensor.to plus a price per site (issue 23, item 1)."""
from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("torchvision")

from opassess.options import ScanOptions  # noqa: E402
from opassess.pipeline.assess import assess  # noqa: E402

RESNET_CHANNELS_LAST = textwrap.dedent("""
    import torch
    import torchvision


    class ChannelsLast(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torchvision.models.resnet18(weights=None).to(memory_format=torch.channels_last)

        def forward(self, x):
            return self.net(x.to(memory_format=torch.channels_last))


    def build_model():
        return ChannelsLast().eval()


    def example_inputs():
        return (torch.randn(1, 3, 64, 64),)
""")


def test_a_channels_last_resnet18_is_one_layout_decision(tmp_path):
    model = tmp_path / "resnet18_channels_last.py"
    model.write_text(RESNET_CHANNELS_LAST, encoding="utf-8")
    ungrouped = tmp_path / "ungrouped.toml"
    ungrouped.write_text("[decisions]\ngroup = false\n", encoding="utf-8")
    before, after = (assess(ScanOptions(target=str(model), weights=weights)).estimate for weights in (ungrouped, None))
    to_before = next(op for op in before.ops if op.score.classified.operator.key == "Tensor.to")
    assert to_before.cost == "per-operator" and to_before.person_days.likely > 2.0  # priced as a port
    (layout,) = [d for d in after.decisions if d.name == "layout"]
    assert layout.operators == ("Tensor.to",) and len(layout.sites) == 2  # the weights' and the input's
    to = next(op for op in after.ops if op.score.classified.operator.key == "Tensor.to")
    assert to.score.classified.category == "param-converted" and to.cost == "decision"
    assert layout.person_days.likely == pytest.approx(0.5 + 3 * 0.02)
    # every other operator of the ResNet stays as it was: direct, in the validation block
    assert {op.cost for op in after.ops if op.score.classified.operator.key != "Tensor.to"} <= {
        "validation-block", "zero-cost"}
    assert after.p50 < before.p50 - 2.5
