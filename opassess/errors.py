"""The exception family: library code raises these; only the CLI turns them into messages and exit codes."""
from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 1  # bad input or a failed scan
EXIT_USAGE = 2  # bad command line (typer/click's own code)
EXIT_POLICY = 3  # a CI policy was breached
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT); a signal that ends a scan: 128 + its number (isolation/signals.py)


class OpassessError(Exception):
    """Base of every error opassess reports to the user as one line."""

    exit_code = EXIT_ERROR


class ModelLoadError(OpassessError):
    """The model file or factory could not be loaded, built, or given inputs."""


class TraceError(OpassessError):
    """The model could not be run or captured by any method."""


class InternalError(OpassessError):
    """A bug in opassess itself, caught where it happened (one of its capture hooks raised): not the model's fault."""


class KnowledgeBaseError(OpassessError):
    """A knowledge-base or rule file is missing, malformed, or refers to something unknown."""


class ConfigError(OpassessError):
    """weights.toml (or another configuration file) is invalid; the message names the file and key."""


class ReportError(OpassessError):
    """A report could not be rendered or written."""


class UsageError(OpassessError):
    """A command-line value opassess does not accept: found once the data it is checked against is loaded (an Ascend
    product or torch version the knowledge base in use does not know), or a rule between options that the option
    record checks itself (opassess/options.py). Bad usage, like typer's own; `option` names the flag when one is to
    blame ('--amp'), and the CLI then reports it as typer reports a bad value."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


class PolicyBreach(OpassessError):
    """A CI policy (--fail-on, --max-person-days, --max-risk) was breached."""

    exit_code = EXIT_POLICY


class MissingExtra(OpassessError):
    """An option needs an optional dependency that is not installed (`pip install 'opassess[EXTRA]'`)."""

    exit_code = EXIT_USAGE
