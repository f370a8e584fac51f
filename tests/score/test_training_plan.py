"""A training migration is its own plan (issue 40): with --train the model-level lines are a training run's
(loss-curve alignment by a protocol, mixed-precision strategy and loss scaling, optimizer and checkpoint conversion,
gradient and optimizer memory) instead of a forward pass's accuracy alignment; the training script (a train.py beside
the model, or a script --source names) is an entry point, so its sites are reached and priced in the total, and its
distributed sites add a distributed bring-up."""
from __future__ import annotations

import textwrap

import pytest

from opassess.errors import ConfigError
from opassess.options import ParallelLayout, ScanOptions
from opassess.pipeline.assess import assess
from opassess.score.weights.load import load_weights

MODEL = textwrap.dedent("""
    import torch


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x):
            return torch.relu(self.fc(x))


    def build_model():
        return Net()


    def example_inputs():
        return (torch.randn(4, 8),)
""")
TRAIN = textwrap.dedent("""
    import torch
    import torch.distributed as dist
    from model import build_model


    def main():
        dist.init_process_group("nccl")
        model = torch.nn.parallel.DistributedDataParallel(build_model().cuda())
        optimizer = torch.optim.AdamW(model.parameters())
        scaler = torch.cuda.amp.GradScaler()
        for _ in range(10):
            loss = model(torch.randn(4, 8).cuda()).sum()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
""")
TRAINING = {"loss_curve", "precision_strategy", "optimizer_checkpoint", "training_memory"}


@pytest.fixture()
def project(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def names(estimate):
    return {a.name for a in estimate.activities}


def test_a_training_step_is_priced_as_a_training_plan(project):
    forward = assess(ScanOptions(target=str(project / "model.py"))).estimate
    train = assess(ScanOptions(target=str(project / "model.py"), train=True)).estimate
    assert "accuracy" in names(forward) and not names(forward) & TRAINING
    assert TRAINING <= names(train) and "accuracy" not in names(train)
    loss_curve = next(a for a in train.activities if a.name == "loss_curve")
    assert "protocol: the same seeds (3)" in loss_curve.basis and loss_curve.person_days.likely >= 2.0
    # the optimizer step and the clipping of the captured step are the optimizer conversion's units
    optimizer = next(a for a in train.activities if a.name == "optimizer_checkpoint")
    assert "optimizer step(s) and GradScaler call(s) x 0.1" in optimizer.basis
    assert train.p50 >= 1.3 * forward.p50


def test_the_training_script_beside_the_model_is_reached_with_train(project):
    options = ScanOptions(target=str(project / "model.py"), source=(str(project),))
    forward = assess(options).estimate
    train = assess(ScanOptions(target=str(project / "model.py"), source=(str(project),), train=True)).estimate
    in_script = [item for item in train.source if item.finding.file == "train.py"]
    assert in_script and all(item.reached for item in in_script)  # priced in the total
    assert not any(item.reached for item in forward.source if item.finding.file == "train.py")  # present only
    distributed = next(a for a in train.activities if a.name == "distributed")
    assert "distributed site(s)" in distributed.basis
    assert "distributed" not in names(forward)  # a forward scan reaches no distributed site here
    # a GradScaler site in the training script is a loss scaler to set up
    precision = next(a for a in train.activities if a.name == "precision_strategy")
    assert "1 loss scaler(s) x 0.5" in precision.basis


def test_a_training_script_named_by_source_is_an_entry_point(tmp_path):
    (tmp_path / "net").mkdir()
    (tmp_path / "net" / "model.py").write_text(MODEL)
    (tmp_path / "run_training.py").write_text(TRAIN.replace("from model import", "from net.model import"))
    estimate = assess(ScanOptions(target=str(tmp_path / "net" / "model.py"), train=True,
                                  source=(str(tmp_path / "run_training.py"),))).estimate
    assert estimate.source and all(item.reached for item in estimate.source)
    assert "distributed" in names(estimate)


def test_a_parallel_layout_is_a_distributed_bring_up_without_any_source(project):
    options = ScanOptions(target=str(project / "model.py"), train=True, parallel=ParallelLayout.parse("tp=2,dp=4"))
    distributed = next(a for a in assess(options).estimate.activities if a.name == "distributed")
    assert "2 parallel dimension(s) of --parallel x 0.5" in distributed.basis
    assert distributed.person_days.likely == pytest.approx(1.0 + 2 * 0.5)


def test_the_classic_profile_prices_no_training_lines(project):
    estimate = assess(ScanOptions(target=str(project / "model.py"), train=True, profile="classic")).estimate
    assert estimate.activities == ()


def test_an_activity_for_an_unknown_step_or_unit_is_refused(tmp_path):
    bad = tmp_path / "w.toml"
    bad.write_text('[activities.loss_curve]\nstep = "eval"\n')
    with pytest.raises(ConfigError, match="step"):
        load_weights(bad)
    bad.write_text('[activities.distributed]\nneeds = ["gpus"]\n')
    with pytest.raises(ConfigError, match="needs"):
        load_weights(bad)
