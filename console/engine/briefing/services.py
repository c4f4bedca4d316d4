"""The service an alert is about: read once, used by the verdict, the verification and the
postmortem form.

Labels first (``service``, ``app``, ``job``, then ``namespace``/``deployment``/``pod`` with a
Kubernetes hash suffix removed), each matched to the memory's services by its spelling, by
the team's aliases (services.yaml) or by its words (``payments`` ↔ ``payments-api``,
``adservice`` ↔ ``ad``). Without a label, the memory services the text names — a one-word
service only where it is written as a service name ("cart service", "service cart",
"adservice", "cart: …") — and of several, the one the alert is about (the subject of an alert
line, or the one named most). When that is unclear the read is *unsure*: no cross-service
demotion, and the briefing says which service it assumed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from console.engine.briefing.models import ServiceReading
from store.service_aliases import fold_name as fold

How = Literal["label", "alias", "text", "unsure", "none"]

# Words that say "a service", not which one: stripped before names are compared by words.
GENERIC = frozenset({"api", "service", "services", "svc", "srv", "server", "app"})
_SUFFIX = r"(?:service|svc|api|server)"
# Labels that may name the service, in the order they are trusted; ``exported_<name>`` counts
# as ``<name>``. A namespace names a service only when it is one the memory knows.
SERVICE_LABELS = ("service", "app", "app_kubernetes_io_name", "job", "namespace",
                  "kubernetes_namespace", "deployment", "pod", "pod_name", "kubernetes_pod_name")
_POD_LABELS = frozenset({"pod", "pod_name", "kubernetes_pod_name"})
_NAMESPACE_LABELS = frozenset({"namespace", "kubernetes_namespace"})

# Kubernetes suffixes: a ReplicaSet hash and pod suffix (adservice-5d8f7c-x2x), a DaemonSet
# or Job pod suffix (fluentd-x7k2p), a StatefulSet ordinal (orders-db-0). Kubernetes draws
# them from an alphabet without vowels; one with a digit is not a word of the name.
_HASHED_POD = re.compile(r"^(.+?)-(?=[a-z0-9-]*\d)[b-df-hj-np-tv-z0-9]{5,10}-[b-df-hj-np-tv-z0-9]{3,5}$")
_SUFFIXED_POD = re.compile(r"^(.+?)-(?=[a-z0-9]*\d)[b-df-hj-np-tv-z0-9]{5}$")
_ORDINAL = re.compile(r"^(.+?)-\d{1,4}$")
# A pod name written in the text: its name and its ReplicaSet hash and pod suffix.
_POD_TOKEN = re.compile(r"(?<![\w.-])([a-z0-9]+(?:-[a-z0-9]+)*?)-(?=[a-z0-9-]*\d)"
                        r"[b-df-hj-np-tv-z0-9]{5,10}-[b-df-hj-np-tv-z0-9]{3,5}(?![\w-])",
                        re.IGNORECASE)
# An unknown service the text spells out: "service: x" / "service=x" / "(service x)", or a
# service-like name (quokka-api, foo-service) as the subject of an alert line.
_SERVICE_LABEL = re.compile(r"\bservice\s*[:=]\s*([a-z0-9][\w.-]*)|\(service\s+([a-z0-9][\w.-]*)\)",
                            re.IGNORECASE)
_SERVICE_TOKEN = re.compile(r"(?<![\w.-])([a-z0-9][a-z0-9_]*(?:-[a-z0-9_]+)*-(?:service|svc|api))(?![\w-])",
                            re.IGNORECASE)
_CLAUSE_END = re.compile(r"[;:,.(\n—–]|\s-\s")
# What may come before an alert line's subject: a bullet, "[FIRING:1]", "ALERT", a severity.
_LINE_PREFIX = re.compile(r"(?:\s*(?:[-*•>]|\[[^\]\n]{0,40}\]|(?:firing|alert|critical|warning|"
                          r"error)\b:?)\s*)*", re.IGNORECASE)


@dataclass(frozen=True)
class ServiceRead:
    """The service an alert names and whether the memory knows it; ``how`` it was read
    (``label``/``text``: as written; ``alias``: by services.yaml or by its words; ``unsure``:
    assumed among several) and ``source``, in words, what it was read from."""

    named: str | None = None
    known: bool = False
    how: How = "label"
    source: str = ""

    @property
    def demotes(self) -> bool:
        """Whether a strong match on another service is only "elsewhere" (never when unsure)."""
        return self.named is not None and self.how != "unsure"

    def reading(self) -> ServiceReading:
        """What ``triage brief --json`` says of it (``input.service_read``)."""
        return ServiceReading(service=self.named, known=self.known, how=self.how,
                              source=self.source, demotes=self.demotes, assumed=self.assumed)

    @property
    def assumed(self) -> str | None:
        """The one line a briefing shows when the service was not read as written."""
        if self.named is None or self.how not in ("alias", "unsure"):
            return None
        if self.how == "unsure":
            return f"Service assumed: {self.named} (unsure: {self.source}; nothing demoted)"
        return f"Service assumed: {self.named} (read from {self.source})"


def _raw_words(name: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def core_words(name: str) -> tuple[str, ...]:
    """What a name says, less the words that only say "service": ``payments-api`` and
    ``payment-service`` → (payment,), ``adservice`` → (ad,), ``orders-db`` → (order, db)."""
    words = _raw_words(name)
    if words:
        glued = re.fullmatch(r"([a-z0-9]{2,}?)(service|svc)", words[-1])
        if glued:
            words[-1:] = [glued.group(1), glued.group(2)]
    while len(words) > 1 and words[-1] in GENERIC:
        words.pop()
    return tuple(_stem(w) for w in words)


def without_pod_suffix(name: str) -> str:
    """A pod's name less what Kubernetes appended (``adservice-5d8f7c-x2x`` → ``adservice``)."""
    lowered = name.strip().lower()
    for pattern in (_HASHED_POD, _SUFFIXED_POD, _ORDINAL):
        found = pattern.match(lowered)
        if found:
            return found.group(1)
    return name.strip()


