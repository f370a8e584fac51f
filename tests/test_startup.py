"""The command's garbage collector (startup.py): paused while the command imports, what was imported frozen, then a
young generation of startup.YOUNG objects; a library caller's collector untouched. Each case is a fresh interpreter:
the collector's state is the process's."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support import ROOT

ENTRY = '''
import gc, json, sys
import opassess.cli
seen = {}
def command():  # stands for the CLI (which ends the process): what the entry point left for it
    seen.update(enabled=gc.isenabled(), young=gc.get_threshold()[0], frozen=gc.get_freeze_count(),
                typer="typer" in sys.modules)
opassess.cli.run = command
before = gc.get_threshold()
from opassess.__main__ import run
run()
print(json.dumps({**seen, "default": before[0]}))
'''

BLOCK = '''
import gc, json
from opassess.startup import enter_command, imports_without_gc
enter_command()
seen = []
for enabled in (True, False):
    gc.enable() if enabled else gc.disable()
    with imports_without_gc():
        inside = gc.isenabled()
        import json as _again  # noqa
    seen.append([inside, gc.isenabled(), gc.get_freeze_count() > 0])
print(json.dumps(seen))
'''


def _run(code: str) -> object:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_entry_point_runs_the_command_with_a_tuned_collector():
    seen = _run(ENTRY)
    assert seen["enabled"] and seen["typer"] and seen["frozen"] > 10_000, seen  # the CLI's modules, frozen
    assert seen["young"] == 50_000 and seen["default"] == 700, seen


def test_imports_pause_the_collector_and_restore_it_as_it_was():
    assert _run(BLOCK) == [[False, True, True], [False, False, True]]


def test_outside_the_command_the_collector_is_the_caller_s():
    """A library caller (a test, a notebook) that starts a scan keeps its collector: nothing paused, nothing frozen
    (a frozen heap would keep the caller's garbage cycles for good), its thresholds as they were."""
    code = ("import gc, json\n"
            "from opassess.startup import imports_without_gc, tune_for_command\n"
            "with imports_without_gc():\n"
            "    inside = gc.isenabled()\n"
            "tune_for_command()\n"
            "print(json.dumps([inside, gc.get_freeze_count(), gc.get_threshold()[0]]))")
    assert _run(code) == [True, 0, 700]


def test_importing_the_package_leaves_the_collector_alone():
    code = ("import gc, json, opassess.cli, opassess.startup\n"
            "print(json.dumps([gc.isenabled(), gc.get_threshold()[0], gc.get_freeze_count()]))")
    assert _run(code) == [True, 700, 0]
