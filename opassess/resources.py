"""Locate files shipped with opassess (weights.toml, templates/, knowledge-base data) in a wheel or a checkout."""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def shipped_path(name: str) -> Path:
    """Path of a top-level shipped resource: inside the wheel (opassess/_bundled) or at the repo root."""
    bundled = _PACKAGE / "_bundled" / name
    if bundled.exists():
        return bundled
    return _PACKAGE.parent / name


def package_path(*parts: str) -> Path:
    """Path of a file inside the opassess package: package_path("locale", "zh_CN", "LC_MESSAGES", "opassess.po")."""
    return _PACKAGE.joinpath(*parts)


def data_path(name: str) -> Path:
    """Path of a file under opassess/data (the generated knowledge base and curated rules)."""
    return _PACKAGE / "data" / name
