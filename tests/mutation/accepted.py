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
    Accepted("console.engine.guards.x__confidence", "claim_given=True",
             "equivalent: claim_given defaults to True, so dropping the argument changes nothing"),
    Accepted("console.engine.guards.x_guard_draft", "cited_anything = None",
             "equivalent: None and False are both false, and the flag is only ever tested"),
    Accepted("store.redact.x_redact", "whole[end + offset:]",
             "equivalent: a labelled secret's value group ends the pattern, so nothing of the "
             "match follows it and both slices are empty"),
)
