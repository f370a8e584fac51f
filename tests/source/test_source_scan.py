"""opassess.source.scan: a GPU training project written into tmp_path, every site's kind, category and line."""
from __future__ import annotations

import dataclasses

import pytest

from opassess.source import scan_sources
from opassess.vocabulary import Category
from tests.source.support import write_project  # the GPU training project the source tests share


@pytest.fixture
def project(tmp_path):
    return write_project(tmp_path, {".venv/lib/site.py": "import torch\ntorch.cuda.set_device(0)\n",
                                    "build/lib/copy.py": "import torch\ntorch.cuda.set_device(0)\n",
                                    "broken.py": "def f(:\n"})


def site(scan, file, line, kind):
    found = [f for f in scan.findings if (f.file, f.line, f.kind) == (file, line, kind)]
    assert len(found) == 1, [(f.file, f.line, f.kind, f.subject) for f in scan.findings]
    return found[0]


def test_every_site_of_the_training_script(project):
    scan = scan_sources(project)
    expected = [
        (5, "library-import", Category.PARAM_CONVERTED, "apex.optimizers"),
        (10, "guarded-import", Category.PARAM_CONVERTED, "flash_attn"),
        (14, "precision-note", Category.DIRECT, "torch.backends.cudnn.benchmark"),
        (15, "precision-note", Category.DIRECT, "torch.backends.cuda.matmul.allow_tf32"),
        (19, "triton-kernel", Category.CUSTOM_DEV, "count_kernel"),
        (28, "backend-string", Category.DIRECT, "torch.distributed.init_process_group"),
        (29, "gpu-api", Category.DIRECT, "torch.cuda.set_device"),
        (30, "device-string", Category.DIRECT, "tensor.cuda"),
        (31, "gpu-api", Category.PARAM_CONVERTED, "torch.nn.DataParallel"),
        (32, "library-call", Category.PARAM_CONVERTED, "apex.optimizers.FusedAdam"),
        (33, "gpu-api", Category.DIRECT, "torch.cuda.amp.GradScaler"),
        (34, "string-compare", Category.PARAM_CONVERTED, "nccl"),
        (36, "gpu-api", Category.DIRECT, "torch.cuda.amp.autocast"),
        (37, "library-call", Category.PARAM_CONVERTED, "flash_attn.flash_attn_func"),
    ]
    got = [(f.line, f.kind, f.category, f.subject) for f in scan.findings if f.file == "train.py"]
    assert got == expected


def test_routes_and_evidence_cite_table_rows(project):
    scan = scan_sources(project)
    assert site(scan, "train.py", 29, "gpu-api").evidence[0].startswith("transfer_to_npu_patches.tsv:9 module-swap")
    backend = site(scan, "train.py", 28, "backend-string")
    assert backend.evidence[0].startswith("transfer_to_npu_patches.tsv:273 backend-string")
    assert site(scan, "train.py", 34, "string-compare").npu_route == "'hccl'"
    assert "DistributedDataParallel" in site(scan, "train.py", 31, "gpu-api").npu_route
    assert "NpuFusedAdam" in site(scan, "train.py", 32, "library-call").npu_route
    fa = site(scan, "train.py", 37, "library-call")
    assert fa.npu_route.startswith("torch_npu.npu_fusion_attention(query=model.weight, key=model.weight, ")
    assert fa.notes[0] == "fails: softcap=1.0: npu_fusion_attention has no soft-capping argument"
    assert fa.evidence == ("third_party_kernel_libs.tsv:3 flash_attn (direct calls)",)
    note = site(scan, "train.py", 15, "precision-note")
    assert "allow_hf32" in note.npu_route and note.effort_free


def test_triton_kernel_is_sized_and_flagged(project):
    kernel = site(scan_sources(project), "train.py", 19, "triton-kernel")
    assert kernel.size.lines == 7 and kernel.size.apis == ("arange", "atomic_add", "full", "load", "program_id")
    assert kernel.notes == ("triton-ascend lacks atomic_add:int64 (line 24)",)
    assert "triton_ascend_api_limits.tsv:2 triton.language.atomic_add" in kernel.evidence


