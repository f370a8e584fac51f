"""data/hccl_env.toml (kb/hccl_env.py) and tools/cited_facts.py: the curated NCCL -> HCCL variable names read
strictly, and their citations checked against the cited repository when a mirror of it is at hand."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import cited_facts  # noqa: E402

from opassess.errors import KnowledgeBaseError  # noqa: E402
from opassess.kb.hccl_env import hccl_variables, read_hccl_env  # noqa: E402

SHIPPED = ROOT / "opassess" / "data" / "hccl_env.toml"
MIRROR = Path("/work/.mirror")  # where a `fetch` of github:Ascend/pytorch leaves its bare clone


def test_the_shipped_table_names_each_nccl_variable_once_with_a_cited_counterpart():
    table = hccl_variables()
    assert table["NCCL_ASYNC_ERROR_HANDLING"].hccl == table["TORCH_NCCL_ASYNC_ERROR_HANDLING"].hccl \
        == "TORCH_HCCL_ASYNC_ERROR_HANDLING"
    assert table["NCCL_ASYNC_ERROR_HANDLING"].old_name == "HCCL_ASYNC_ERROR_HANDLING"
    assert table["NCCL_BLOCKING_WAIT"].hccl == "TORCH_HCCL_BLOCKING_WAIT"
    assert all(v.cite.startswith("Ascend/pytorch@9e73e708ab9350d203475609f36f8a43f6a0c2ab:") for v in table.values())
    assert cited_facts.main([]) == 0  # the form


GOOD = {"nccl": '["NCCL_BLOCKING_WAIT"]', "hccl": '"TORCH_HCCL_BLOCKING_WAIT"', "old_name": '""',
        "values": '"0 or 1"', "url": '"https://example.org/doc"',
        "cite": '["Ascend/pytorch@9e73e708ab9350d203475609f36f8a43f6a0c2ab:docs/x.md:L1-L2"]'}


@pytest.mark.parametrize("key, value, problem", [
    ("cite", '["Ascend/pytorch:docs/x.md"]', "owner/name@<40-hex commit>"),
    ("hccl", '"torch hccl"', "not an environment variable name"),
    ("url", '"http://example.org"', "https://"),
    ("colour", '"red"', "colour"),
])
def test_a_malformed_entry_is_refused_naming_the_file_and_key(tmp_path, key, value, problem):
    assert read_hccl_env(_write(tmp_path, GOOD))["NCCL_BLOCKING_WAIT"].old_name == ""
    with pytest.raises(KnowledgeBaseError, match=problem) as raised:
        read_hccl_env(_write(tmp_path, {**GOOD, key: value}))
    assert "hccl_env.toml" in str(raised.value)


def _write(folder: Path, entry: dict[str, str]) -> Path:
    path = folder / "hccl_env.toml"
    path.write_text("[[variable]]\n" + "".join(f"{k} = {v}\n" for k, v in entry.items()), encoding="utf-8")
    return path


@pytest.mark.skipif(not (MIRROR / "Ascend+pytorch" / "repo").is_dir(), reason="no mirror of Ascend/pytorch here")
def test_each_citation_names_the_variable_at_its_commit_and_a_wrong_line_range_fails(tmp_path):
    assert cited_facts.check(SHIPPED, MIRROR) == ([], [])
    moved = tmp_path / "hccl_env.toml"
    moved.write_text(SHIPPED.read_text(encoding="utf-8").replace("TORCH_HCCL_ASYNC_ERROR_HANDLING.md:L1-L30",
                                                                 "TORCH_HCCL_ASYNC_ERROR_HANDLING.md:L36-L41"))
    failures, _ = cited_facts.check(moved, MIRROR)
    assert failures == ["Ascend/pytorch@9e73e708ab9350d203475609f36f8a43f6a0c2ab:docs/zh/api/environment_variable/"
                        "collective_communication/TORCH_HCCL_ASYNC_ERROR_HANDLING.md:L36-L41: the cited lines do not "
                        "name TORCH_HCCL_ASYNC_ERROR_HANDLING"]
