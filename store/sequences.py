"""Terminal escape sequences removed whole from text a person pasted.

``store.text.clean`` removes control *characters*: of ``ESC[31m`` it drops the ESC and leaves
``[31m``, of an OSC 52 clipboard write ``ESC]52;c;aGk=BEL`` it leaves ``]52;c;aGk=``. Text
copied from a terminal (a coloured log line, a pager screen, tmux output) carries such
sequences, and a paste is read by a person: here each sequence goes as a whole, then
``clean`` removes whatever control character is left (every C0 but newline and tab, DEL,
C1, bidi overrides). Recognised, in their 7-bit (ESC …) and 8-bit (C1) forms, as ECMA-48
frames them:

- CSI ``ESC [`` / 0x9B: parameter bytes, intermediate bytes, one final byte
  (``ESC[H``, ``ESC[2J``, ``ESC[38;5;196m``, ``ESC[?1049h``);
- OSC ``ESC ]`` / 0x9D, DCS ``ESC P`` / 0x90, SOS ``ESC X`` / 0x98, PM ``ESC ^`` / 0x9E and
  APC ``ESC _`` / 0x9F: a string up to BEL or ST (``ESC \\`` / 0x9C) — an unterminated one
  ends at the end of its line, so a broken sequence never swallows the rest of a paste;
- any other ``ESC`` with its intermediate and final byte (``ESC 7``, ``ESC ( B``, ``ESC c``),
  and a lone ESC.

No heavy import: the alert box (console/ui/widgets/alert_input.py) uses this before the
console's first paint.
"""

from __future__ import annotations

import re

from store.text import clean

_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"               # CSI
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # strings
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?")                                   # other ESC, lone ESC


def strip_sequences(text: str) -> str:
    """``text`` without terminal escape sequences (each removed whole) and without control
    characters (newline and tab kept): what a person reads of it."""
    return clean(_SEQUENCE.sub("", text))
