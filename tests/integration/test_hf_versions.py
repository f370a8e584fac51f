"""The versions section on a real model (issue 42): a bf16 gpt-oss-style model on Atlas A2 uses attention sinks,
whose fused route (npu_fusion_attention's `sink=`) the facts say needs torch_npu 7.3.0 and CANN 8.5.0 or newer."""
from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from opassess.options import ScanOptions  # noqa: E402
from opassess.pipeline.assess import assess  # noqa: E402
from opassess.report.document import build_document  # noqa: E402
from tests.integration.test_hf_products import CONFIGS, model_file  # noqa: E402

pytestmark = pytest.mark.slow


def test_sink_attention_names_the_torch_npu_and_cann_it_needs(tmp_path):
    target = model_file(tmp_path, "GptOssConfig", CONFIGS["GptOssConfig"])
    versions = build_document(assess(ScanOptions(target=target, dtype="bfloat16", product="A2")))["versions"]
    assert versions["requirements"] == [{"feature": "attention sink", "op": "npu_fusion_attention", "param": "sink",
                                         "torch_npu": "7.3.0", "cann": "8.5.0",
                                         "source": "third_party_kernel_libs.tsv:3"}]
    assert versions["torch_npu"] == "2.13.0" and versions["source"] == "version_matrix.tsv:4"
    llama = model_file(tmp_path, "LlamaConfig", CONFIGS["LlamaConfig"])
    assert build_document(assess(ScanOptions(target=llama, dtype="bfloat16")))["versions"]["requirements"] == []
