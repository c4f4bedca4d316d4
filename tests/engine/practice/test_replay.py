"""`triage drill` engine: replays on one index, the hidden incident never seen, hand counts.

The fixture memory below is written so each replay's outcome can be reasoned by hand:
- K1–K4: one KeyError family (near-identical symptoms, all related). K1–K3 were resolved by
  the same rollback (kind rollback); K4, where the rollback stopped working, by restoring a
  flag (kind config). Replaying K1–K3 recalls two rollbacks and K4's flag → tier 2, lead
  rollback = right (by kind). Replaying K4 recalls three rollbacks → tier 3+, wrong.
  K1 also restarted the pods (WORSENED, kind restart): K1's replay warns of nothing of that
  kind (warned wrong); the others do not count (they saw no restart go wrong).
- D1–D2: a disk-full pair whose fixes say the same thing in other words, D2's without a
  kind → the cosine rule decides, right, tier 1. Both restarted the log shipper (WORSENED,
  kind restart): each replay warns of the other's → warned right.
- X1–X2: declared related but worded apart (DNS vs TLS): both abstain, a related incident in
  memory after all.
- G1: a game-day drill of the KeyError family: hidden everywhere unless drills are included.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from console.engine.config import Settings
from console.engine.engine import TriageEngine
from console.engine.practice.evaluate import eval_index
from console.engine.practice.replay import (
    Judge,
    Replay,
    ReplayReport,
    run_replays,
    save_replays,
    summarise,
    track_record,
    wilson,
)
from store.index import MemoryIndex
from store.loader import load_incidents
from store.minilm import MiniLMEmbedder

KEYERROR = ("payments-api raising KeyError: 'amount' in the charge handler after the deploy; "
            "checkout requests failing with HTTP 500")


def action(aid: str, text: str, outcome: str, kind: str | None = None) -> dict[str, Any]:
    row = {"id": aid, "action": text, "outcome": outcome, "explanation": f"{text}: recorded"}
    if kind:
        row["kind"] = kind
    return row


ROLLBACK = action("A2", "Rolled back the payments-api deploy to the previous release",
                  "RESOLVED", "rollback")


def keyerror(iid: str, related: list[str], actions: list[dict[str, Any]], **extra: Any
             ) -> dict[str, Any]:
    return {"id": iid, "title": "Payments KeyError amount after deploy", "service": "payments-api",
            "symptoms": KEYERROR, "related": related, "actions": [dict(a) for a in actions],
            **extra}


K = ["K1", "K2", "K3", "K4"]
FIXTURE: list[dict[str, Any]] = [
    keyerror("K1", ["K2", "K3", "K4"], [
        action("A1", "Restarted all payments-api pods", "WORSENED", "restart"), ROLLBACK]),
    keyerror("K2", ["K1", "K3", "K4"], [ROLLBACK]),
    keyerror("K3", ["K1", "K2", "K4"], [ROLLBACK]),
    keyerror("K4", ["K1", "K2", "K3"], [
        action("A1", "Restored the amount_v2 feature flag to its previous value", "RESOLVED",
               "config")]),
    {"id": "D1", "title": "Log host disk full", "service": "log-host", "related": ["D2"],
     "symptoms": "Disk usage at 100% on the log host volume, log writes failing with ENOSPC",
     "actions": [action("A1", "Restarted the log shipper", "WORSENED", "restart"),
                 action("A2", "Deleted the rotated log files and enlarged the log volume",
                        "RESOLVED", "disk")]},
    {"id": "D2", "title": "Log host disk full again", "service": "log-host", "related": ["D1"],
     "symptoms": "Log host volume 100% full, log writes failing with ENOSPC no space left",
     "actions": [action("A1", "Restarted the log shipper service", "WORSENED", "restart"),
                 action("A2", "Removed old rotated logs and grew the disk volume", "RESOLVED")]},
    {"id": "X1", "title": "Internal DNS lookups failing", "service": "resolver",
     "related": ["X2"],
     "symptoms": "NXDOMAIN for internal hostnames from every pod; coredns answering SERVFAIL",
     "actions": [action("A1", "Reverted the coredns configmap", "RESOLVED", "config")]},
    {"id": "X2", "title": "Ingress certificate expired", "service": "edge", "related": ["X1"],
     "symptoms": "Browsers report an expired TLS certificate on the public ingress",
     "actions": [action("A1", "Renewed the certificate by hand", "RESOLVED", "config")]},
    keyerror("G1", ["K1"], [action("A1", "Flushed the payments cache during the game day",
                                   "RESOLVED", "cache"),
                            action("A2", "Scaled payments-api to twenty replicas", "WORSENED",
                                   "scale")], drill=True),
]


@pytest.fixture(scope="module")
def fixture_memory(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The fixture memory, its eval index (built once), and both drill reports."""
    import yaml

    root = tmp_path_factory.mktemp("drill")
    incidents = root / "incidents.yaml"
    incidents.write_text(yaml.safe_dump(FIXTURE, sort_keys=False), encoding="utf-8")
    settings = Settings(incidents_path=incidents, data_dir=root / "data")
    memory = load_incidents(incidents)
    index = eval_index(settings, memory, MiniLMEmbedder())
    report = run_replays(index, memory, settings)
    with_drills = run_replays(index, memory, settings.replace(include_drills=True))
    return {"settings": settings, "memory": memory, "index": index, "report": report,
            "with_drills": with_drills}


