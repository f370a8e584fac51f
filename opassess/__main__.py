"""The command line's entry point: the `opassess` script and `python -m opassess` (its imports made with the garbage
collector paused, then the collector tuned for a command: startup.py)."""
from .errors import EXIT_INTERRUPTED
from .startup import enter_command, imports_without_gc, tune_for_command


def run() -> None:
    """Import the command line, then run it (cli.run ends the process with its exit code). Ctrl-C while torch and
    the command are still being imported ends it as it does later: one line, exit 130, no traceback."""
    try:
        enter_command()
        with imports_without_gc():
            from .cli import run as command
        tune_for_command()
    except KeyboardInterrupt:
        import os
        import sys

        sys.stderr.write("opassess: interrupted\n")
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)
    command()


if __name__ == "__main__":
    run()
