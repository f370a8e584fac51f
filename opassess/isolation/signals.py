"""SIGTERM and SIGHUP as an exception, so a run that is told to stop cleans up like an interrupted one (Ctrl-C).

CI cancellation and `timeout` send SIGTERM; a closed terminal sends SIGHUP. Their default action ends the process
at once, with no `finally`: workers would be orphaned and a report being written would leave its temporary file.
Inside `terminating_on_signals()` both raise `Terminated` (a KeyboardInterrupt, so every cleanup path written for
Ctrl-C runs), and the command exits with 128 + the signal's number: 143 for SIGTERM, 129 for SIGHUP (130 for
SIGINT, as the shells do).
"""
from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

HANDLED = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """The run was told to stop by a signal (SIGTERM or SIGHUP)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name


def _raise_terminated(signum: int, _frame: object) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def terminating_on_signals() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise Terminated in the main thread (elsewhere: no change)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, _raise_terminated) for number in HANDLED}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)


def reset_in_child() -> None:
    """A keeper or worker dies of these signals as any process does (it inherits the parent's handlers)."""
    for number in (*HANDLED, signal.SIGINT):
        signal.signal(number, signal.SIG_DFL)
