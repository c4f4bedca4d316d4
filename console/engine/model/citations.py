"""Citation cleaning: map what a model wrote (``#12``, ``inc-2041``, full-width digits…)
onto the ids of this recall, or onto nothing."""

from __future__ import annotations

import re
import unicodedata

from store.recall import RecalledAction

_SEPARATORS = re.compile(r"[\s_\-–—.:#'\"`“”‘’\[\]()]+")
_MENTION = re.compile(r"(?i)\b(?:INC|INCIDENT)[\s_\-–—－‐‑#]*[0-9０-９]+"
                      r"(?:\s*[/／]\s*[A-Za-z0-9Ａ-Ｚａ-ｚ０-９]+)?\b|#[0-9０-９]{2,}\b")


def _canonical(raw: str) -> str:
    text = unicodedata.normalize("NFKC", raw).upper()
    text = text.replace("INCIDENT", "INC")
    return _SEPARATORS.sub("", text)


class CitationIndex:
    """The ids that may be cited in this briefing: exactly those recalled."""

    def __init__(self, actions: list[RecalledAction]) -> None:
        self.actions = {a.action_id: a for a in actions}
        self._incidents: dict[str, str] = {}
        self._by_number: dict[str, set[str]] = {}
        for action in actions:
            self._incidents[_canonical(action.incident_id)] = action.incident_id
            digits = "".join(ch for ch in action.incident_id if ch.isdigit())
            if digits:
                self._by_number.setdefault(digits.lstrip("0"), set()).add(action.incident_id)

    def incident(self, raw: str) -> str | None:
        """The recalled incident id ``raw`` refers to, if exactly one."""
        canonical = _canonical(raw.split("/")[0])
        if not canonical:
            return None
        if canonical in self._incidents:
            return self._incidents[canonical]
        if canonical.isdigit():
            matches = self._by_number.get(canonical.lstrip("0"), set())
            return next(iter(matches)) if len(matches) == 1 else None
        if canonical.startswith("INC") and canonical[3:].isdigit():
            matches = self._by_number.get(canonical[3:].lstrip("0"), set())
            return next(iter(matches)) if len(matches) == 1 else None
        return None

    def action(self, incident_raw: str, action_raw: str) -> RecalledAction | None:
        """The recalled action cited by an (incident id, action id) pair, in any spelling."""
        cleaned = unicodedata.normalize("NFKC", action_raw).strip().strip("\"'`“”‘’ ").lstrip("#")
        incident_part, _, local = cleaned.replace("#", "/").rpartition("/")
        # An action id that names its own incident must name a recalled one: never fall back
        # to the separate incident_id field (that would launder a fabricated citation).
        incident = self.incident(incident_part) if incident_part else self.incident(incident_raw)
        if incident is None:
            return None
        local_canonical = _canonical(local or action_raw)
        for action in self.actions.values():
            if action.incident_id == incident and _canonical(action.local_action_id) == \
                    local_canonical:
                return action
        return None

    def mention_known(self, mention: str) -> bool:
        """A free-text reference names a recalled incident (and, if given, a recalled action)."""
        normalized = unicodedata.normalize("NFKC", mention)
        if "/" in normalized:
            incident_part, _, local = normalized.partition("/")
            return self.action(incident_part, f"{incident_part}/{local}") is not None
        return self.incident(normalized) is not None


def scrub_mentions(text: str, index: CitationIndex) -> tuple[str, list[str]]:
    """Replace references to unrecalled incidents in free text; return what was removed."""
    removed: list[str] = []

    def _replace(match: re.Match[str]) -> str:
        if not index.mention_known(match.group(0)):
            removed.append(match.group(0))
            return "[unverified reference removed]"
        return match.group(0)

    return _MENTION.sub(_replace, text), removed
