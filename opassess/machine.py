"""What this machine has, read in one place: its physical memory (the CPU fallback's check in trace/driver.py, a
portfolio's memory cap per worker in portfolio/records.py)."""
from __future__ import annotations

import os


def physical_memory() -> int:
    """Bytes of physical memory (0 when the platform does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX system, or one that does not say
        return 0