def by_id(report: ReplayReport) -> dict[str, Replay]:
    return {r.incident_id: r for r in report.replays}


def test_the_hidden_incident_never_appears_in_its_own_replay(
        fixture_memory: dict[str, Any], readonly_engine: TriageEngine) -> None:
    assert readonly_engine.memory is not None and readonly_engine.index is not None
    bundled = run_replays(readonly_engine.index, readonly_engine.memory, readonly_engine.settings)
    reports = [fixture_memory["report"], fixture_memory["with_drills"], bundled]
    assert len(bundled.replays) == len(readonly_engine.memory.incidents)
    for report in reports:
        for r in report.replays:
            seen = {*r.recalled_incident_ids, *r.ranked_incident_ids, *r.cited_incident_ids}
            seen |= {a.split("/")[0] for a in r.warnings}
            if r.lead is not None:
                seen.add(r.lead.action_id.split("/")[0])
            assert r.incident_id not in seen, r


def test_each_replay_as_reasoned_by_hand(fixture_memory: dict[str, Any]) -> None:
    replays = by_id(fixture_memory["report"])
    assert set(replays) == {*K, "D1", "D2", "X1", "X2"}  # G1 (a drill) is not replayed
    for kid in ("K1", "K2", "K3"):
        r = replays[kid]
        assert (r.state, r.tier, r.lead_right, r.rank) == ("proven", "2", True, 1), r
        assert r.lead is not None and (r.lead.rule, r.lead.kind) == ("kind", "rollback")
    k4 = replays["K4"]
    assert (k4.tier, k4.lead_right, k4.confidence) == ("3+", False, 94)
    for did in ("D1", "D2"):
        r = replays[did]
        assert (r.tier, r.lead_right, r.warned_right) == ("1", True, True), r
        assert r.lead is not None and r.lead.rule == "cosine"
        assert r.lead.cosine is not None and r.lead.cosine >= 0.7
    assert replays["K1"].warned_right is False and replays["K2"].warned_right is None
    for xid in ("X1", "X2"):
        assert (replays[xid].state, replays[xid].rank, replays[xid].lead_right) == (
            "no_prior_incident", None, None)


def test_calibration_table_equals_the_hand_count(fixture_memory: dict[str, Any]) -> None:
    summary = fixture_memory["report"].summary
    rows = {row.tier: (row.replays, row.counted, row.right, row.no_lead) for row in summary.tiers}
    assert rows == {"0": (0, 0, 0, 0), "1": (2, 2, 2, 0), "2": (3, 3, 3, 0), "3+": (1, 1, 0, 0)}
    tier2 = next(row for row in summary.tiers if row.tier == "2")
    assert (tier2.ci_low, tier2.ci_high) == (pytest.approx(0.4385, abs=1e-4), 1.0)
    assert (summary.abstained.replays, summary.abstained.related_in_memory) == (2, 2)
    assert summary.rules == {"kind": 4, "cosine": 2}
    assert (summary.warned.replays, summary.warned.right) == (3, 2)
    assert (summary.with_related, summary.hit_at_1, summary.hit_at_5, summary.mrr) == (
        8, 0.75, 0.75, 0.75)


