"""The recurrence line and fix decay on a generated memory of dated incidents whose families
are known: every briefing is checked against the generator's truth, end to end (index, recall,
verdict, briefing), lexical-only so the module stays fast.

The generator (here, not tests/engine/practice/dated_memory.py: that one has no family whose old
fix failed in its newest member) makes, each on its own service with its own error signature:

- **same-fix** families — one fix RESOLVED every member (the failure keeps coming back);
- **decayed** families — the family's fix RESOLVED every member but the newest, where it had
  NO_EFFECT and a new fix RESOLVED it;
- **singletons** — seen once: no recurrence.

``now`` is fixed (Settings.fixed_now, as TRIAGE_NOW sets it), after every generated start.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml

from console.engine.briefing.alert import parse_alert
from console.engine.briefing.models import Briefing
from console.engine.config import Settings
from console.engine.engine import TriageEngine

SEED = 20
START = datetime(2024, 1, 1, tzinfo=UTC)
SPAN_DAYS = 700
NOW = datetime(2026, 1, 15, 12, tzinfo=UTC)
SYLLABLES = ("ka", "lo", "mi", "ru", "ze", "po", "ta", "vi", "ne", "xo", "da", "fu", "gi",
             "ho", "ju", "be", "sa", "wo", "qi", "ly")
FAILURES = ("Timeout", "Panic", "Deadlock", "Overflow", "Refused", "Corrupt", "Leak", "Stall")
FIXES = ("Rolled back the {svc} {sig} release to the previous build",
         "Restored the {sig} setting of {svc} to its previous value",
         "Flushed the {svc} cache holding {sig} entries",
         "Rotated the {svc} credentials used by the {sig} client")
NEW_FIX = "Moved {svc} {sig} traffic onto the standby cluster and drained the primary"
RESTART = "Restarted the {svc} load balancer"


@dataclass(frozen=True)
class Family:
    kind: str                       # "same_fix", "decayed" or "singleton"
    service: str
    alert: str
    fix: str
    members: tuple[str, ...]        # ids in time order
    starts: tuple[datetime, ...]    # the members' starts, in time order


def generate(seed: int = SEED) -> tuple[list[dict[str, Any]], list[Family]]:
    """About 300 incidents in families of known kind; ids in file order, not time order."""
    rng = random.Random(seed)
    used: set[str] = set()

    def unique(syllables: int) -> str:
        while True:
            word = "".join(rng.choice(SYLLABLES) for _ in range(syllables))
            if word not in used:
                used.add(word)
                return word

    plan = ["same_fix"] * 36 + ["decayed"] * 24 + ["singleton"] * 40
    rng.shuffle(plan)
    rows: list[dict[str, Any]] = []
    families = []
    numbers = list(range(1000, 10000))
    rng.shuffle(numbers)
    for kind in plan:
        size = 1 if kind == "singleton" else rng.randint(3, 6) if kind == "decayed" \
            else rng.randint(2, 6)
        service = f"{unique(2)}-api"
        signature = f"{unique(3).capitalize()}{rng.choice(FAILURES)}Error"
        fix = rng.choice(FIXES).format(svc=service, sig=signature)
        starts = sorted(START + timedelta(minutes=rng.randrange(SPAN_DAYS * 24 * 60))
                        for _ in range(size))
        ids = [f"INC-{numbers.pop()}" for _ in range(size)]
        for n, (incident_id, started) in enumerate(zip(ids, starts, strict=True)):
            newest = n == size - 1
            actions = [{"id": "A1", "action": RESTART.format(svc=service), "outcome": "NO_EFFECT",
                        "explanation": "the errors went on"}]
            if kind == "decayed" and newest:
                actions += [
                    {"id": "A2", "action": fix, "outcome": "NO_EFFECT",
                     "explanation": f"the {signature} went on this time"},
                    {"id": "A3", "action": NEW_FIX.format(svc=service, sig=signature),
                     "outcome": "RESOLVED", "explanation": f"the {signature} stopped"}]
            else:
                actions.append({"id": "A2", "action": fix, "outcome": "RESOLVED",
                                "explanation": f"the {signature} stopped"})
            rows.append({
                "id": incident_id, "title": f"{service} {signature}", "service": service,
                "started_at": started.isoformat(),
                "symptoms": (f"{service} raising {signature} on every request; HTTP 500 for "
                             f"{unique(3)} {unique(3)} callers"),
                "root_cause": f"{signature} cause number {n + 1} in {service}",
                "actions": actions,
                "related": [i for i in ids if i != incident_id]})
        families.append(Family(kind, service, f"{service} raising {signature} on every request",
                               fix, tuple(ids), tuple(starts)))
    rng.shuffle(rows)
    return rows, families


ROWS, FAMILIES = generate()


@pytest.fixture(scope="module")
def briefings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Briefing]:
    """Every family's alert briefed once, on one lexical index of the generated memory."""
    folder = tmp_path_factory.mktemp("dated")
    path = folder / "incidents.yaml"
    path.write_text(yaml.safe_dump(ROWS, sort_keys=False), encoding="utf-8")
    engine = TriageEngine(Settings(incidents_path=path, data_dir=folder / "data",
                                   embed_model="none", fixed_now=NOW))
    assert engine.load().incidents == len(ROWS)
    return {family.alert: engine.brief(parse_alert(family.alert)).briefing
            for family in FAMILIES}