def service_labels(labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The labels of an alert that may name its service, in the order they are trusted."""
    by_name: dict[str, str] = {}
    for name, value in labels.items():
        key = name.strip().lower().removeprefix("exported_")
        if key in SERVICE_LABELS and str(value).strip() and key not in by_name:
            by_name[key] = str(value).strip()
    return tuple((key, by_name[key]) for key in SERVICE_LABELS if key in by_name)


class _Names:
    """The memory's services by spelling, by the team's aliases and by their words."""

    def __init__(self, services: Collection[str], aliases: Mapping[str, Sequence[str]]) -> None:
        self.services = sorted(set(services))
        self.exact = {fold(s): s for s in self.services}
        self.alias: dict[str, str] = {}
        self.words: dict[tuple[str, ...], set[str]] = {}
        for service in self.services:
            self.words.setdefault(core_words(service), set()).add(service)
        for service, names in aliases.items():
            for name in (service, *names):
                if fold(name) and fold(name) not in self.exact:
                    self.alias.setdefault(fold(name), service)
                self.words.setdefault(core_words(name), set()).add(service)

    def resolve(self, name: str) -> tuple[list[str], bool]:
        """The services ``name`` may be (one, or several when its words fit several) and
        whether it is one's own spelling."""
        folded = fold(name)
        if folded in self.exact:
            return [self.exact[folded]], True
        if folded in self.alias:
            return [self.alias[folded]], False
        return sorted(self.words.get(core_words(name), ())), False

    def spellings(self) -> list[tuple[str, str]]:
        """(service, name) for every name a text may call a service by: its own, its aliases."""
        named = [(s, s) for s in self.services]
        named += [(s, a) for a, s in self.alias.items()]
        return named


def _from_labels(labels: Sequence[tuple[str, str]], names: _Names) -> ServiceRead | None:
    unsure: ServiceRead | None = None
    candidates = [(key, raw, without_pod_suffix(raw) if key in _POD_LABELS else raw)
                  for key, raw in labels]
    for key, raw, value in candidates:
        hits, own = names.resolve(value)
        where = f"the label {key}={raw}"
        if len(hits) == 1:
            exact = own and value == raw
            return ServiceRead(hits[0], True, "label" if exact else "alias", where)
        if len(hits) > 1 and unsure is None:
            unsure = ServiceRead(hits[0], True, "unsure", f"{where} could be {' or '.join(hits)}")
    if unsure is not None:
        return unsure
    for key, raw, value in candidates:
        if key not in _NAMESPACE_LABELS:
            return ServiceRead(value, False, "label" if value == raw else "alias",
                               f"the label {key}={raw}")
    return None


@dataclass(frozen=True)
class _Mention:
    start: int
    end: int
    service: str
    exact: bool
    subject: bool
    said: str


@lru_cache(maxsize=4096)
def _patterns(name: str) -> tuple[tuple[re.Pattern[str], bool], ...]:
    """How a text names ``name``: (pattern with a ``name…`` group, counts as its spelling).

    A one-word name ("cart", "payments") is also an ordinary word: bare, it never counts;
    only as a service name — with a suffix ("cart service", "adservice"), after "service"
    ("service: cart", "(service cart)", "in service cart", "service cart," at a clause's
    end), or as the subject of an alert line ("cart: 5xx above 5%", "[cart] …")."""
    words = _raw_words(name)
    if not words:
        return ()
    glued = len(words) == 1 and re.fullmatch(r"[a-z0-9]{2,}?(?:service|svc)", words[0])
    said = r"[-_ ]?".join(re.escape(w) + r"(?:e?s)?" for w in core_words(name))
    end = r"(?![\w-])"
    found: list[tuple[str, bool]] = []
    if len(words) > 1 or glued:  # payments-api, orders-db, adservice: the name itself
        found.append((rf"(?<![\w-])(?P<name>{r'[-_ ]'.join(re.escape(w) for w in words)}){end}",
                      True))
    found += [(rf"(?<![\w-])(?P<name>{said}[-_ ]?{_SUFFIX}){end}", False),
              (rf"\bservice\s*[:=]\s*[\"']?(?P<name>{said}){end}", False),
              (rf"\(service\s+(?P<name>{said}){end}", False),
              (rf"\b(?:in|on|for|of|from)\s+service\s+(?P<name>{said}){end}", False),
              (rf"\bservice\s+(?P<name>{said})(?=\s*(?:[,;:.)\]—–]|\s-\s|$))", False),
              (rf"^{_LINE_PREFIX.pattern}(?:(?P<name>{said})\s*:|\[(?P<bracketed>{said})\])",
               False)]
    return tuple((re.compile(pattern, re.IGNORECASE | re.MULTILINE), spelled)
                 for pattern, spelled in found)


def _line_subject(text: str, start: int) -> bool:
    """Does the name at ``start`` open its line (after a bullet, "[FIRING:1]", a severity)?"""
    line_start = text.rfind("\n", 0, start) + 1
    return _LINE_PREFIX.fullmatch(text[line_start:start].removesuffix("[")) is not None


def _mentions(text: str, names: _Names) -> list[_Mention]:
    found: list[_Mention] = []
    for service, name in names.spellings():
        for pattern, spelled in _patterns(name):
            for match in pattern.finditer(text):
                group = "name" if match.group("name") is not None else "bracketed"
                start, end = match.span(group)
                said = match.group(group)
                exact = spelled and name == service or fold(said) == fold(service)
                found.append(_Mention(start, end, service, exact, _line_subject(text, start),
                                      said))
    for match in _POD_TOKEN.finditer(text):
        hits, _own = names.resolve(match.group(1))
        if len(hits) == 1:
            found.append(_Mention(match.start(), match.end(), hits[0], False,
                                  _line_subject(text, match.start()), match.group(0)))
    # One mention per place: a service's own spelling over a guess from words.
    found.sort(key=lambda m: (m.start, not m.exact, -(m.end - m.start)))
    kept: list[_Mention] = []
    for mention in found:
        clash = [k for k in kept if k.start < mention.end and mention.start < k.end]
        if any(k.service == mention.service or k.exact for k in clash):
            continue
        kept.append(mention)
    return kept


def _subject(text: str, mentions: list[_Mention]) -> str | None:
    """The service an alert line opens with, alone in its clause ("payments-api KeyError;
    checkout-service retrying" — not "payments-api and search-api both slow")."""
    opening = next((m for m in mentions if m.subject), None)
    if opening is None:
        return None
    brk = _CLAUSE_END.search(text, opening.end)
    clause_end = brk.start() if brk else len(text)
    if any(m.service != opening.service and opening.end <= m.start < clause_end
           for m in mentions):
        return None
    return opening.service


def _from_text(text: str, names: _Names) -> ServiceRead | None:
    mentions = _mentions(text, names)
    if not mentions:
        return None
    counts = Counter(m.service for m in mentions)
    first = {m.service: m for m in reversed(mentions)}

    def read(service: str, how: How | None = None, source: str = "") -> ServiceRead:
        exact = any(m.exact for m in mentions if m.service == service)
        return ServiceRead(service, service in names.services,
                           how or ("text" if exact else "alias"),
                           source or f"“{first[service].said}” in the alert")

    if len(counts) == 1:
        return read(mentions[0].service)
    top = max(counts.values())
    most = [s for s in counts if counts[s] == top]
    subject = _subject(text, mentions)
    if subject is not None and subject in most:
        return read(subject)
    if subject is None and len(most) == 1:
        return read(most[0])
    assumed = subject or mentions[0].service
    named = " and ".join(sorted(counts))
    return read(assumed, "unsure", f"the alert names {named}")


def _spelled_out(text: str) -> ServiceRead | None:
    """An unknown service the text spells out as one (never a name merely in passing)."""
    for match in _SERVICE_LABEL.finditer(text):
        name = match.group(1) or match.group(2)
        return ServiceRead(name.lower(), False, "text", f"“{match.group(0)}” in the alert")
    for match in _SERVICE_TOKEN.finditer(text):
        if _line_subject(text, match.start()):
            return ServiceRead(match.group(1).lower(), False, "text",
                               f"“{match.group(1)}” in the alert")
    return None


def read_service(text: str, label: str | None, services: Collection[str], *,
                 labels: Sequence[tuple[str, str]] = (),
                 aliases: Mapping[str, Sequence[str]] | None = None) -> ServiceRead:
    """The alert's service: its labels (``labels``, else ``label`` as its ``service``), else
    the memory service its text is about, else an unknown one it spells out, else none."""
    names = _Names(services, aliases or {})
    if not labels and label and label.strip():
        labels = (("service", label.strip()),)
    return (_from_labels(labels, names) or _from_text(text, names) or _spelled_out(text)
            or ServiceRead(how="none"))


def known_service_in(text: str, services: Collection[str]) -> str | None:
    """The memory service the text is about (see :func:`read_service`), or None."""
    read = _from_text(text, _Names(services, {}))
    return read.named if read is not None and read.how != "unsure" else None


__all__ = ["ServiceRead", "core_words", "known_service_in", "read_service", "service_labels",
           "without_pod_suffix"]
