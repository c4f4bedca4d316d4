"""Reading the alert: plain text, Alertmanager webhooks, and everything that is neither."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.engine.briefing.alert import (
    MAX_ALERT_CHARS,
    MAX_GROUPS,
    AlertError,
    parse_alert,
    read_alert_file,
)


def webhook(*alerts: dict, common: dict | None = None) -> str:
    """An Alertmanager webhook payload (version 4) as Alertmanager posts it."""
    return json.dumps({
        "version": "4", "groupKey": "{}:{alertname=\"x\"}", "status": "firing",
        "receiver": "triage", "groupLabels": {}, "commonLabels": common or {},
        "commonAnnotations": {}, "externalURL": "http://alertmanager:9093",
        "alerts": list(alerts),
    })


def alert_item(labels: dict, annotations: dict | None = None, status: str = "firing") -> dict:
    return {"status": status, "labels": labels, "annotations": annotations or {},
            "startsAt": "2026-03-14T02:05:00Z", "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus:9090/graph", "fingerprint": "abc123"}


# --- plain text -----------------------------------------------------------------------------

def test_plain_text_is_used_as_is() -> None:
    alert = parse_alert("  checkout-service p99 latency up, intermittent DB errors\n")
    assert alert.text == "checkout-service p99 latency up, intermittent DB errors"
    assert alert.source == "text"
    assert alert.service is None
    assert not alert.truncated


def test_text_that_merely_contains_braces_is_text() -> None:
    alert = parse_alert("{job=\"payments\"} rate(http_requests_total{code=~\"5..\"}[5m]) > 0.05")
    assert alert.source == "text"
    assert "payments" in alert.text


def test_very_long_text_is_truncated_and_says_so() -> None:
    alert = parse_alert("stack frame\n" * 5000)
    assert alert.truncated
    assert len(alert.text) == MAX_ALERT_CHARS


# --- Alertmanager ---------------------------------------------------------------------------

def test_alertmanager_labels_and_annotations_become_the_alert_text() -> None:
    raw = webhook(alert_item(
        {"alertname": "CheckoutLatencyHigh", "service": "checkout-service", "severity": "page"},
        {"summary": "p99 latency up", "description": "intermittent database connection errors"}))
    alert = parse_alert(raw)
    assert alert.source == "alertmanager"
    assert alert.service == "checkout-service"
    for part in ("CheckoutLatencyHigh", "checkout-service", "p99 latency up",
                 "intermittent database connection errors"):
        assert part in alert.text
    assert "generatorURL" not in alert.text and "fingerprint" not in alert.text
    assert "http://prometheus" not in alert.text


def test_job_label_names_the_service_when_there_is_no_service_label() -> None:
    alert = parse_alert(webhook(alert_item({"alertname": "TargetDown", "job": "payments-api"},
                                           {"summary": "scrape target down"})))
    assert alert.service == "payments-api"
    assert "payments-api" in alert.text


def test_different_alerts_become_groups_each_searched_on_its_own() -> None:
    first = alert_item({"alertname": "HighLatency", "service": "checkout-service"},
                       {"summary": "p99 latency up"})
    second = alert_item({"alertname": "DBConnErrors", "service": "payments-api"},
                        {"description": "HikariPool connection is not available"})
    again = {**first, "labels": {**first["labels"], "instance": "pod-2"}}  # another target
    alert = parse_alert(webhook(first, second, again))
    assert [(g.text, g.alerts, g.service) for g in alert.groups] == [
        ("HighLatency — service checkout-service — p99 latency up", 2, "checkout-service"),
        ("DBConnErrors — service payments-api — HikariPool connection is not available", 1,
         "payments-api")]
    # Until a group is chosen the alert reads as its first group, never as all run together.
    assert alert.text == alert.groups[0].text and alert.service == "checkout-service"
    assert alert.group is None
    chosen = alert.for_group(1)
    assert chosen.text == alert.groups[1].text and chosen.service == "payments-api"
    assert chosen.group == 1 and chosen.groups == alert.groups


def test_common_labels_fill_in_what_an_alert_leaves_out() -> None:
    raw = webhook(alert_item({"instance": "pod-1"}, {"summary": "KeyError: 'amount'"}),
                  common={"alertname": "PaymentsErrors", "service": "payments-api"})
    alert = parse_alert(raw)
    assert alert.service == "payments-api"
    assert "PaymentsErrors" in alert.text and "KeyError: 'amount'" in alert.text


def test_an_alert_s_own_labels_win_over_common_labels() -> None:
    raw = webhook(alert_item({"alertname": "X", "service": "orders-db"}, {"summary": "lag"}),
                  common={"service": "payments-api"})
    assert parse_alert(raw).service == "orders-db"


def test_a_single_alert_object_without_the_envelope_is_accepted() -> None:
    raw = json.dumps(alert_item({"alertname": "DiskFilling", "service": "orders-db"},
                                {"summary": "pg_wal growing"}))
    alert = parse_alert(raw)
    assert alert.source == "alertmanager"
    assert "pg_wal growing" in alert.text


def test_webhook_with_a_byte_order_mark_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "alert.json"
    raw = webhook(alert_item({"alertname": "HighLatency"}, {"summary": "p99 latency up"}))
    path.write_bytes(b"\xef\xbb\xbf" + raw.encode())
    alert = parse_alert(read_alert_file(path))
    assert alert.source == "alertmanager"
    assert "p99 latency up" in alert.text


# --- refused ----------------------------------------------------------------------------------

@pytest.mark.parametrize("raw", [
    '{"foo": 1}', "{}", "[]", "[1, 2, 3]", '{"alerts": []}', '{"data": {"alerts": []}}',
])
def test_json_that_is_not_alertmanager_is_refused(raw: str) -> None:
    with pytest.raises(AlertError, match="Alertmanager"):
        parse_alert(raw)


def test_json_of_no_known_shape_with_words_is_briefed_as_its_text() -> None:
    alert = parse_alert('{"alerts": "firing on payments-api"}')  # issue 24: not refused
    assert alert.source == "text" and "payments-api" in alert.text
    assert any("not a payload this console reads" in n for n in alert.notices), alert.notices


def test_a_bare_list_of_alerts_is_read_as_alertmanager_posts_them() -> None:
    alert = parse_alert('[{"labels": {"alertname": "PaymentsHigh5xx"}}]')
    assert alert.source == "alertmanager" and "PaymentsHigh5xx" in alert.text


@pytest.mark.parametrize("raw", ['{"alerts": [{}]}', '{"alerts": [1, "x"]}',
                                 '{"alerts": [{"labels": {}, "annotations": {}}]}'])
def test_alertmanager_payload_with_nothing_to_search_is_refused(raw: str) -> None:
    with pytest.raises(AlertError, match="nothing|no alertname"):
        parse_alert(raw)


# A broken payload with Alertmanager's keys ("alerts", "receiver") is briefed as plain text
# with a notice instead: tests/test_cli_input_limits.py (issue 22 item 11).
@pytest.mark.parametrize("raw", ['{"data": [', '{"labels": {"a": 1}}, 2', '[{"a":',
                                 '{"status": "firing",\n "items": [,]}'])
def test_broken_json_is_refused_with_where_it_broke(raw: str) -> None:
    with pytest.raises(AlertError, match=r"JSON.*line \d+, column \d+"):
        parse_alert(raw)


@pytest.mark.parametrize("raw", ["", "   ", "\n\t\n"])
def test_empty_alert_is_refused(raw: str) -> None:
    with pytest.raises(AlertError, match="empty"):
        parse_alert(raw)


def test_empty_alert_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "alert.txt"
    path.write_bytes(b"")
    with pytest.raises(AlertError, match="empty"):
        parse_alert(read_alert_file(path))


@pytest.mark.parametrize("data", [
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01",
    b"\x7fELF\x02\x01\x01\x00\x00\x00\x00",
])
def test_binary_alert_file_is_refused(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "alert.bin"
    path.write_bytes(data)
    with pytest.raises(AlertError, match="binary") as caught:
        read_alert_file(path)
    assert str(path) in str(caught.value)


def test_non_utf8_alert_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "alert.txt"
    path.write_bytes("Zahlungsdienst gestört: café".encode("latin-1"))
    with pytest.raises(AlertError, match="UTF-8") as caught:
        read_alert_file(path)
    assert str(path) in str(caught.value)


def test_missing_alert_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "alert.json"
    with pytest.raises(AlertError, match="not found") as caught:
        read_alert_file(path)
    assert str(path) in str(caught.value)


def test_directory_as_alert_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AlertError, match="directory"):
        read_alert_file(tmp_path)


@pytest.mark.parametrize("raw, message", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"alerts": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
], ids=["bare-array", "inside-alerts"])
def test_deeply_nested_json_is_a_named_error_not_a_traceback(raw: str, message: str) -> None:
    with pytest.raises(AlertError, match=message):
        parse_alert(raw)


def test_common_labels_that_are_not_strings_are_read_not_a_traceback() -> None:
    payload = {"commonLabels": {"service": "payments-api", "alertname": ["A", "B"],
                                "meta": {"a": 1}, "flag": None},
               "alerts": [{"labels": {"severity": "page"},
                           "annotations": {"summary": "5xx above 5%"}}]}
    alert = parse_alert(json.dumps(payload))
    assert alert.service == "payments-api"
    assert "5xx above 5%" in alert.text and "meta" not in alert.text


# --- grouping a multi-alert payload -----------------------------------------------------------

LATENCY = {"alertname": "CheckoutLatencyHigh", "service": "checkout-service", "severity": "page"}
OTHER = alert_item({"alertname": "DiskFilling", "service": "orders-db"}, {"summary": "wal"})


@pytest.mark.parametrize("label", ["instance", "pod", "pod_name", "host", "hostname", "node",
                                   "nodename", "container", "container_id", "ip", "uid",
                                   "exported_instance", "exported_pod", "kubernetes_pod_name"])
def test_the_same_alert_on_forty_targets_is_one_group(label: str) -> None:
    forty = [alert_item({**LATENCY, label: f"target-{n}"},
                        {"summary": "p99 latency up", "description": f"p99 4s on target-{n}"})
             for n in range(40)]
    alert = parse_alert(webhook(*forty, OTHER))
    assert [g.alerts for g in alert.groups] == [40, 1]
    latency = alert.groups[0]
    assert latency.key == 'CheckoutLatencyHigh{service="checkout-service",severity="page"}'
    # One alert text for the group, from its first member: the targets are not searched.
    assert latency.text == ("CheckoutLatencyHigh — service checkout-service — p99 latency up — "
                            "p99 4s on target-0")
    assert latency.label == ("CheckoutLatencyHigh — service checkout-service — severity page — "
                             "p99 latency up — p99 4s on target-0")


@pytest.mark.parametrize("label", ["service", "job", "severity", "namespace", "env", "alertname"])
def test_alerts_that_differ_in_what_fires_are_separate_groups(label: str) -> None:
    one = alert_item({**LATENCY, "instance": "a"}, {"summary": "p99 latency up"})
    two = alert_item({**LATENCY, "instance": "b", label: "other"}, {"summary": "p99 latency up"})
    assert [g.alerts for g in parse_alert(webhook(one, two)).groups] == [1, 1]


def test_one_group_is_one_alert_exactly() -> None:
    """A payload whose alerts all fall into one group reads as that alert alone."""
    forty = [alert_item({**LATENCY, "pod": f"pod-{n}"}, {"summary": "p99 latency up"})
             for n in range(40)]
    alone = parse_alert(webhook(forty[0]))
    together = parse_alert(webhook(*forty))
    assert together == alone
    assert together.groups == () and together.text == alone.text


def test_severity_is_shown_but_not_searched() -> None:
    alert = parse_alert(webhook(alert_item(LATENCY, {"summary": "p99 latency up"})))
    assert "page" not in alert.text and "severity" not in alert.text


def test_groups_are_ordered_by_severity_then_size_then_payload_order() -> None:
    def fire(name: str, severity: str, count: int) -> list[dict]:
        return [alert_item({"alertname": name, "severity": severity, "instance": str(n)},
                           {"summary": name}) for n in range(count)]

    alert = parse_alert(webhook(*fire("InfoBig", "info", 9), *fire("WarnSmall", "warning", 1),
                                *fire("NoSeverity", "", 20), *fire("WarnBig", "warning", 3),
                                *fire("Crit", "critical", 1), *fire("WarnSmall2", "warning", 1)))
    assert [g.key.split("{")[0] for g in alert.groups] == [
        "Crit", "WarnBig", "WarnSmall", "WarnSmall2", "InfoBig", "NoSeverity"]


def test_only_firing_alerts_are_grouped_when_any_fire() -> None:
    firing = alert_item({**LATENCY, "instance": "a"}, {"summary": "p99 latency up"})
    resolved = [alert_item({"alertname": "DiskFilling", "instance": str(n)}, {"summary": "wal"},
                           status="resolved") for n in range(3)]
    alert = parse_alert(webhook(*resolved, firing))
    assert alert.groups == ()  # one firing group: one alert
    assert "DiskFilling" not in alert.text and "CheckoutLatencyHigh" in alert.text
    assert alert.notices == ("3 resolved alert(s) left out: only the 1 firing alert(s) were "
                             "searched",)


def test_resolved_alerts_alone_are_grouped_and_say_so() -> None:
    resolved = [alert_item({"alertname": name, "instance": str(n)}, {"summary": name},
                           status="resolved") for name in ("A", "B") for n in range(2)]
    alert = parse_alert(webhook(*resolved))
    assert [g.alerts for g in alert.groups] == [2, 2]
    assert alert.notices == ("every alert in this payload is resolved (4): briefing what "
                             "fired, nothing is firing now",)


def test_groups_are_capped_and_the_notice_counts_what_was_left_out() -> None:
    alerts = [alert_item({"alertname": f"A{n}"}, {"summary": f"alert {n}"})
              for n in range(MAX_GROUPS + 3)]
    alert = parse_alert(webhook(*alerts))
    assert len(alert.groups) == MAX_GROUPS
    assert alert.groups[-1].key == f"A{MAX_GROUPS - 1}{{}}"
    assert alert.notices == (f"the payload holds {MAX_GROUPS + 3} alert groups: the "
                             f"{MAX_GROUPS} most severe and largest were considered, 3 group(s) "
                             "of 3 alert(s) were not",)


def test_hostile_labels_are_one_line_without_control_characters() -> None:
    evil = {"alertname": "X\x1b]0;title\x07Y", "team": 'a"b\nc\x9b2J', "severity": "\x1b[31mpage"}
    raw = webhook(alert_item(evil, {"summary": "[bold]s[/bold]\x1b[2J", "description": "d\u0085"}),
                  OTHER)
    group = parse_alert(raw).groups[0]
    assert group.key == 'X]0;titleY{severity="[31mpage",team="a\\"b c2J"}'
    assert group.label == "X]0;titleY — severity [31mpage — [bold]s[/bold][2J — d"
    assert group.text == "X]0;titleY — [bold]s[/bold][2J — d"


def test_a_huge_label_is_bounded_in_the_list_but_searched_whole() -> None:
    long = "word " * 200
    group = parse_alert(webhook(alert_item({"alertname": "A", "team": long},
                                           {"summary": long}), OTHER)).groups[0]
    assert len(group.key) == 300 and group.key.endswith("…")
    assert len(group.label) == 300 and group.label.endswith("…")
    assert group.text == f"A — {long}"
