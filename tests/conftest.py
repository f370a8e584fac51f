"""Shared test helpers: paths of the bundled and purpose-built model files, and a writer for throwaway ones."""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MODELS = ROOT / "tests" / "models"


# Building tests/models/cpp_extension.py (torch.utils.cpp_extension) needs a C++ compiler and ninja; the build is
# slow the first time (torch caches it per machine under ~/.cache/torch_extensions, so it runs once per machine).
_no_cpp_toolchain = pytest.mark.skipif(
    not ((shutil.which("c++") or shutil.which("g++")) and shutil.which("ninja")),
    reason="building a C++ extension needs a C++ compiler and ninja")


def needs_cpp_toolchain(test):
    """Skip `test` without a C++ toolchain; mark it slow (`make test-fast` leaves it out)."""
    return pytest.mark.slow(_no_cpp_toolchain(test))


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


# A two-layer model file (indented: textwrap.dedent it) for the CLI tests of inputs and outputs.
TINY = """
    import torch
    from torch import nn

    def build_model():
        return nn.Sequential(nn.Linear(4, 4), nn.ReLU())

    def example_inputs():
        return (torch.randn(2, 4),)
"""
