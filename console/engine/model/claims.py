"""Claims in model prose checked against the memory: a detail the model adds must be there.

What is checked, in the model's summary, likely cause, note under each recommendation and
none-applies reading, sentence by sentence:

- **details** — numbers with or without units (``30s``, ``120 s``, ``1.5s``, ``24 pods``,
  ``7%``, ``p99``, ``5xx``, ``12/12``), versions and dates (``2026.03.14-1``), error names
  with their message (``KeyError: 'amount'``, ``OOMKilled``), quoted strings (``'amount'``,
  ``"too many clients"``), hostnames and dotted names (``db1.prod.internal``,
  ``callback_handler.build_capture``), code identifiers (``max_connections``,
  ``maximumPoolSize=``) and service names (kebab-case ending in a service word:
  ``payments-api``, ``orders-db``). A detail is backed when it occurs, normalised (NFKC, lower
  case, ``120 seconds`` = ``120 s`` = ``120s``, ``10 percent`` = ``10%``; terminal codes and
  markup tags dropped), as a whole token in the alert or the cited records.
- **metric claims** — a metric noun (``_METRICS``) with a direction word within three words in
  the same clause (``high CPU``, ``latency spiked``, ``connections were not exhausted``), or a
  ``from 350ms to 4s`` change. The claim is backed when the alert or a cited record states the
  same metric in the same direction (for errors, timeouts and failures a plain mention counts
  as up); otherwise it is unstated, or contradicted when they state the opposite direction.

A sentence holding an unbacked claim is removed (``REMOVED`` takes its place, as for a
command in grounding.py) and each claim is logged with the field it was in.

What is not checked: counts of the memory itself (``3 incidents``, ``2 of 5``: the guards and
the verdict own those), incident and action ids (citations.py), numbers in words
(``twelve``), unit conversions (``4s`` is not ``4000ms``), a detail misattributed to the wrong
record or service when the token occurs somewhere in the backing, metric nouns outside the
vocabulary, and any claim made without a detail or a metric and direction ("the deploy caused
it"). The cited records are the recalled actions the draft cites — recommendations' evidence,
warnings and steps — each with its incident's title, service, symptoms, root cause, date and
the action's explanation; the alert is the redacted alert the memory was searched with.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, replace

from console.engine.briefing.instructions import normalise
from console.engine.briefing.models import GuardEntry
from console.engine.model.grounding import _SENTENCE, REMOVED, drop_sentences
from console.engine.model.guards import GuardedDraft
from store.recall import Recall, RecalledAction
from store.text import clean

UNSTATED = "claim_not_in_memory"
CONTRADICTED = "claim_contradicts_memory"

# --- the vocabulary --------------------------------------------------------------------------

# Units written after a number, longest first, to their canonical form.
_UNITS = {"milliseconds": "ms", "millisecond": "ms", "msec": "ms", "ms": "ms",
          "seconds": "s", "second": "s", "secs": "s", "sec": "s", "s": "s",
          "minutes": "min", "minute": "min", "mins": "min", "min": "min",
          "hours": "h", "hour": "h", "hrs": "h", "hr": "h", "h": "h",
          "percent": "%", "%": "%", "gib": "gb", "gb": "gb", "mib": "mb", "mb": "mb"}
# (any order: the lookahead makes "s" give way to "seconds")
_UNIT = re.compile(rf"(?<=\d) ?({'|'.join(re.escape(u) for u in _UNITS)})(?![a-z0-9])")
_SCALE = {"": 1.0, "%": 1.0, "ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}

_SERVICE_WORDS = ("api|service|svc|db|worker|workers|gateway|queue|cache|web|app|proxy|server|"
                  "consumer|consumers|cluster|job|cron|scheduler|broker|backend|frontend|sync")
_STATUS_WORDS = "oomkilled|crashloopbackoff|imagepullbackoff|errimagepull|sigkill|sigterm|segfault"

# Each kind of detail, read on the canonical text (incident and action ids taken out first).
_DETAILS = (
    ("error", rf"\b[a-z][a-z0-9_.]*(?:error|exception)(?:: ?(?:'[^'\n]{{1,80}}'|\"[^\"]{{1,80}}\"))?"
              rf"|\b(?:{_STATUS_WORDS})\b"),
    ("host", r"(?<![\w.\-/])[a-z][a-z0-9\-]*(?:\.[a-z][a-z0-9\-]*)+(?:\(\))?"),
    ("identifier", r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?:\.[a-z0-9_]+)*|\b[a-z][a-z0-9_]*(?==)"),
    ("service", rf"(?<![\w.\-/])[a-z][a-z0-9]*(?:-[a-z0-9]+)*-(?:{_SERVICE_WORDS})(?![\w-])"),
    ("quote", r"\"([^\"]{2,120})\"|`([^`]{2,120})`|(?<!\w)'([^'\n]{2,80})'(?!\w)"),
    ("number", r"(?<![\w.\-/])[a-z]*\d[a-z0-9%]*(?:[.\-/:][a-z0-9%]+)*"),
)
_NOT_HOSTS = {"e.g", "i.e", "a.m", "p.m"}
_NOT_DETAILS = {"k8s", "s3", "ec2", "http2", "ipv4", "ipv6", "utf-8", "oauth2", "2fa", "x86"}
_IDS = re.compile(r"\b(?:inc|incident)[\s_\-#]*\d+(?:\s*/\s*[a-z]*\d+)?\b|#\d{2,}\b|\ba\d{1,2}\b")
_COUNT_NOUN = (r"(?:incidents?|times?|fix(?:es)?|actions?|records?|attempts?|occasions?|cases?|"
               r"outcomes?|warnings?|recommendations?|steps?)")
_COUNTS = re.compile(rf"\b\d{{1,2}}\s+(?:(?:of|out of)\s+(?:the\s+)?\d{{1,2}}\b|(?:(?:past|prior|"
                     rf"previous|recalled|similar|other|earlier|more|separate)\s+)?{_COUNT_NOUN}\b)")

# Metric nouns (one key each) and the words that give them a direction.
_METRICS = {
    "cpu": r"cpu|processor",
    "memory": r"memory|ram|heap|rss",
    "disk": r"disks?|storage|pg_wal|wal",
    "latency": r"latenc(?:y|ies)|p50|p90|p95|p99|p999|response times?",
    "connections": r"connection pools?|connections?|pools?|clients",
    "threads": r"threads?",
    "errors": r"error rates?|errors?|5xx|failures|timeouts",
    "queue": r"queue depth|queues?|backlog|lag",
    "gc": r"gc|garbage collection",
    "load": r"load(?! balancer)|traffic|request rate|rps|qps",
}
_METRIC = re.compile("|".join(rf"\b(?P<{key}>{words})\b" for key, words in _METRICS.items()))
_PRESENCE_IS_UP = {"errors"}  # "connection errors" says there are errors: up
# Adjectives and nouns: a direction before or after the metric ("high CPU", "CPU was high").
_UP = ("high|higher|elevated|spikes?|spiked|spiking|rising|rose|grew|growing|surged?|surging|"
       "jumped|climbing|climbed|soared|saturated|exhausted|maxed|full|filling|heavy|pinned|up")
_DOWN = "low|lower|fell|falling|declined|declining|normal|idle|down"
# Verbs a fix is also told with ("increase the pool"): a direction only after the metric.
_UP_AFTER = "increased?|increases|increasing|doubled|tripled"
_DOWN_AFTER = "decreased?|decreases|decreasing|reduced|dropped|drops?|dropping|halved"
_DIRECTION = re.compile(rf"\b(?:(?P<up>{_UP})|(?P<down>{_DOWN})|(?P<up_after>{_UP_AFTER})|"
                        rf"(?P<down_after>{_DOWN_AFTER}))\b")
_NEGATION = re.compile(r"\b(?:not|no|never|without|zero|\w+n't)\s+(?:\w+\s+)?$")
_FROM_TO = re.compile(r"\bfrom (\d+(?:\.\d+)?)(ms|s|min|h|%)? to (\d+(?:\.\d+)?)(ms|s|min|h|%)?")
_CLAUSE = re.compile(r"[,;:()]|\s(?:but|while|whereas|although|though|yet|and then)\s")
_WINDOW = 3
# Terminal sequences (ESC or C1 introduced, or what is left once store.text.clean drops the ESC)
# and console markup tags: shown literally, never claims.
_MARKUP = re.compile(r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
                     r"|(?:\x1bP|\x90)[^\x1b\x9c]*(?:\x1b\\|\x9c)?"
                     r"|\x1b\[[0-9;?]*[A-Za-z]|\x9b[0-9;?]*[A-Za-z]|\[[0-9;?]+[A-Za-z]"
                     r"|\[/?[@#]?[A-Za-z][^\[\]\n]*\]|\[/\]")
_OPPOSITE = {"up": "down", "down": "up"}


# --- reading a text --------------------------------------------------------------------------

def canonical(text: str) -> str:
    """The form claims are read and matched in: normalised (NFKC, lower case, single spaces),
    straight quotes, no terminal colour codes or markup tags (shown literally, never claims),
    ``1,000`` as ``1000``, ``v2.3.1`` as ``2.3.1``, and a unit joined to its number in one spelling."""
    text = clean(_MARKUP.sub(" ", text))
    text = normalise(text).translate(str.maketrans("‘’“”", "''\"\""))
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", re.sub(r"\bv(?=\d)", "", text))
    return _UNIT.sub(lambda m: _UNITS[m.group(1)], text)


@dataclass(frozen=True)
class Claim:
    """One checkable claim: a detail (``kind`` and its ``token``) or a metric with a direction
    (``kind`` "metric", ``token`` like "cpu up"). ``stated`` is what the backing says of that
    metric when it says the opposite."""

    kind: str
    token: str
    stated: str = ""

    def describe(self) -> str:
        if self.kind == "metric":
            return f"'{self.token}'"
        return f"{self.kind} {self.token!r}"


def details_in(text: str) -> list[Claim]:
    """Every detail in ``text`` (canonical), once each, counts and ids aside."""
    text = _COUNTS.sub(" ", _IDS.sub(" ", canonical(text)))
    found: dict[str, Claim] = {}
    for kind, pattern in _DETAILS:
        for match in re.finditer(pattern, text):
            token = next((g for g in match.groups() if g), match.group(0)).strip(" .,;:!?")
            if len(token) < 2 and kind != "number" or token in _NOT_HOSTS | _NOT_DETAILS:
                continue
            found.setdefault(token, Claim(kind, token))
    return list(found.values())


def metric_claims(text: str) -> set[tuple[str, str]]:
    """Each (metric, direction) ``text`` asserts: a direction word within three words of a
    metric noun in the same clause (negation flips it), or a ``from A to B`` change."""
    claims: set[tuple[str, str]] = set()
    for clause in _CLAUSE.split(canonical(text)):
        claims |= _clause_claims(clause)
    return claims


def _clause_claims(clause: str) -> set[tuple[str, str]]:
    spaces = [n for n, ch in enumerate(clause) if ch == " "]

    def word_at(position: int) -> int:
        return bisect_left(spaces, position)

    metrics = [(str(m.lastgroup), word_at(m.start()), word_at(m.end() - 1), m.start())
               for m in _METRIC.finditer(clause)]
    directions = []
    for d in _DIRECTION.finditer(clause):
        kind = str(d.lastgroup)
        direction = "up" if kind.startswith("up") else "down"
        if _negated(clause, d.start()):
            direction = _OPPOSITE[direction]
        directions.append((word_at(d.start()), direction, kind.endswith("_after")))
    at_words = [at for at, _, _ in directions]
    claims: set[tuple[str, str]] = set()
    for metric, first, last, position in metrics:
        window = directions[bisect_left(at_words, first - _WINDOW):
                            bisect_right(at_words, last + _WINDOW)]
        close = [(max(first - at, at - last), at > last, direction)
                 for at, direction, after_only in window if at > last or not after_only]
        if close:
            claims.add((metric, min(close)[2]))
        elif metric in _PRESENCE_IS_UP:
            claims.add((metric, "down" if _negated(clause, position) else "up"))
    starts = [position for _, _, _, position in metrics]
    for change in _FROM_TO.finditer(clause):
        before = bisect_left(starts, change.start())
        if not before:
            continue
        # a unit written on one side only is the other side's too ("from 4 to 9s")
        start = float(change.group(1)) * _SCALE[change.group(2) or change.group(4) or ""]
        end = float(change.group(3)) * _SCALE[change.group(4) or change.group(2) or ""]
        if end > start:
            claims.add((metrics[before - 1][0], "up"))
        elif end < start:
            claims.add((metrics[before - 1][0], "down"))
    return claims


def _negated(clause: str, position: int) -> bool:
    """A negation within the two words before ``position`` ("not high", "no connection errors")."""
    return _NEGATION.search(clause[max(0, position - 40):position]) is not None


# --- the backing -----------------------------------------------------------------------------

class Backing:
    """The alert and the cited records: where a detail must occur and a metric be stated."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.texts = [canonical(text) for text in texts if text]
        self.metrics: set[tuple[str, str]] = set()
        for text in self.texts:
            for sentence in _SENTENCE.split(text):
                self.metrics |= metric_claims(sentence)

    def holds(self, token: str) -> bool:
        """``token`` occurs as a whole token (a bare number may carry a unit: ``30`` in ``30s``)."""
        bare = re.fullmatch(r"\d+(?:\.\d+)?", token) is not None
        end = r"(?![0-9]|\.[0-9])" if bare else r"(?![a-z0-9])"
        whole = re.compile(rf"(?<![a-z0-9.]){re.escape(token)}{end}")
        return any(whole.search(text) for text in self.texts)

    def unbacked(self, sentence: str) -> list[Claim]:
        """The claims of ``sentence`` the backing does not hold, in the order found."""
        missing = [claim for claim in details_in(sentence) if not self.holds(claim.token)]
        for metric, direction in sorted(metric_claims(sentence)):
            if (metric, direction) in self.metrics:
                continue
            opposite = (metric, _OPPOSITE[direction]) in self.metrics
            missing.append(Claim("metric", f"{metric} {direction}",
                                 f"{metric} {_OPPOSITE[direction]}" if opposite else ""))
        return missing


