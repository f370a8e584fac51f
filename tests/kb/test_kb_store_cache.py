"""load_kb loads a knowledge base once per process and again only when a file it reads changed (kb/store.py): a
portfolio assesses every model against the same one."""
from __future__ import annotations

import os
import shutil

from opassess.kb import load_kb
from opassess.resources import data_path


def test_the_same_files_give_the_same_loaded_knowledge_base():
    assert load_kb() is load_kb()


def test_a_changed_file_is_read_again(tmp_path):
    folder = tmp_path / "kb"
    shutil.copytree(data_path("kb"), folder)
    first = load_kb(folder)
    assert load_kb(folder) is first
    provenance = folder / "provenance.json"
    provenance.write_text(provenance.read_text() + " ")  # the same facts, another size and time
    stat = provenance.stat()
    os.utime(provenance, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    again = load_kb(folder)
    assert again is not first and again.version == first.version
    (folder / "extra.json").write_text("{}")  # a file added to the folder counts too
    assert load_kb(folder) is not again


def test_only_the_most_recently_used_are_kept(tmp_path, monkeypatch):
    from opassess.kb import store

    monkeypatch.setattr(store, "KEPT", 1)
    for name in ("a", "b"):
        shutil.copytree(data_path("kb"), tmp_path / name)
    first = load_kb(tmp_path / "a")
    load_kb(tmp_path / "b")
    assert load_kb(tmp_path / "a") is not first  # dropped when b came in: loaded again
