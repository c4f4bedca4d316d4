"""Issue 22 item 11: at most 1 MB of an alert is read (a file, stdin, a paste), in chunks and
never the whole stream first; a cut input or a broken Alertmanager payload is briefed with a
notice that says so; ``--alert-file -`` reads stdin."""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from console.engine.briefing.alert import (
    MAX_ALERT_BYTES,
    AlertError,
    parse_alert,
    read_alert_file,
    read_alert_stream,
)
from tests.conftest import BUNDLED_INCIDENTS, REPO_ROOT, TEST_NOW

CHECKOUT = "checkout-service p99 latency up, intermittent database connection errors"
CUT = ("stdin was longer than 1 MB (1,048,576 bytes): only its first 1 MB was read and "
       "briefed")
LOOKED = "the alert looked like an Alertmanager payload but did not parse (line "


class Endless(io.RawIOBase):
    """A stream that never ends (`yes CHECKOUT | triage brief -`); reading more than 4 MB of
    it is the defect itself, so it raises there instead of filling the test's memory."""

    LIMIT = 4 * MAX_ALERT_BYTES

    def __init__(self, line: bytes) -> None:
        self.line, self.given = line, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.given > self.LIMIT:
            raise MemoryError(f"read {self.given:,} bytes of an endless stream")
        size = len(buffer)
        data = (self.line * (size // len(self.line) + 2))[self.given % len(self.line):][:size]
        buffer[:size] = data
        self.given += size
        return size


def triage(*args: str, data_dir: Path, stdin: io.RawIOBase | bytes = b"") -> tuple[int, str, str]:
    """``triage ARGS`` in process with ``stdin`` as the process's stdin (bytes or a stream);
    the exit code, stdout and stderr."""
    from console.__main__ import main

    buffer = io.BytesIO(stdin) if isinstance(stdin, bytes) else io.BufferedReader(stdin)
    fake_stdin = io.TextIOWrapper(buffer, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TRIAGE_DATA_DIR", str(data_dir))
        env.setenv("TRIAGE_INCIDENTS", str(BUNDLED_INCIDENTS))
        env.setenv("TRIAGE_OFFLINE", "1")
        env.setattr(sys, "stdin", fake_stdin)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    return code, out.getvalue(), err.getvalue()


# --- reading: the byte cap -----------------------------------------------------------------

def test_an_endless_stream_is_read_to_the_cap_and_no_further() -> None:
    endless = Endless(CHECKOUT.encode() + b"\n")
    raw = read_alert_stream(io.BufferedReader(endless), "stdin")
    assert raw.cut and len(raw.text.encode()) == MAX_ALERT_BYTES
    # One byte past the cap tells it was cut (a buffered reader may fetch one chunk ahead).
    assert endless.given <= MAX_ALERT_BYTES + 128 * 1024
    alert = parse_alert(raw)
    assert alert.notices[0] == CUT
    assert alert.text.startswith(CHECKOUT) and alert.truncated  # and the 20,000-char limit


def test_a_character_split_by_the_cut_is_left_out_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "alert.txt"
    path.write_bytes(b"x" + "é".encode() * MAX_ALERT_BYTES)  # the cut falls inside an é
    raw = read_alert_file(path)
    assert raw.cut and raw.text == "x" + "é" * ((MAX_ALERT_BYTES - 1) // 2)
    assert parse_alert(raw).notices[0].startswith(f"{path} was longer than 1 MB")


def test_text_handed_in_whole_is_under_the_same_cap() -> None:
    alert = parse_alert(CHECKOUT + " " + "ü" * MAX_ALERT_BYTES)  # the console's paste path
    assert alert.notices[0] == ("the alert was longer than 1 MB (1,048,576 bytes): only its "
                                "first 1 MB was read and briefed")
    assert not parse_alert(CHECKOUT).notices


def test_a_payload_far_over_20000_characters_but_under_a_megabyte_still_parses() -> None:
    alerts = [{"status": "firing", "labels": {"alertname": "CheckoutLatencyHigh",
                                              "service": "checkout-service", "pod": f"pod-{n}"},
               "annotations": {"summary": CHECKOUT, "description": "d" * 2_000}}
              for n in range(300)]
    raw = json.dumps({"receiver": "triage", "alerts": alerts})
    assert 500_000 < len(raw.encode()) < MAX_ALERT_BYTES
    alert = parse_alert(raw)
    assert alert.source == "alertmanager" and alert.service == "checkout-service"
    assert not alert.notices


# --- a broken Alertmanager payload: plain text, with a notice --------------------------------

def webhook() -> dict[str, Any]:
    return {"receiver": "triage", "status": "firing", "alerts": [
        {"status": "firing", "labels": {"alertname": "CheckoutLatencyHigh",
                                        "service": "checkout-service"},
         "annotations": {"summary": CHECKOUT}}]}


@pytest.mark.parametrize("indent", [None, 2], ids=["compact", "pretty-printed"])
def test_a_truncated_alertmanager_payload_is_briefed_as_text_and_says_where_it_broke(
        indent: int | None) -> None:
    whole = json.dumps(webhook(), indent=indent)
    alert = parse_alert(whole[: whole.index("checkout-service") + 30])  # cut inside a label
    assert alert.source == "text" and "CheckoutLatencyHigh" in alert.text
    (notice,) = alert.notices
    assert notice.startswith(LOOKED)
    assert "briefed as plain text" in notice and "send the whole payload again" in notice


def test_json_that_is_not_alertmanager_and_does_not_parse_is_still_refused() -> None:
    with pytest.raises(AlertError, match=r"looks like JSON but does not parse \(line 1"):
        parse_alert('{"foo": [1, ')


# --- the CLI --------------------------------------------------------------------------------

def test_endless_stdin_is_briefed_on_its_first_megabyte_with_a_notice(
        bundled_data_dir: Path) -> None:
    code, out, err = triage("brief", "-", "--json", data_dir=bundled_data_dir,
                            stdin=Endless(CHECKOUT.encode() + b"\n"))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["recalled"][0]["incident_id"] == "INC-2041"
    assert CUT in doc["search"]["notices"]


def test_alert_file_dash_reads_stdin(bundled_data_dir: Path) -> None:
    code, out, err = triage("brief", "--alert-file", "-", data_dir=bundled_data_dir,
                            stdin=json.dumps(webhook()).encode())
    assert code == 0, err
    assert "INC-2041" in out and "notice:" not in out


def test_a_two_megabyte_webhook_cut_at_the_cap_is_briefed_as_text_with_both_notices(
        bundled_data_dir: Path, tmp_path: Path) -> None:
    payload = webhook()
    payload["alerts"][0]["annotations"]["description"] = "x" * (2 * MAX_ALERT_BYTES)
    path = tmp_path / "alert.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    code, out, err = triage("brief", "--alert-file", str(path), data_dir=bundled_data_dir)
    assert code == 0, err
    assert (f"notice: {path} was longer than 1 MB (1,048,576 bytes): only its first 1 MB was "
            "read and briefed") in out
    assert "notice: the cut at 1 MB broke its JSON (line 1, column " in out
    assert "max_alerts in Alertmanager's webhook_config" in out


def test_alert_file_dev_zero_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    """In a fresh interpreter with 1.5 GB of address space: reading /dev/zero whole ran out
    of memory (a MemoryError traceback); at most 1 MB of it is read, and it is binary."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 * 1024 ** 3 // 2,) * 2)

    env = {**{k: v for k, v in os.environ.items()
              if not k.startswith(("TRIAGE_", "OLLAMA_")) and k != "PYTHONPATH"},
           "TRIAGE_DATA_DIR": str(tmp_path / "data"), "TRIAGE_INCIDENTS": str(BUNDLED_INCIDENTS),
           "TRIAGE_NOW": TEST_NOW, "TRIAGE_OFFLINE": "1"}
    ran = subprocess.run([sys.executable, "-c", "from console.__main__ import main; "
                          "raise SystemExit(main(['brief', '--alert-file', '/dev/zero']))"],
                         cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120,
                         preexec_fn=limit, check=False)
    assert ran.returncode == 2, ran.stderr[-600:]
    assert ran.stderr == ("triage: /dev/zero looks binary, not an alert — pass text or "
                          "Alertmanager JSON\n")
    assert ran.stdout == "" and not (tmp_path / "data").exists()
