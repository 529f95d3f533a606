"""Prompt templates: Jinja2 files under ``prompts/``, rendered with StrictUndefined.

Values are inserted as data: Jinja never renders a value as a template, so text such as
``{{ 7*7 }}`` or ``__profile__`` inside a speech reaches the prompt verbatim and changes nothing else.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2


_DEFAULT_DIR = str(Path(__file__).resolve().parent.parent / "prompts")


def prompts_dir() -> Path:
    return Path(os.environ.get("TOOLKIT_PROMPTS") or _DEFAULT_DIR)


class _Environment(jinja2.Environment):
    """Looks dict keys up before attributes: prompts are rendered from plain dicts, thousands a second."""

    def getattr(self, obj, attribute):  # noqa: A003 - jinja's hook name
        if type(obj) is dict and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)


@lru_cache(maxsize=4)
def _environment(folder: str) -> jinja2.Environment:
    if not Path(folder).is_dir():
        raise FileNotFoundError(f"prompt folder {folder} not found; set TOOLKIT_PROMPTS to the repo's prompts/")
    return _Environment(loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined,
                              autoescape=False, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False,
                              auto_reload=False)


@lru_cache(maxsize=256)
def _template(folder: str, name: str) -> jinja2.Template:
    return _environment(folder).get_template(name)


def template(name: str) -> jinja2.Template:
    """A compiled template (cached: edit prompt files between processes, or call ``template.cache_clear``)."""
    return _template(os.environ.get("TOOLKIT_PROMPTS") or _DEFAULT_DIR, name)


template.cache_clear = _template.cache_clear  # type: ignore[attr-defined]


def render(name: str, **values: Any) -> str:
    return template(name).render(**values).strip()
