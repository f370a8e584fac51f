"""The Jinja environment for template-based reporters: shipped templates, user overrides, escaping per format.

`--templates DIR` overrides templates by file name. A template missing from DIR falls back to the shipped one
(so a user can copy and edit only `html.j2`, and an included partial they did not copy still resolves); a DIR
that does not exist is an error, since a typo there would otherwise silently render the shipped templates.
"""
from __future__ import annotations

import re
import traceback
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment
from markupsafe import Markup

from ..errors import ReportError
from ..messages import say
from ..resources import shipped_path
from .i18n import DEFAULT, translations
from .text import inert

# Markdown: characters that would change the structure of a table or inline formatting, or open raw HTML.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|])")


def escape_markdown(value: Any) -> str:
    """Make a model-supplied string inert in GitHub Markdown: '<script>' becomes '&lt;script&gt;', '|' '\\|', a
    carriage return or other control character its visible escape (a line feed a space)."""
    text = inert(value, newline=" ").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def code_span(value: Any) -> Markup:
    """A Markdown code span holding `value` literally (a longer fence when it holds backticks; '|' escaped for
    tables)."""
    text = inert(value, newline=" ").replace("|", "\\|")
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return Markup(f"{fence}{pad}{text}{pad}{fence}")


def _finalize_markdown(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, Markup):  # produced by code_span: already safe
        return value
    if isinstance(value, str):
        return escape_markdown(value)
    return value


def _finalize_plain(value: Any) -> Any:
    return "" if value is None else value


class MarkdownText(Markup):
    """A translated message in a Markdown template: trusted text whose %-placeholders escape their values for
    Markdown (a code span or another MarkdownText is placed as is), as Markup does for HTML."""

    __slots__ = ()

    @classmethod
    def escape(cls, s: Any) -> MarkdownText:
        if hasattr(s, "__html__"):
            return cls(s.__html__())
        return cls(escape_markdown(s) if isinstance(s, str) else s)


def _install_messages(env: jinja2.Environment, flavour: str, language: str) -> None:
    """Jinja's i18n extension with the catalog of `language` (newstyle: `_("... %(n)s", n=x)` escapes x)."""
    messages = translations(language)
    if flavour == "markdown":
        # jinja2.ext.i18n adds install_gettext_* to the Environment at run time; jinja2's types do not declare them
        env.install_gettext_callables(  # type: ignore[attr-defined]
            lambda s: MarkdownText(messages.gettext(s)), lambda s, p, n: MarkdownText(messages.ngettext(s, p, n)),
            newstyle=True)
    else:
        env.install_gettext_translations(messages, newstyle=True)  # type: ignore[attr-defined]  # as above
    env.globals["lang"] = language
    env.filters["say"] = lambda value: say(value, messages.gettext)  # a Text (a failure's cause) in the language


def environment(flavour: str, templates_dir: Path | None = None, language: str = DEFAULT) -> jinja2.Environment:
    """A Jinja environment for 'html' (autoescaped) or 'markdown' (model strings escaped for Markdown), with the
    messages of `language`."""
    shipped = shipped_path("templates")
    loaders: list[jinja2.BaseLoader] = []
    if templates_dir is not None:
        templates_dir = Path(templates_dir)
        if not templates_dir.is_dir():
            raise ReportError(f"templates directory {templates_dir} does not exist or is not a directory")
        loaders.append(jinja2.FileSystemLoader(str(templates_dir)))
    loaders.append(jinja2.FileSystemLoader(str(shipped)))
    # Sandboxed: a user's template (--templates) is data, so `cycler.__init__.__globals__` is refused at render.
    if flavour == "html":
        env = SandboxedEnvironment(loader=jinja2.ChoiceLoader(loaders), autoescape=True, finalize=_finalize_plain,
                                 extensions=["jinja2.ext.i18n"],
                                 undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                 keep_trailing_newline=True)
    elif flavour == "markdown":
        env = SandboxedEnvironment(loader=jinja2.ChoiceLoader(loaders), autoescape=False,
                                 extensions=["jinja2.ext.i18n"], finalize=_finalize_markdown,
                                 undefined=jinja2.StrictUndefined,
                                 trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
        env.filters["code"] = code_span
    else:
        raise ValueError(f"unknown template flavour {flavour!r}")
    _install_messages(env, flavour, language)
    return env


def render_template(name: str, flavour: str, context: dict[str, Any], templates_dir: Path | None = None,
                    language: str = DEFAULT) -> str:
    """Render template `name` (e.g. 'md.j2') in `language`; any Jinja failure becomes a ReportError naming the
    template."""
    env = environment(flavour, templates_dir, language)
    try:
        template = env.get_template(name)
        return template.render(**context)
    except jinja2.TemplateNotFound as exc:
        where = f"{templates_dir} or " if templates_dir else ""
        raise ReportError(f"template {exc.name} not found in {where}{shipped_path('templates')}") from exc
    except jinja2.TemplateError as exc:
        where = _template_location(exc) or name
        raise ReportError(f"template {where}: {exc}") from exc


def _template_location(exc: jinja2.TemplateError) -> str | None:
    """'md.j2 line 2': from a syntax error's own fields, or from the template frame Jinja puts in the traceback."""
    if isinstance(exc, jinja2.TemplateSyntaxError) and exc.lineno:
        return f"{Path(exc.filename or exc.name or '?').name} line {exc.lineno}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.endswith(".py")]
    if frames:
        return f"{Path(frames[-1].filename).name} line {frames[-1].lineno}"
    return None
