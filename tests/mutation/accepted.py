"""Surviving mutants that were reviewed, with why no test kills them.

A survivor is matched by the function mutmut mutated and a fragment of the mutated or the
original line. Anything surviving that is not listed here is printed as NOT REVIEWED.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Accepted:
    function: str  # mutmut's mangled name, e.g. "store.writer.x__atomic_write"
    fragment: str  # text in the diff's - or + line
    why: str


ACCEPTED: tuple[Accepted, ...] = (
    # --- equivalent mutants: the program behaves the same ---------------------------------
    Accepted("console.engine.model.guards.x__confidence", "claim_given=True",
             "equivalent: claim_given defaults to True, so dropping the argument changes nothing"),
    Accepted("console.engine.model.guards.x_guard_draft", "cited_anything = None",
             "equivalent: None and False are both false, and the flag is only ever tested"),
    Accepted("console.engine.model.guards.x_guard_draft", "citations.action(None, e.action_id)",
             "equivalent: an Evidence's action_id is the recalled action's full id "
             "(INC-…/A…), which names its incident, so the incident_id argument is never read"),
    Accepted("console.engine.model.citations.xǁCitationIndexǁaction", '.strip(None)',
             "equivalent: quotes left around an action id are dropped again by _canonical, whose "
             "separators include them"),
    Accepted("console.engine.model.citations.xǁCitationIndexǁaction", '.strip("XX',
             "equivalent: quotes left around an action id are dropped again by _canonical"),
    Accepted("console.engine.model.citations.xǁCitationIndexǁaction", 'lstrip("XX#XX")',
             "equivalent for ids that do not start with X: the same '#' is stripped"),
    Accepted("console.engine.model.citations.xǁCitationIndexǁ__init__", 'lstrip("XX0XX")',
             "equivalent: the text is the incident id's digits, so only the zeros are stripped"),
    Accepted("console.engine.model.citations.xǁCitationIndexǁincident", 'lstrip("XX0XX")',
             "equivalent: on that path the text is all digits, so only the zeros are stripped"),
    Accepted("console.engine.model.citations.xǁCitationIndexǁmention_known", "rpartition",
             "equivalent: a mention the pattern finds has at most one '/'"),
    Accepted("console.engine.model.citations.xǁCitationIndexǁmention_known", "self.action(None,",
             "equivalent: the action id passed along always names its incident, which wins over "
             "the separate incident argument"),
    # --- the redactor ----------------------------------------------------------------------
    Accepted("store.redact.x__not_a_secret", 'strip("XX.!XX")',
             "equivalent: the value is lower-cased before the strip, so it holds no 'X' for the "
             "added characters to remove"),
    # --- the writer ------------------------------------------------------------------------
    Accepted("store.writer.x__atomic_write", 'encode("UTF-8")',
             "equivalent: codec names are case-insensitive"),
    Accepted("store.writer.x_save_incident", 'encoding="UTF-8"',
             "equivalent: codec names are case-insensitive"),
    Accepted("store.writer.x_save_incident", "encoding=None",
             "equal wherever the locale encoding is UTF-8 (here, and everywhere from Python 3.15); "
             "a Latin-1 locale cannot be set up on this machine to tell them apart"),
    Accepted("store.writer.x__atomic_write", "len(data) // 3",
             "moves where a crash 'half-written' lands; the crash tests see old-or-new bytes "
             "for any split, which is the property that matters"),
    Accepted("store.writer.x__check", "does not match",
             "defensive: with the folding rule fixed, no input makes the re-read differ from the "
             "incident (every field is tested with awkward values), so this refusal cannot be "
             "provoked; it stays as a last line of defence"),
    Accepted("store.writer.x__check", "NOTHING WAS WRITTEN",
             "same defensive refusal as above"),
    Accepted("store.writer.x__check", "nothing was writtenXX",
             "same defensive refusal as above"),
    Accepted("store.writer.x__check", "SaveRefused(None)",
             "same defensive refusal as above"),
    Accepted("store.writer.x__replace_block", "yaml.compose(text, )",
             "equivalent: PyYAML's default loader composes the same nodes (only slower)"),
    Accepted("store.writer.x__replace_block", "or True",
             "unreachable: a list item that is not a mapping is refused by load_incidents first"),
    Accepted("store.writer.x__replace_block", "end >= start + 1",
             "equivalent: the first line of a block ('- id:' or '- {') is never blank or a comment"),
    Accepted("store.writer.x__replace_block", "end > start - 1",
             "equivalent: the first line of a block is never blank or a comment"),
    Accepted("store.writer.x__replace_block", "SaveRefused(None)",
             "unreachable: the incident's file was found by parsing that same text"),
    Accepted("store.writer.x__scalar", "default_flow_style=None",
             "equivalent: for a scalar or a flat list PyYAML's None means flow style"),
    Accepted("store.writer.x__scalar", "width=11**9",
             "equivalent: any width beyond the longest line keeps values on one line"),
    Accepted("store.writer.x__scalar", "width=10**10",
             "equivalent: any width beyond the longest line keeps values on one line"),
    Accepted("store.writer.x__text_field", "break_long_words=None",
             "equivalent: None is as false as False"),
    Accepted("store.writer.x__text_field", "break_on_hyphens=None",
             "equivalent: None is as false as False"),
    Accepted("store.writer.x_file_sha256", 'b"XX',
             "equivalent: any separator gives a consistent hash, and only whether two hashes "
             "differ is observable"),
    # --- the same-fix rule (console/engine/briefing/fixes.py) --------------------------------
    Accepted("console.engine.briefing.fixes.x_group_fixes", "for right in range(len(actions))",
             "equivalent: also comparing each action with itself (a no-op union) and with the "
             "ones before it (pairs already compared, and union is symmetric) gives the same "
             "connected sets; groups are keyed by a root nobody sees and ordered by first member"),
    Accepted("console.engine.briefing.fixes.x_group_fixes", "range(left + 1, )",
             "equivalent: comparing each action with itself and the ones before it covers every "
             "pair once from the other side, and union is symmetric: the same connected sets"),
    Accepted("console.engine.briefing.fixes.x_group_fixes", "range(left - 1, len(actions))",
             "equivalent: the extra pairs are (n, n-1), (n, n) and, for the first action, index "
             "-1, which is the last action; every one is a real pair, so the same connected sets"),
    Accepted("console.engine.briefing.fixes.x_overlap", "if left & right else 0.0",
             "equivalent: when the sets share nothing (or one is empty) the Jaccard index is "
             "0 / n = 0.0 anyway, and when they share a word their union is not empty either"),
)
