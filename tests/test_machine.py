"""What this machine has (opassess/machine.py), read in one place: the CPU fallback's check and a portfolio's
memory cap per worker both ask it."""
from __future__ import annotations

import os
from pathlib import Path

import opassess
from opassess import machine


def test_physical_memory_is_the_machines_and_zero_where_it_is_not_said(monkeypatch):
    assert machine.physical_memory() == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") > 2**28

    def unsaid(name: str) -> int:
        raise ValueError(f"unrecognized configuration name {name!r}")

    monkeypatch.setattr(os, "sysconf", unsaid)
    assert machine.physical_memory() == 0


def test_physical_memory_is_read_in_one_module():
    root = Path(opassess.__file__).parent
    readers = sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if "SC_PHYS_PAGES" in p.read_text("utf-8"))
    assert readers == ["machine.py"]
    users = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                   if "physical_memory" in p.read_text("utf-8") and p.name != "machine.py")
    assert {"trace/driver.py", "portfolio/records.py"} <= set(users)