def test_the_generated_memory_is_what_the_tests_assume() -> None:
    assert 250 <= len(ROWS) <= 400
    assert len({row["id"] for row in ROWS}) == len(ROWS)
    kinds = {family.kind for family in FAMILIES}
    assert kinds == {"same_fix", "decayed", "singleton"}
    assert all(s < NOW for f in FAMILIES for s in f.starts)
    again, _ = generate()
    assert again == ROWS  # deterministic for the seed


def strongly_recalled(briefing: Briefing, family: Family) -> set[str]:
    return {r.incident_id for r in briefing.recalled
            if r.match == "strong" and r.service == family.service}


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.kind != "singleton"],
                         ids=lambda f: f"{f.kind}-{f.members[0]}")
def test_a_family_recurs_with_every_member_in_time_order(
        briefings: dict[str, Briefing], family: Family) -> None:
    briefing = briefings[family.alert]
    found = briefing.recurrence
    assert found is not None
    # Recall finds every member strongly and nothing else recurs with them.
    assert strongly_recalled(briefing, family) == set(family.members)
    assert found.count == len(family.members)
    assert found.incident_ids == list(family.members)
    assert found.service == family.service and found.undated == 0
    assert found.first == family.starts[0].isoformat()
    assert found.last == family.starts[-1].isoformat()
    assert found.last_incident_id == family.members[-1]
    assert found.days_since_last == (NOW - family.starts[-1]).days
    assert len(found.root_causes) == len(family.members)
    assert found.root_causes[0].endswith(f"cause number 1 in {family.service}")


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.kind == "same_fix"],
                         ids=lambda f: f.members[0])
def test_a_same_fix_family_is_closed_by_its_one_fix_every_time(
        briefings: dict[str, Briefing], family: Family) -> None:
    briefing = briefings[family.alert]
    found = briefing.recurrence
    assert found is not None
    assert found.same_fix is True
    assert found.fix == family.fix and found.fix_resolved == len(family.members)
    lead = briefing.recommendations[0]
    assert lead.action == family.fix
    assert lead.history is not None and not lead.history.failed_last
    assert lead.history.worked == len(family.members)
    assert lead.history.old_evidence is ((NOW - family.starts[-1]) > timedelta(days=365))
    assert "did not work the most recent time" not in briefing.summary


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.kind == "decayed"],
                         ids=lambda f: f.members[0])
def test_a_decayed_familys_old_fix_failed_last_in_its_newest_member(
        briefings: dict[str, Briefing], family: Family) -> None:
    briefing = briefings[family.alert]
    found = briefing.recurrence
    assert found is not None
    assert found.same_fix is False
    assert found.fix == family.fix and found.fix_resolved == len(family.members) - 1
    old = next(r for r in briefing.recommendations if r.action == family.fix)
    assert old.history is not None
    assert old.history.failed_last is True
    assert old.history.failed_incident_id == family.members[-1]
    assert old.history.failed_on == family.starts[-1].isoformat()
    assert old.history.worked == len(family.members) - 1
    assert old.history.last_worked == family.starts[-2].isoformat()
    assert f"failed on {family.starts[-1].date().isoformat()} in {family.members[-1]}" \
        in old.history.text
    # The old fix still leads (its net count is not below the new fix's): the summary says it.
    assert briefing.recommendations[0].action == family.fix
    assert (f"did not work the most recent time, on {family.starts[-1].date().isoformat()} "
            f"in {family.members[-1]}") in briefing.summary


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.kind == "singleton"][:10],
                         ids=lambda f: f.members[0])
def test_a_singleton_does_not_recur(briefings: dict[str, Briefing], family: Family) -> None:
    briefing = briefings[family.alert]
    assert strongly_recalled(briefing, family) == set(family.members)
    assert briefing.recurrence is None