def test_drills_are_never_evidence_unless_included(fixture_memory: dict[str, Any]) -> None:
    for r in fixture_memory["report"].replays:
        assert "G1" not in {*r.ranked_incident_ids, *r.cited_incident_ids}
    included = by_id(fixture_memory["with_drills"])
    assert "G1" in included  # replayed too
    assert "G1" in included["K1"].recalled_incident_ids


def test_a_drill_postmortem_is_never_cited_in_a_real_briefing(
        fixture_memory: dict[str, Any]) -> None:
    from console.engine.briefing.alert import parse_alert

    settings: Settings = fixture_memory["settings"]
    for include, expect_g1 in ((False, False), (True, True)):
        engine = TriageEngine(settings.replace(include_drills=include))
        briefing = engine.brief(parse_alert(KEYERROR)).briefing
        cited = {e.incident_id for r in briefing.recommendations for e in r.evidence}
        cited |= {w.incident_id for w in briefing.warnings}
        recalled = {r.incident_id for r in briefing.recalled}
        assert ("G1" in recalled | cited) is expect_g1, (include, recalled, cited)
        # and the re-recall of a verification hides it too
        again = engine.rerecall(KEYERROR, frozenset())
        assert ("G1" in {i.incident_id for i in again.incidents}) is expect_g1


