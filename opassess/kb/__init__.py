"""The Ascend knowledge base: generated facts, curated rules and error codes behind one query API (`load_kb`)."""
from __future__ import annotations

from .facts import ApiFact, Limitation, is_unset
from .store import KnowledgeBase, load_kb, user_kb_dir
from .versions import Version, format_version, parse_version
from .wheel_import import import_wheel

__all__ = ["ApiFact", "KnowledgeBase", "Limitation", "Version", "format_version", "import_wheel", "is_unset",
           "load_kb", "parse_version", "user_kb_dir"]
