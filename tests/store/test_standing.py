"""Issue 33's rules on hand-built memories, through the real index and the shipped calibration:
an incident proves its fix only when it stands out from what the memory typically matches, by
a margin over any look-alike another fix resolved; relevance does not grow with the alert's
length; what every incident of the memory shares is no evidence; a saved near-duplicate joins
its family; unrelated incidents added to the memory change nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from console.engine.briefing.alert import parse_alert
from console.engine.config import Settings
from console.engine.engine import TriageEngine

BOILERPLATE = "HighRequestErrorRate: request error rate in service {svc} in namespace shop-demo"


def incident(iid: str, service: str, title: str, symptoms: str, fix: str,
             related: list[str] | None = None) -> dict[str, Any]:
    return {"id": iid, "service": service, "title": title, "symptoms": symptoms,
            "related": related or [],
            "actions": [{"id": "A1", "action": fix, "outcome": "RESOLVED",
                         "explanation": f"{fix}: the error rate returned to normal"}]}


def one_application() -> list[dict[str, Any]]:
    """Eight faults of one application: every alert shares its services and boilerplate."""
    faults = [
        ("cart", "Cart flag left on", "cart operations failing after the cartFailure flag was set",
         "Disable the cartFailure flag"),
        ("payment", "Payment flag unreachable", "payment charges failing, payment unreachable",
         "Disable the paymentUnreachable flag"),
        ("ad", "Ad service garbage collection pauses", "ad requests timing out during GC pauses",
         "Disable the adManualGc flag"),
        ("checkout", "Checkout quota exhausted", "checkout pods pending, resource quota exceeded",
         "Raise the namespace resource quota"),
        ("currency", "Currency pod crash loop", "currency pod in CrashLoopBackOff, bad image tag",
         "Point the currency deployment at the right image"),
        ("email", "Email DNS failure", "email service cannot resolve the smtp relay hostname",
         "Fix the coredns stub domain for the relay"),
        ("shipping", "Shipping port mismatch", "shipping service listening on the wrong port",
         "Set the shipping service port back to 50051"),
        ("quote", "Quote memory limit", "quote pods OOMKilled under normal load",
         "Raise the quote container memory limit"),
    ]
    return [incident(f"APP-{n}", svc, title,
                     "\n".join([BOILERPLATE.format(svc=svc), BOILERPLATE.format(svc="frontend"),
                                BOILERPLATE.format(svc="frontend-proxy"), detail]), fix)
            for n, (svc, title, detail, fix) in enumerate(faults, 1)]


def engine_over(path: Path, data_dir: Path) -> TriageEngine:
    triage = TriageEngine(Settings(incidents_path=path, data_dir=data_dir))
    triage.load()
    return triage


def brief(engine: TriageEngine, text: str) -> Any:
    return engine.brief(parse_alert(text)).briefing


@pytest.fixture(scope="module")
def app_engine(tmp_path_factory: pytest.TempPathFactory) -> TriageEngine:
    import yaml

    folder = tmp_path_factory.mktemp("one-app")
    path = folder / "incidents.yaml"
    path.write_text(yaml.safe_dump(one_application(), sort_keys=False), encoding="utf-8")
    return engine_over(path, folder / "data")


def test_a_novel_fault_in_a_one_application_memory_is_no_prior_incident(
        app_engine: TriageEngine) -> None:
    """It names known services and the alert name every incident shares, and nothing else."""
    alert = "\n".join([BOILERPLATE.format(svc="recommendation"),
                       BOILERPLATE.format(svc="frontend"),
                       BOILERPLATE.format(svc="frontend-proxy"),
                       "recommendation responses slow after the product list cache was resized"])
    assert brief(app_engine, alert).state == "no_prior_incident"


def test_a_known_fault_in_the_same_memory_is_proven_by_its_own_fix(
        app_engine: TriageEngine) -> None:
    """The control: the same boilerplate with a fault the memory holds stands out."""
    alert = "\n".join([BOILERPLATE.format(svc="cart"), BOILERPLATE.format(svc="frontend"),
                       "cart operations failing, the cartFailure flag is set"])
    briefing = brief(app_engine, alert)
    assert briefing.state == "proven"
    assert briefing.recommendations[0].evidence[0].incident_id == "APP-1"


def test_a_forty_line_alert_is_judged_as_its_one_line_page(app_engine: TriageEngine) -> None:
    """Repeating an alert's lines (an event dump) adds BM25, never standing."""
    line = "\n".join([BOILERPLATE.format(svc="recommendation"),
                      "recommendation responses slow after the product list cache was resized"])
    one, forty = brief(app_engine, line), brief(app_engine, "\n".join([line] * 20))
    assert one.state == forty.state == "no_prior_incident"


