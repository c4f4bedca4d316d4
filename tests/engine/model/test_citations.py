"""Citation rules: how a model's spelling of an id maps onto this recall, or onto nothing.

One table per rule; each row is a spelling a model has been seen to write (or could) and the
recalled id it must mean — None when it names nothing recalled, or more than one thing.
"""

from __future__ import annotations

import re

import pytest

from console.engine.model.citations import CitationIndex, scrub_mentions
from tests.recalls import BARE, CACHE_A, OTHER_1518, POOL, act, incident, recall_of

REMOVED = "[unverified reference removed]"


def ids(rows: list[tuple[object, ...]]) -> list[str]:
    """Row ids of plain ASCII words: mutmut hands node ids back to pytest on a command line."""
    return [f"{n:02d}-" + re.sub(r"[^A-Za-z0-9]+", "_", "+".join(str(v) for v in row[:-1]))
            .strip("_") for n, row in enumerate(rows)]


@pytest.fixture
def index() -> CitationIndex:
    """INC-2041 (A1–A3), INC-1518 (A1, A2) and PAY-1518: "1518" alone is ambiguous; OPS-0042
    is numbered with leading zeros, SEC-7 with one digit."""
    return CitationIndex(recall_of(POOL, CACHE_A, OTHER_1518, BARE, ZEROS, SEVEN).actions)


ZEROS = incident("OPS-0042", act("A1", "Rotated the certificate", "RESOLVED", "It had expired"))
SEVEN = incident("SEC-7", act("A1", "Blocked the scanning range", "MITIGATED", "Load fell"))


# --- an incident id, in any spelling --------------------------------------------------

INCIDENTS = [
    ("INC-2041", "INC-2041"),
    ("inc-2041", "INC-2041"),
    ("Inc 2041", "INC-2041"),
    ("INC_2041", "INC-2041"),
    ("INC–2041", "INC-2041"),          # en dash
    ("  INC-2041  ", "INC-2041"),
    ("'INC-2041'", "INC-2041"),
    ('"INC-2041"', "INC-2041"),
    ("[INC-2041]", "INC-2041"),
    ("incident 2041", "INC-2041"),
    ("Incident #2041", "INC-2041"),
    ("#2041", "INC-2041"),
    ("2041", "INC-2041"),
    ("INC-02041", "INC-2041"),          # a leading zero is the same number
    ("02041", "INC-2041"),
    ("ＩＮＣ－２０４１", "INC-2041"),       # full-width letters, hyphen and digits (NFKC)
    ("INC-２０４１", "INC-2041"),
    ("２０４１", "INC-2041"),
    ("INC-2041/A3", "INC-2041"),        # the incident part of an action id
    ("PAY-1518", "PAY-1518"),
    ("pay 1518", "PAY-1518"),
    ("INC-1518", "INC-1518"),
    ("incident 1518", "INC-1518"),
    ("OPS-0042", "OPS-0042"),
    ("42", "OPS-0042"),                 # the same number without its leading zeros
    ("#042", "OPS-0042"),
    ("INC-42", "OPS-0042"),             # "INC" as the word for incident, like "incident 42"
    ("INC-7", "SEC-7"),
    ("#07", "SEC-7"),
    ("420", None),
    ("OPS-2041", None),                 # another team's 2041 is not our INC-2041
    ("1518", None),                     # INC-1518 or PAY-1518: ambiguous, so nothing
    ("#1518", None),
    ("INC-9999", None),
    ("9999", None),
    ("INC-204", None),
    ("INC-20411", None),
    ("A3", None),
    ("INC", None),
    ("", None),
    ("   ", None),
    ("#", None),
]


@pytest.mark.parametrize(("raw", "expected"), INCIDENTS, ids=ids(INCIDENTS))
def test_incident_spelling(index: CitationIndex, raw: str, expected: str | None) -> None:
    assert index.incident(raw) == expected


def test_an_incident_without_actions_cannot_be_cited() -> None:
    """Citations name actions; an incident recalled with none gives nothing to cite."""
    index = CitationIndex(recall_of(BARE).actions)
    assert index.incident("INC-1900") is None
    assert index.action("INC-1900", "A1") is None


# --- an action id: the incident field and the action field together ------------------

