"""Terms of a text for the relevance gate: lower-cased, stop-words out, lightly stemmed."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Set

_RAW_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")

STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each few
    for from further had has have having he her here hers him his how i if in into is it its
    itself just me more most my no nor not now of off on once only or other our ours out over
    own same she should so some such than that the their them then there these they this those
    through to too under until up very was we were what when where which while who whom why
    will with would you your yours get got seen see saw cannot can't won't isn't
    aren't doesn't don't didn't""".split()
)

# Spellings on-call engineers use interchangeably; mapped to the same term(s) before matching.
SYNONYMS: Mapping[str, str] = {
    "db": "database", "pg": "postgres", "postgresql": "postgres", "k8s": "kubernetes",
    "svc": "service", "conn": "connection", "conns": "connection", "err": "error",
    "errs": "error", "ooms": "oom", "oomkilled": "oom kill", "oomkill": "oom kill",
    "latencies": "latency", "slow": "latency", "5xx": "error", "500s": "error",
}


def _stem(word: str) -> str:
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""),
                         ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: len(word) - len(suffix)] + keep
    return word


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` as an engineer means them, repeats kept.

    Alert names are written ``PaymentsErrorRate`` and labels ``max_connections``: CamelCase is
    split into its words *and* kept whole (so ``KeyError`` still matches ``keyerror``), snake and
    kebab case and dotted hostnames split at their punctuation, and shorthand is spelled out.
    """
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    found: list[str] = []
    for raw in _RAW_WORD.findall(folded):
        lower = raw.lower()
        found.extend(SYNONYMS.get(lower, lower).split())
        if _CAMEL.search(raw):
            for part in _CAMEL_PART.findall(raw):
                found.extend(SYNONYMS.get(part.lower(), part.lower()).split())
    return found


def _meaningful(text: str) -> list[str]:
    """``words`` of ``text`` that carry meaning: no stop words, no single letters."""
    return [w for w in words(text) if w not in STOP_WORDS and len(w) >= 2]


def search_text(text: str) -> str:
    """The text handed to full-text search (index and query alike)."""
    return " ".join(_meaningful(text))


def terms(text: str) -> list[str]:
    """The distinct matching terms of ``text``, in order of first appearance."""
    return list(dict.fromkeys(_stem(word) for word in _meaningful(text)))


def idf(term_count: int, documents: int) -> float:
    """BM25's inverse document frequency; unseen terms weigh the most."""
    return math.log(1 + (documents - term_count + 0.5) / (term_count + 0.5))


def coverage(query_terms: Iterable[str], document_terms: Set[str],
             document_frequency: Mapping[str, int], documents: int) -> float:
    """Share of the query's IDF weight that the document contains, in [0, 1].

    Unlike a BM25 score it does not grow with the length of the alert, so one floor works
    for a terse page and a pasted stack trace alike.
    """
    total = matched = 0.0
    for term in query_terms:
        weight = idf(document_frequency.get(term, 0), documents)
        total += weight
        if term in document_terms:
            matched += weight
    return matched / total if total else 0.0


# Two recorded actions are "the same fix" when their wording overlaps this much (Jaccard of
# their terms). One rule: the briefing's fix groups and recall's rivals both ask it.
SAME_FIX_OVERLAP = 0.6


def overlap(left: Set[str], right: Set[str]) -> float:
    """Jaccard overlap of two term sets."""
    return len(left & right) / len(left | right) if left | right else 0.0


def same_fix_words(left: Set[str], right: Set[str]) -> bool:
    """The one "same fix" rule: two actions' words overlap ≥ SAME_FIX_OVERLAP (Jaccard)."""
    return overlap(left, right) >= SAME_FIX_OVERLAP


# A term that this share of the failures nearest an alert hold, or more, says nothing about
# which of them it is about (the application's name, its alert names, boilerplate): it weighs
# nothing.
COMMON_SHARE = 0.5


def distinct_weights(query_terms: Iterable[str], document_frequency: Mapping[str, int],
                     documents: int, neighbours: list[Set[str]]) -> dict[str, float]:
    """Each query term's IDF scaled down by how common it is among ``neighbours`` (the terms of
    each failure nearest the alert, a family of recurrences counted once), to nothing at
    COMMON_SHARE of them. Judged among the neighbours, not the whole memory, so unrelated
    incidents added to the memory change no weight."""
    weights = {}
    for term in query_terms:
        holding = sum(1 for terms_of in neighbours if term in terms_of)
        # A term of one failure is never common; one in COMMON_SHARE of them and more is.
        common = (max(0.0, 1.0 - (holding - 1) / (COMMON_SHARE * len(neighbours)))
                  if holding > 1 else 1.0)
        weights[term] = idf(document_frequency.get(term, 0), documents) * common
    return weights


def weighted_share(weights: Mapping[str, float], document_terms: Set[str]) -> float:
    """The share of ``weights`` whose terms the document holds, in [0, 1]."""
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in document_terms) / total if total else 0.0