def siblings(extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Two faults Kubernetes describes in the same words, each with its own fix, and filler."""
    words = ("payment pod stuck Pending: 0/3 nodes are available: 3 node(s) didn't match "
             "Pod's node affinity/selector; preemption: not helpful for scheduling")
    return [
        incident("SIB-1", "payment", "Payment node affinity mismatch", words,
                 "Correct the requiredDuringScheduling node affinity term on the payment pods"),
        incident("SIB-2", "payment", "Payment node selector mismatch", words + " (selector)",
                 "Remove the stale disktype nodeSelector from the payment deployment"),
        incident("OTH-1", "ledger", "Ledger statement timeouts",
                 "ledger nightly batch statements timing out after 30 s", "Add the missing index"),
        incident("OTH-2", "search", "Search cluster red", "search shards unassigned after node loss",
                 "Restore the replica count on the search indices"),
        *(extra or []),
    ]


def test_a_look_alike_with_another_fix_makes_it_similar_not_proven_and_both_are_shown(
        tmp_path: Path, write_incidents: Any) -> None:
    engine = engine_over(write_incidents(siblings()), tmp_path / "data")
    alert = "\n".join(["KubePodNotReady: payment pod stuck Pending, 0/3 nodes are available: "
                       "3 node(s) didn't match Pod's node affinity/selector"] * 6)
    briefing = brief(engine, alert)
    assert briefing.state == "unproven"
    assert {"SIB-1", "SIB-2"} <= {r.incident_id for r in briefing.recalled}
    assert briefing.confidence.value <= 30


def test_without_the_look_alike_the_same_alert_is_proven(tmp_path: Path,
                                                          write_incidents: Any) -> None:
    """The control: the margin, not the words, decided above."""
    engine = engine_over(write_incidents([i for i in siblings() if i["id"] != "SIB-2"]),
                         tmp_path / "data")
    alert = "\n".join(["KubePodNotReady: payment pod stuck Pending, 0/3 nodes are available: "
                       "3 node(s) didn't match Pod's node affinity/selector"] * 6)
    briefing = brief(engine, alert)
    assert briefing.state == "proven"
    assert briefing.recommendations[0].evidence[0].incident_id == "SIB-1"


FLUSH = "Flushed the payment-schema cache on every payments-api instance"
KEYERROR = "payments-api KeyError: 'amount' in the charge handler after deploy, HTTP 500"


def family(saved: bool) -> list[dict[str, Any]]:
    rows = [incident(f"K-{n}", "payments-api", "Payments KeyError after deploy",
                     f"KeyError 'amount' raised by the charge handler after release {n}; "
                     "checkout requests fail with HTTP 500", FLUSH) for n in range(1, 5)]
    rows += [incident("OTH-1", "ledger-api", "Ledger statement timeouts",
                      "ledger nightly batch statements timing out after 30 s",
                      "Add the missing index"),
             incident("OTH-2", "search", "Search cluster red",
                      "search shards unassigned after node loss",
                      "Restore the replica count on the search indices")]
    if saved:  # the postmortem saved from this very page: its symptoms are the alert's words
        rows.append(incident("K-NEW", "payments-api", "Payments KeyError again", KEYERROR, FLUSH))
    return rows


def test_a_saved_near_duplicate_joins_its_family_and_never_hides_it(
        tmp_path: Path, write_incidents: Any) -> None:
    before = brief(engine_over(write_incidents(family(False)), tmp_path / "a"), KEYERROR)
    after = brief(engine_over(write_incidents(family(True), name="b.yaml"), tmp_path / "b"),
                  KEYERROR)
    assert before.state == after.state == "proven"
    recalled = {r.incident_id for r in after.recalled}
    assert recalled == {r.incident_id for r in before.recalled} | {"K-NEW"}
    assert after.recommendations[0].resolved == before.recommendations[0].resolved + 1
    assert after.confidence.value >= before.confidence.value


def unrelated(count: int) -> list[dict[str, Any]]:
    """Generated incidents about other systems, in words no alert above uses."""
    systems = ["tape-library", "badge-reader", "print-spooler", "hvac-controller",
               "voip-gateway", "fax-relay", "kiosk", "signage"]
    faults = ["firmware checksum mismatch", "battery backup exhausted", "licence server expired",
              "fan tachometer silent", "clock battery drained", "paper path jammed"]
    return [incident(f"GEN-{n}", systems[n % len(systems)],
                     f"{systems[n % len(systems)]} {faults[n % len(faults)]}",
                     f"unit {n} of the {systems[n % len(systems)]} fleet reports "
                     f"{faults[(n // 8) % len(faults)]} during the weekly inspection",
                     f"Replaced the {faults[n % len(faults)].split()[0]} module on unit {n}")
            for n in range(count)]


def test_unrelated_incidents_added_to_the_memory_change_no_answer(
        tmp_path: Path, write_incidents: Any) -> None:
    import yaml

    alerts = ["\n".join([BOILERPLATE.format(svc="cart"), "cart operations failing, the "
                         "cartFailure flag is set"]),
              "\n".join([BOILERPLATE.format(svc="recommendation"), "recommendation responses "
                         "slow after the product list cache was resized"])]
    small = tmp_path / "small.yaml"
    small.write_text(yaml.safe_dump(one_application(), sort_keys=False), encoding="utf-8")
    grown = tmp_path / "grown.yaml"
    grown.write_text(yaml.safe_dump(one_application() + unrelated(60), sort_keys=False),
                     encoding="utf-8")
    alone, more = engine_over(small, tmp_path / "s"), engine_over(grown, tmp_path / "g")
    for alert in alerts:
        a, b = brief(alone, alert), brief(more, alert)
        assert (a.state, [r.incident_id for r in a.recalled][:1]) == (
            b.state, [r.incident_id for r in b.recalled][:1])
