"""A generated memory of dated incidents with known recurrence families (tests and bench).

``generate(n, seed)`` gives ``n`` incidents as YAML-ready dicts: recurrence families of 2–6
members sharing a service and an error signature found nowhere else (each member's
``related`` names every other member, earlier and later, as a team writes them after the
fact), and singletons (novel alerts). Start times spread over two years, a few exact ties
(the same ``started_at`` as another incident), and a share left undated — some of them family
members, so dated replays can meet an undated sibling. Deterministic for a seed.

    from tests.engine.practice.dated_memory import generate, write
    rows = generate(300, seed=7); write(path, rows)
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

START = datetime(2024, 1, 1, tzinfo=UTC)
SPAN_DAYS = 730
SYLLABLES = ("ka", "lo", "mi", "ru", "ze", "po", "ta", "vi", "ne", "xo", "da", "fu", "gi",
             "ho", "ju", "be", "sa", "wo", "qi", "ly")
FAILURES = ("timeout", "panic", "deadlock", "overflow", "refused", "corrupt", "leak", "stall")
PLACES = ("checkout handler", "login path", "report export", "webhook relay", "nightly batch",
          "search endpoint", "upload queue", "billing cron")
FIXES = (("rollback", "Rolled back the {svc} deploy to the previous release"),
         ("config", "Restored the {sig} setting of {svc} to its previous value"),
         ("restart", "Restarted every {svc} worker"),
         ("scale", "Scaled {svc} out to twice its replicas"),
         ("cache", "Flushed the {svc} cache holding {sig} entries"))


def _word(rng: random.Random, syllables: int = 3) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(syllables))


def generate(n: int, seed: int = 7, undated_share: float = 0.05, ties: int = 4
             ) -> list[dict[str, Any]]:
    """``n`` incidents (ids INC-10000…, in file order, not time order)."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    families: list[list[int]] = []
    used: set[str] = set()

    def unique(syllables: int) -> str:
        while True:
            word = _word(rng, syllables)
            if word not in used:
                used.add(word)
                return word

    while len(rows) < n:
        size = min(n - len(rows), rng.choice((1, 1, 2, 3, 3, 4, 5, 6)))
        service = f"{unique(3)}-api"
        signature = f"{unique(4).capitalize()}{rng.choice(FAILURES).capitalize()}Error"
        place = rng.choice(PLACES)
        kind, fix = rng.choice(FIXES)
        members = []
        for _ in range(size):
            number = len(rows)
            noise = " ".join(unique(4) for _ in range(2))
            rows.append({
                "id": f"INC-{10000 + number}",
                "title": f"{service} {signature} in the {place}",
                "service": service,
                "started_at": (START + timedelta(minutes=rng.randrange(SPAN_DAYS * 24 * 60))
                               ).isoformat(),
                "symptoms": (f"{service} raising {signature} in the {place}; requests failing "
                             f"with HTTP 500, {noise} noted"),
                "actions": [
                    {"id": "A1", "action": f"Restarted the {service} load balancer",
                     "outcome": "NO_EFFECT", "explanation": "the errors went on", "kind": "lb"},
                    {"id": "A2", "action": fix.format(svc=service, sig=signature),
                     "outcome": "RESOLVED", "explanation": f"the {signature} stopped",
                     "kind": kind}],
            })
            members.append(number)
        families.append(members)
    for members in families:
        for number in members:
            rows[number]["related"] = [rows[m]["id"] for m in members if m != number]
    for number in rng.sample(range(n), max(1, round(n * undated_share))):
        del rows[number]["started_at"]
    dated = [r for r in rows if "started_at" in r]
    pairs = [[rows[m] for m in members if "started_at" in rows[m]] for members in families]
    pairs = [p for p in pairs if len(p) >= 2]
    for tie in range(min(ties, len(dated) // 2)):
        # Half the ties inside a family (a recurrence the same minute), half across.
        left, right = (rng.sample(rng.choice(pairs), 2) if tie % 2 == 0 and pairs
                       else rng.sample(dated, 2))
        right["started_at"] = left["started_at"]
    return rows


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump(rows, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path