@dataclass(frozen=True)
class Checked:
    """A model field after the claim check, and the claims that took sentences out of it."""

    text: str
    removed: tuple[Claim, ...]


def check(text: str, backing: Backing) -> Checked:
    """Remove each sentence of ``text`` holding a claim the backing does not hold. Text with
    nothing to remove comes back as it was; sentences already removed stay one marker."""
    removed: list[Claim] = []

    def unbacked(sentence: str) -> bool:
        claims = backing.unbacked(sentence)
        removed.extend(claims)
        return bool(claims)

    checked = drop_sentences(text, unbacked)
    return Checked(checked, tuple(removed))


# --- a guarded draft -------------------------------------------------------------------------

def record_text(action: RecalledAction) -> str:
    """What a cited record says: its shown text (incident, service, title, symptoms, action,
    outcome, explanation), its incident's root cause and its date and time."""
    return "\n".join((action.text, action.root_cause, action.started_at.replace("T", " ")))


def checked_draft(draft: GuardedDraft, recall: Recall, log: list[GuardEntry]) -> GuardedDraft:
    """``draft`` with every unbacked claim's sentence removed from its prose, logged in ``log``.

    A note under a recommendation is read against the alert and that recommendation's
    evidence; the summary, likely cause and none-applies reading against the alert and every
    record the draft cites. A summary left empty gives way to the memory's (merge.py), an
    emptied note or likely cause is dropped, and an emptied none-applies reading stays a
    marker: the model still read that none applies, only its reasons were unbacked.
    """
    actions = {a.action_id: a for a in recall.actions}

    def backing(ids: Iterable[str]) -> Backing:
        return Backing([recall.query, *(record_text(actions[i]) for i in dict.fromkeys(ids)
                                        if i in actions)])

    def field(text: str, where: str, against: Backing) -> str:
        result = check(text, against)
        for claim in result.removed:
            if claim.stated:
                log.append(GuardEntry(rule=CONTRADICTED, detail=(
                    f"{where}: {claim.describe()} — the alert and the cited records say "
                    f"{claim.stated}; its sentence was removed")))
            else:
                log.append(GuardEntry(rule=UNSTATED, detail=(
                    f"{where}: {claim.describe()} is not in the alert or the cited records; "
                    "its sentence was removed")))
        return result.text

    cited = [e.action_id for r in draft.recommendations for e in r.evidence]
    cited += [w.action_id for w in draft.warnings] + [s.action_id for s in draft.steps]
    everything = backing(cited)
    recommendations = []
    for number, rec in enumerate(draft.recommendations, 1):
        note = field(rec.model_note, f"recommendation {number} note",
                     backing(e.action_id for e in rec.evidence))
        recommendations.append(rec.model_copy(update={"model_note": _unless_emptied(note)}))
    summary = _unless_emptied(field(draft.summary, "summary", everything))
    if draft.summary and not summary:
        log.append(GuardEntry(rule=UNSTATED, detail=(
            "summary: nothing was left after removing unbacked claims; the memory's summary "
            "is shown")))
    return replace(draft, summary=summary, recommendations=recommendations,
                   likely_cause=_unless_emptied(field(draft.likely_cause, "likely_cause",
                                                      everything)),
                   none_apply=field(draft.none_apply, "none_apply", everything))


def _unless_emptied(text: str) -> str:
    return "" if not text.replace(REMOVED, "").strip() else text