def test_native_sources_and_extension(project):
    scan = scan_sources(project)
    # a hand-written rotary kernel is not matched to a torch_npu op by its name: no match, an Ascend C port
    rotary = site(scan, "csrc/kernels.cu", 3, "cuda-kernel")
    assert rotary.category == Category.CUSTOM_DEV and "npu_" not in rotary.npu_route
    zigzag = site(scan, "csrc/kernels.cu", 8, "cuda-kernel")
    assert zigzag.category == Category.CUSTOM_DEV and zigzag.size.lines == 6
    runtime = site(scan, "csrc/kernels.cu", 17, "native-runtime")
    assert runtime.category == Category.CUSTOM_DEV and runtime.size.apis == ("cudaStreamSynchronize",)
    assert site(scan, "csrc/bind.cpp", 3, "native-binding").category == Category.PARAM_CONVERTED
    ext = site(scan, "setup.py", 4, "cpp-extension")
    assert ext.subject == "torch.utils.cpp_extension.CUDAExtension"
    # sized as its kernels: rotary_kernel (4 lines) and zigzag_kernel (6 lines), which it builds, priced there once
    assert ext.size.kernels == 2 and ext.size.lines == 4 + 6
    assert ext.evidence[0].startswith("cuda_api_migration.tsv:45")
    assert {f.built_by for f in scan.findings if f.file.startswith("csrc/")} == {"setup.py:4"}


def test_skips_environments_and_records_unparsable_files(project):
    scan = scan_sources(project)
    assert scan.files == ("csrc/bind.cpp", "csrc/kernels.cu", "setup.py", "train.py")
    reasons = [(s.file, s.reason.split(":")[0]) for s in scan.skipped]
    assert reasons == [("broken.py", "not parsable as Python at line 1")]
    assert not any(f.file.startswith((".venv", "build")) for f in scan.findings)


def test_order_is_deterministic_and_paths_are_relative(project):
    first, second = scan_sources([project / "train.py", project / "csrc"], root=project), scan_sources(project)
    # the same findings, but for the extension setup.py builds from csrc/ (setup.py is not in the first scan)
    assert [dataclasses.replace(f, built_by="") for f in second.findings
            if f.file in ("train.py", "csrc/kernels.cu", "csrc/bind.cpp")] == list(first.findings)
    assert first.category_counts() == {"direct": 7, "param-converted": 7, "custom-dev": 4}


def test_missing_path_is_an_error(tmp_path):
    from opassess.errors import OpassessError
    with pytest.raises(OpassessError):
        scan_sources(tmp_path / "nope")


def test_a_python_file_over_the_size_limit_is_listed_not_parsed(tmp_path):
    """A generated module (here 2 MiB + 26 bytes of torch.cuda calls) is not parsed: its syntax tree would take about
    220 times its size in memory. It is listed as not scanned with its size, in the report too; the rest is scanned."""
    from typer.testing import CliRunner

    from opassess.cli import app
    from opassess.source.scan import PYTHON_LIMIT

    line = "torch.cuda.synchronize()\n"  # a site on every line, were it parsed
    (tmp_path / "generated.py").write_text("import torch\n" + line * (PYTHON_LIMIT // len(line) + 1))
    (tmp_path / "train.py").write_text("import torch\n" + line)
    scan = scan_sources(tmp_path)
    assert scan.files == ("train.py",) and {f.file for f in scan.findings} == {"train.py"}
    [skipped] = scan.skipped
    assert skipped.file == "generated.py"
    assert skipped.reason == "not parsed: 2.0 MiB, over the 2 MiB a Python source may have (generated code?)"
    done = CliRunner().invoke(app, ["source", str(tmp_path), "-f", "terminal"], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert "Not scanned: generated.py: not parsed: 2.0 MiB" in done.output
