"""The language of human-facing reports (terminal, Markdown, HTML, step summary): which one, and its messages.

Messages live in gettext catalogs, `opassess/locale/<locale>/LC_MESSAGES/opassess.po`, managed with Babel
(`make messages` extracts from the Python code and the templates and updates the catalogs). The `.po` source is
read at run time (babel.messages.pofile) and compiled in memory into a babel.support.Translations, so no compiled
`.mo` file is kept in git or needed in the wheel. A message missing from a catalog (or marked fuzzy) falls back to
the English source text. Machine formats (JSON, CSV, SARIF, JUnit) stay English; technical identifiers (operator
names, API names, file paths) are never translated, they are placed into messages as values.
"""
from __future__ import annotations

import io
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from babel import Locale
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import format_decimal
from babel.support import NullTranslations, Translations

from ..errors import ReportError
from ..resources import package_path

LANGUAGES = ("en", "zh-CN")  # what --lang accepts; English is the source language of every message
DEFAULT = "en"
DOMAIN = "opassess"
_LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")  # gettext's order of precedence


def N_(message: str) -> str:  # noqa: N802 - gettext's name for "mark for extraction, translate later"
    """Mark a message for extraction where it is defined; it is translated where it is shown."""
    return message


def language_from_environment(environ: Mapping[str, str] | None = None) -> str:
    """The report language the locale asks for: 'zh_CN.UTF-8' (or any 'zh...') -> 'zh-CN'; English otherwise.

    The first of LANGUAGE, LC_ALL, LC_MESSAGES, LANG that is set decides (LANGUAGE may list several, 'zh_CN:en')."""
    env = os.environ if environ is None else environ
    for name in _LOCALE_VARIABLES:
        value = env.get(name, "")
        if not value:
            continue
        first = value.split(":")[0].split(".")[0].split("@")[0].replace("-", "_").lower()
        if first in ("", "c", "posix"):
            return DEFAULT
        return "zh-CN" if first.startswith("zh") else DEFAULT
    return DEFAULT


def resolve_language(value: str | None, environ: Mapping[str, str] | None = None) -> str:
    """--lang as given ('zh-CN', 'zh_CN', 'en', case-insensitive), or the locale's language when None."""
    if value is None:
        return language_from_environment(environ)
    key = value.strip().replace("_", "-").lower()
    for language in LANGUAGES:
        if key == language.lower() or (language == "zh-CN" and key in ("zh", "zh-hans")):
            return language
    raise ReportError(f"unknown report language {value!r}; expected one of {', '.join(LANGUAGES)}")


def locale_name(language: str) -> str:
    """Babel's name of a report language: 'zh-CN' -> 'zh_CN'."""
    return language.replace("-", "_")


@cache
def translations(language: str) -> NullTranslations:
    """The messages of `language`, compiled in memory from its .po catalog (English: the messages themselves)."""
    if language == DEFAULT:
        return NullTranslations()
    return load_catalog(package_path("locale", locale_name(language), "LC_MESSAGES", f"{DOMAIN}.po"), language)


def load_catalog(path: Path, language: str) -> Translations:
    """A .po file read and compiled in memory; fuzzy and empty entries are left out, so they read as English."""
    try:
        with path.open("rb") as handle:
            catalog = read_po(handle, locale=locale_name(language), domain=DOMAIN)
    except OSError as exc:
        raise ReportError(f"no message catalog for {language} at {path}: {exc.strerror or exc}") from exc
    compiled = io.BytesIO()
    write_mo(compiled, catalog, use_fuzzy=False)
    compiled.seek(0)
    return Translations(compiled, domain=DOMAIN)


def gettext(language: str, message: str) -> str:
    """`message` in `language`, or as written when the catalog has no translation for it."""
    return translations(language).gettext(message)


def number(value: float, language: str, decimals: int = 0) -> str:
    """A number written for the locale: 1234567 -> '1,234,567' (en and zh-CN), with `decimals` fixed digits."""
    pattern = "#,##0" + ("." + "0" * decimals if decimals else "")
    return format_decimal(value, format=pattern, locale=Locale.parse(locale_name(language)))
