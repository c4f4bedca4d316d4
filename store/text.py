"""Untrusted text made safe to show: the one place control characters are removed.

Alerts, stored incidents and model answers may carry terminal escape sequences (ESC, OSC,
CSI — in C0 or C1 form) that retitle the window, erase the screen or forge links when
printed. ``clean`` removes every C0 control except newline and tab, DEL, every C1
control, and the bidirectional overrides and isolates (U+202A–202E, U+2066–2069) that make
a line read differently from what it holds, and lone surrogates (a JSON ``\\ud800`` escape,
or bytes that were not UTF-8 on the command line), which no output can encode. ``CleanStr``
applies it wherever such text enters a model (an incident, a draft, a briefing), so nothing
built from them can carry an escape to the screen or the CLI.
Markup is not touched here: it is always rendered literally.

This module does not import pydantic: the console's widgets use ``clean`` before its first
paint, and pydantic's import is ~70 ms (bench/first_paint.py). ``CleanStr`` hands pydantic
its validator through the ``__get_pydantic_core_schema__`` hook, which pydantic calls only
when a model using it is built.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

_CONTROLS = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def clean(text: str) -> str:
    """``text`` without control characters (newline and tab kept)."""
    return _CONTROLS.sub("", text)


class _Cleaned:
    """The ``CleanStr`` marker: pydantic runs ``clean`` after validating the str."""

    @staticmethod
    def __get_pydantic_core_schema__(source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_after_validator_function(clean, handler(source))


CleanStr = Annotated[str, _Cleaned()]
