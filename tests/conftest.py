"""Fixtures and hooks for the whole suite (the shared paths and model texts are in tests/support.py; each folder's
helpers are in its own modules)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from opassess.kb.store import KnowledgeBase, load_kb


def pytest_collection_modifyitems(items):
    """tests/integration (real torchvision / transformers models) is slow: `make test-fast` leaves it out."""
    for item in items:
        if "integration" in item.path.parts:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def model_file(tmp_path):
    """Write a model file from source text and return its path."""

    def write(source: str, name: str = "model.py") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source))
        return path

    return write


@pytest.fixture(autouse=True)
def _no_ci_step_summary(monkeypatch):
    """Tests run under GitHub Actions must not append to the job's real step summary."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture(scope="module")
def kb(tmp_path_factory) -> KnowledgeBase:
    """The shipped knowledge base alone: an empty overlay folder, whatever the user has imported."""
    return load_kb(tmp_path_factory.mktemp("no-overlay"))
