"""The distributed pre-flight (source/distributed.py, classify/distributed.py): a data-parallel trainer's HCCL sites,
each citing its hccl_distributed_support.tsv row, and the target product deciding the float64 collective."""
from __future__ import annotations

import json
import textwrap

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from opassess.kb.routes import load_route_facts
from opassess.source import scan_sources

TRAINER = textwrap.dedent('''\
    import os

    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP

    os.environ["NCCL_SOCKET_IFNAME"] = "eth0"


    def train(model, rank):
        dist.init_process_group("nccl")
        ddp = DDP(model, device_ids=[rank])
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
        flags = torch.zeros(4, dtype=torch.int32)
        dist.all_reduce(flags, op=dist.ReduceOp.BOR)
        loss_sum = torch.zeros(1).double()
        dist.all_reduce(loss_sum)
        ok = torch.ones(3)
        dist.all_reduce(ok)
        parts = [torch.zeros(3) for _ in range(2)]
        dist.gather(ok, parts, dst=0)
    ''')
# line -> (kind, category, the HCCL row the finding must cite)
EXPECTED = {
    8: ("env-var", "param-converted", "cuda_api_migration.tsv:3"),
    14: ("comm-hook", "param-converted", "hccl_distributed_support.tsv:17"),
    16: ("reduce-op", "param-converted", "hccl_distributed_support.tsv:7"),
    18: ("collective", "param-converted", "hccl_distributed_support.tsv:8"),
    22: ("collective", "param-converted", "hccl_distributed_support.tsv:9"),
}
DISTRIBUTED = {"collective", "reduce-op", "comm-hook", "dist-api", "env-var", "process-group"}


@pytest.fixture
def trainer(tmp_path):
    (tmp_path / "train.py").write_text(TRAINER)
    return tmp_path


def _sites(scan):
    return {f.line: f for f in scan.findings if f.kind in DISTRIBUTED}


def test_each_hccl_difference_is_a_site_citing_its_fact(trainer):
    sites = _sites(scan_sources(trainer))
    assert set(sites) == set(EXPECTED)  # the fp32 all_reduce (line 20) and init_process_group are not HCCL issues
    for line, (kind, category, row) in EXPECTED.items():
        finding = sites[line]
        assert (finding.kind, str(finding.category)) == (kind, category), line
        assert any(e.startswith(row) for e in finding.evidence), (line, finding.evidence)
        assert finding.file == "train.py" and finding.code == TRAINER.splitlines()[line - 1].strip()
    # a BOR of 0/1 flags is their MAX: a one-word change HCCL runs, not a rewrite (issue 40)
    assert sites[16].subject == "torch.distributed.ReduceOp.BOR" and "ReduceOp.MAX" in sites[16].npu_route
    assert "float64" in sites[18].npu_route and "tensor dtype float64 (seen in the source)" in sites[18].notes
    assert "use_compatible_impl" in sites[22].npu_route
    assert sites[8].subject == "NCCL_SOCKET_IFNAME" and "HCCL_" in sites[8].npu_route


def test_the_950_generation_drops_the_float64_collective_only(trainer):
    a2, a950 = _sites(scan_sources(trainer, product="A2")), _sites(scan_sources(trainer, product="950"))
    assert set(a2) - set(a950) == {18}
    assert set(a950) == set(EXPECTED) - {18}


def test_the_dtype_gate_comes_from_the_fact_row():
    gate = load_route_facts().hccl_feature("collective dtypes")
    assert gate.gated_dtypes == ("uint64", "float64") and gate.gated_from == "950"
    assert gate.cite.startswith("hccl_distributed_support.tsv:8 ")