ACTIONS = [
    ("INC-2041", "A3", "INC-2041/A3"),
    ("INC-2041", "a3", "INC-2041/A3"),
    ("INC-2041", " A3 ", "INC-2041/A3"),
    ("INC-2041", "#A3", "INC-2041/A3"),
    ("INC-2041", "Ａ３", "INC-2041/A3"),
    ("INC-2041", "INC-2041/A3", "INC-2041/A3"),
    ("", "INC-2041/A3", "INC-2041/A3"),
    ("", "inc-2041/a3", "INC-2041/A3"),
    ("", "INC-2041 / A3", "INC-2041/A3"),
    ("", ' "INC-2041/A3" ', "INC-2041/A3"),
    ("", "“INC-2041/A3”", "INC-2041/A3"),
    ("", "`INC-2041/A3`", "INC-2041/A3"),
    ("", "#2041/A3", "INC-2041/A3"),
    ("", "INC-2041#A3", "INC-2041/A3"),
    ("", "ＩＮＣ－２０４１／Ａ３", "INC-2041/A3"),
    ("2041", "A1", "INC-2041/A1"),
    ("incident 2041", "A2", "INC-2041/A2"),
    ("INC-１５１８", "A2", "INC-1518/A2"),
    ("PAY-1518", "A1", "PAY-1518/A1"),
    ("INC-1518", "A1", "INC-1518/A1"),
    ("42", "A1", "OPS-0042/A1"),
    ("1518", "A1", None),                     # ambiguous incident
    ("INC-2041", "A99", None),                # no such action
    ("INC-2041", "A", None),
    ("INC-9999", "A3", None),                 # no such incident
    ("INC-2041", "INC-9999/A3", None),        # the action id names another incident
    ("INC-9999", "INC-2041/A3", "INC-2041/A3"),  # it names a recalled one: that one counts
    ("INC-2041", "INC-1518/A2", "INC-1518/A2"),
    ("", "A3", None),                         # no incident at all
    ("INC-2041", "", None),
]


@pytest.mark.parametrize(("incident", "action", "expected"), ACTIONS,
                         ids=ids(ACTIONS))
def test_action_spelling(index: CitationIndex, incident: str, action: str,
                         expected: str | None) -> None:
    found = index.action(incident, action)
    assert (found.action_id if found else None) == expected


# --- mentions in free text -------------------------------------------------------------

MENTIONS = [
    ("INC-2041", True),
    ("inc-2041", True),
    ("INC-2041/A3", True),
    ("INC-2041 / a1", True),
    ("INC－２０４１／Ａ３", True),
    ("#2041", True),
    ("incident 2041", True),
    ("INC-1518/A2", True),
    ("INC-2041/A99", False),
    ("INC-9999/A3", False),
    ("INC-9999", False),
    ("#9999", False),
    ("#1518", False),                  # ambiguous
]


@pytest.mark.parametrize(("mention", "known"), MENTIONS, ids=ids(MENTIONS))
def test_mention_is_known_only_when_it_names_something_recalled(
        index: CitationIndex, mention: str, known: bool) -> None:
    assert index.mention_known(mention) is known


SCRUB = [
    # (text, shown, removed)
    ("Same as INC-2041.", "Same as INC-2041.", []),
    ("Same as INC-9999.", f"Same as {REMOVED}.", ["INC-9999"]),
    ("see inc-9999 and INC 9999", f"see {REMOVED} and {REMOVED}", ["inc-9999", "INC 9999"]),
    ("as in incident #9999", f"as in {REMOVED}", ["incident #9999"]),
    ("as in #9999", f"as in {REMOVED}", ["#9999"]),
    ("as in #2041", "as in #2041", []),
    ("as in #1518", f"as in {REMOVED}", ["#1518"]),
    ("as in #42", "as in #42", []),
    ("INC-９９９９ again", f"{REMOVED} again", ["INC-９９９９"]),
    ("INC－9999 again", f"{REMOVED} again", ["INC－9999"]),
    ("INC-2041/A3 then INC-2041/A99", f"INC-2041/A3 then {REMOVED}", ["INC-2041/A99"]),
    ("INC-9999/A3 did it", f"{REMOVED} did it", ["INC-9999/A3"]),
    ("PAY-1518 and INC-1518", "PAY-1518 and INC-1518", []),
    ("step #1, version 2.0, port 8080", "step #1, version 2.0, port 8080", []),
    ("", "", []),
]


@pytest.mark.parametrize(("text", "shown", "removed"), SCRUB,
                         ids=ids([(text, None) for text, _, _ in SCRUB]))
def test_unrecalled_mentions_are_removed_from_free_text(
        index: CitationIndex, text: str, shown: str, removed: list[str]) -> None:
    assert scrub_mentions(text, index) == (shown, removed)