def test_one_index_build_serves_every_replay(fixture_memory: dict[str, Any], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[int] = []
    real_build = MemoryIndex.build

    def counting(self: MemoryIndex, *args: Any, **kwargs: Any) -> list[str]:
        builds.append(1)
        return real_build(self, *args, **kwargs)

    monkeypatch.setattr(MemoryIndex, "build", counting)
    settings = fixture_memory["settings"].replace(data_dir=tmp_path / "d")
    memory = fixture_memory["memory"]
    calls: list[tuple[int, int]] = []
    index = eval_index(settings, memory, MiniLMEmbedder())
    report = run_replays(index, memory, settings, progress=lambda d, t: calls.append((d, t)))
    assert len(builds) == 1 and len(report.replays) == 8
    assert calls[0] == (0, 8) and calls[-1] == (8, 8)


def test_summary_of_hand_made_replays() -> None:
    def made(iid: str, tier: str, right: bool | None, state: str = "proven",
             rank: int | None = None, related: bool = False) -> Replay:
        return Replay(incident_id=iid, service="s", title="", drill=False, alert="a",
                      state=state, tier=tier, confidence=0, recalled_incident_ids=[],  # type: ignore[arg-type]
                      ranked_incident_ids=[], cited_incident_ids=[],
                      related=["R"] if related else [], rank=rank, related_in_memory=related,
                      has_resolved=right is not None, lead=None, lead_right=right, warnings=[],
                      warned_right=None)

    replays = [made("a", "3+", True, rank=1, related=True), made("b", "3+", True),
               made("c", "3+", False, rank=3, related=True), made("d", "1", None),
               made("e", "0", None, state="no_prior_incident", related=True)]
    summary = summarise(replays)
    row = next(r for r in summary.tiers if r.tier == "3+")
    assert (row.replays, row.counted, row.right, row.rate) == (3, 3, 2, 0.6667)
    assert row.line() == "tier 3+: lead fix right 2 of 3 replays, 95% CI 21–94%"
    assert (summary.with_related, summary.hit_at_1, summary.mrr) == (3, 0.3333, 0.4444)
    assert next(r for r in summary.tiers if r.tier == "1").line() == (
        "tier 1: no replay with a known fix landed here")


@pytest.mark.parametrize("right, n, low, high", [
    # Newcombe (1998), Statistics in Medicine 17:857, table I, method 3 (Wilson, no CC)
    (81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718), (29, 29, 0.8830, 1.0),
])
def test_wilson_matches_published_values(right: int, n: int, low: float, high: float) -> None:
    interval = wilson(right, n)
    assert interval is not None
    assert interval == (pytest.approx(low, abs=1e-4), pytest.approx(high, abs=1e-4))


def test_wilson_of_nothing_is_none() -> None:
    assert wilson(0, 0) is None


def test_track_record_says_none_fresh_and_stale(fixture_memory: dict[str, Any],
                                                tmp_path: Path) -> None:
    settings = fixture_memory["settings"].replace(data_dir=tmp_path / "d")
    memory = fixture_memory["memory"]
    assert track_record(settings, memory) is None
    save_replays(settings, memory, fixture_memory["report"], "all-MiniLM-L6-v2")
    record = track_record(settings, memory, "all-MiniLM-L6-v2")
    assert record is not None and not record.stale
    assert record.line("2") == "tier 2: lead fix right 3 of 3 replays, 95% CI 44–100%"
    changed = memory.__class__(memory.incidents[:-1], memory.files, "another-hash")
    stale = track_record(settings, changed, "all-MiniLM-L6-v2")
    assert stale is not None and stale.stale and "incidents changed" in stale.why
    assert "memory changed since the drill" in stale.line("2")
    other = track_record(settings.replace(include_drills=True), memory, "x")
    assert other is not None and other.stale and "embedder" in other.why


def test_cosine_rule_threshold_is_what_decides() -> None:
    judge = Judge(MiniLMEmbedder(), threshold=0.99)
    memory_like = load_incidents_from(FIXTURE[4:6])
    d1, d2 = memory_like
    lead = _recalled(d2, 1)
    check = judge.lead(lead, [(d1, 1)])
    assert check is not None and check.rule == "cosine" and check.right is False
    assert Judge(MiniLMEmbedder(), threshold=0.5).lead(lead, [(d1, 1)]).right is True  # type: ignore[union-attr]


def load_incidents_from(rows: list[dict[str, Any]]) -> list[Any]:
    from store.models import Incident

    return [Incident.model_validate(row) for row in rows]


def _recalled(incident: Any, position: int) -> Any:
    from store.recall import RecalledAction

    a = incident.actions[position]
    return RecalledAction(
        incident_id=incident.id, action_id=incident.action_ref(a), local_action_id=a.id,
        position=position, service=incident.service, outcome=a.outcome, kind=a.kind or "",
        confirmed=True, title="", symptoms="", root_cause="", action=a.action,
        explanation=a.explanation, started_at="", text=a.action, score=1.0)


def test_a_postmortem_saved_on_a_game_day_is_a_drill_and_never_real_evidence(
        tmp_path: Path) -> None:
    """Saved in game-day mode, the incident is written with ``drill: true``; the next real
    briefing (no game day, drills not included) neither recalls nor cites it."""
    import shutil

    from console.engine.briefing.alert import parse_alert
    from store.models import Incident
    from tests.conftest import BUNDLED_INCIDENTS

    incidents = tmp_path / "incidents.yaml"
    shutil.copy(BUNDLED_INCIDENTS, incidents)
    settings = Settings(incidents_path=incidents, data_dir=tmp_path / "data", game_day=True)
    practice = Incident.model_validate({
        "id": "INC-9001", "service": "ledger-api",
        "symptoms": "ledger-api ledger-posting queue stuck, zebra-unicorn errors on every post",
        "actions": [{"id": "A1", "action": "Flipped the zebra-unicorn switch",
                     "outcome": "RESOLVED", "explanation": "The queue drained at once"}]})
    saved = TriageEngine(settings).save_incident(practice)
    assert saved.incident.drill is True
    assert "drill: true" in incidents.read_text(encoding="utf-8")
    alert = parse_alert("ledger-api zebra-unicorn errors on every post, posting queue stuck")
    real = TriageEngine(settings.replace(game_day=False)).brief(alert).briefing
    assert "INC-9001" not in {r.incident_id for r in real.recalled}
    included = TriageEngine(settings.replace(game_day=False, include_drills=True)).brief(alert).briefing
    assert "INC-9001" in {r.incident_id for r in included.recalled}