def test_fsdp1_optimizer_state_tensor_parallel_mesh_and_group_options(tmp_path):
    (tmp_path / "tp.py").write_text(textwrap.dedent('''\
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module


        def shard(model, optim, options):
            dist.init_process_group(backend="hccl", pg_options=options)
            mesh = init_device_mesh("cuda", (2,))
            model = parallelize_module(model, mesh, {"fc": ColwiseParallel()})
            dist.all_reduce(model.weight, op=dist.ReduceOp.AVG)
            got = model.weight.new_empty(3)
            dist.recv(got)
            return FSDP.optim_state_dict(model, optim)
        '''))
    found = {(f.line, f.kind): f for f in scan_sources(tmp_path).findings}
    assert str(found[(8, "process-group")].category) == "param-converted"
    assert found[(8, "process-group")].evidence[0].startswith("cuda_api_migration.tsv:")  # ProcessGroupNCCL row
    assert found[(9, "device-string")].npu_route == "'cuda' becomes 'npu' at call time"  # the DeviceMesh string
    assert str(found[(10, "dist-api")].category) == "custom-dev"
    assert found[(10, "dist-api")].evidence[0].startswith("hccl_distributed_support.tsv:20")
    assert found[(11, "reduce-op")].evidence[0].startswith("hccl_distributed_support.tsv:5")  # AVG emulated
    assert found[(13, "collective")].evidence[0].startswith("hccl_distributed_support.tsv:10")  # recv any source
    assert found[(14, "dist-api")].evidence[0].startswith("hccl_distributed_support.tsv:19")
    assert (10, "collective") not in found and not any(k == "dist-api" and line == 4 for line, k in found)


def test_source_command_on_950_prices_one_site_less(trainer, monkeypatch):
    monkeypatch.chdir(trainer)
    documents = {}
    for target in ("Atlas A2", "950"):
        result = CliRunner().invoke(app, ["source", ".", "--target", target, "-f", "json", "-o", "-", "-q"])
        assert result.exit_code == 0, result.output
        documents[target] = json.loads(result.stdout)
    kinds = {t: sorted((s["line"], s["kind"]) for s in d["source_findings"] if s["kind"] in DISTRIBUTED)
             for t, d in documents.items()}
    assert set(kinds["Atlas A2"]) - set(kinds["950"]) == {(18, "collective")}
    bor = next(s for s in documents["Atlas A2"]["source_findings"] if s["kind"] == "reduce-op")
    assert bor["person_days"]["likely"] > 0 and bor["evidence"][0].startswith("hccl_distributed_support.tsv:7")


def test_kb_show_prints_the_hccl_fact():
    result = CliRunner().invoke(app, ["kb", "show", "torch.distributed.ReduceOp.BOR"])
    assert result.exit_code == 0, result.output
    assert "hccl_distributed_support.tsv:7" in result.stdout and "unsupported" in result.stdout


def test_an_nccl_variable_with_a_cited_hccl_counterpart_names_it(tmp_path):
    """NCCL_ASYNC_ERROR_HANDLING and torch's newer TORCH_NCCL_BLOCKING_WAIT get the exact variable torch_npu reads
    (data/hccl_env.toml, citing Ascend/pytorch's docs at a commit); a variable with none keeps the family advice."""
    (tmp_path / "env.py").write_text(textwrap.dedent('''\
        import os
        os.environ["NCCL_ASYNC_ERROR_HANDLING"] = "1"
        os.environ.setdefault("TORCH_NCCL_BLOCKING_WAIT", "1")
        os.environ["NCCL_SOCKET_IFNAME"] = "eth0"
        '''))
    sites = _sites(scan_sources(tmp_path))
    assert sorted((line, f.subject) for line, f in sites.items()) == [
        (2, "NCCL_ASYNC_ERROR_HANDLING"), (3, "TORCH_NCCL_BLOCKING_WAIT"), (4, "NCCL_SOCKET_IFNAME")]
    asynchronous = sites[2]
    assert str(asynchronous.npu_route) == ("set TORCH_HCCL_ASYNC_ERROR_HANDLING instead; nothing on the NPU reads "
                                           "NCCL_ASYNC_ERROR_HANDLING")
    assert asynchronous.evidence[0] == ("Ascend/pytorch@9e73e708ab9350d203475609f36f8a43f6a0c2ab:docs/zh/api/"
                                        "environment_variable/collective_communication/"
                                        "TORCH_HCCL_ASYNC_ERROR_HANDLING.md:L1-L30")
    assert "torch_npu also reads its older name HCCL_ASYNC_ERROR_HANDLING (deprecated)" in map(str, asynchronous.notes)
    assert str(sites[3].npu_route).startswith("set TORCH_HCCL_BLOCKING_WAIT instead")
    assert "HCCL_* variables" in str(sites[4].npu_route) and sites[4].evidence[0].startswith("cuda_api_migration.tsv:3")
