"""Settings read from the environment: credentials never show, bad values are named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from console.engine.config import Settings

REPO = Path(__file__).resolve().parents[1]
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
TOKEN = "FwoGZXIvYXdzEXAMPLESESSIONTOKEN"


def test_credentials_never_appear_when_settings_are_printed(tmp_path: Path) -> None:
    settings = Settings.from_env({"TRIAGE_DATA_DIR": str(tmp_path), "AWS_ACCESS_KEY_ID": "AKID",
                                  "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_SESSION_TOKEN": TOKEN})
    for shown in (repr(settings), str(settings), f"{settings.s3_secret_access_key}"):
        assert SECRET not in shown and TOKEN not in shown
    assert settings.s3_secret_access_key is not None and settings.s3_session_token is not None
    assert settings.s3_secret_access_key.get_secret_value() == SECRET
    assert settings.s3_session_token.get_secret_value() == TOKEN
    # A copy keeps them masked, and str paths handed in become paths.
    copy = settings.replace(data_dir=str(tmp_path / "other"))
    assert copy.data_dir == tmp_path / "other" and SECRET not in repr(copy)
    assert Settings.from_env({"TRIAGE_DATA_DIR": str(tmp_path)}).s3_secret_access_key is None


def test_a_bad_number_in_the_environment_is_named_not_a_traceback(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "console", "check"], capture_output=True, text=True, cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "TRIAGE_DATA_DIR": str(tmp_path),
             "TRIAGE_MODEL_TIMEOUT": "soon"})
    assert result.returncode == 2
    assert "bad environment" in result.stderr and "soon" in result.stderr
    assert "Traceback" not in result.stderr


# --- issue 22 item 10: a bad OLLAMA_HOST or model timeout is refused by name ----------------

@pytest.mark.parametrize("value", ["-5", "0", "nan", "inf", "-inf", "soon"])
def test_a_model_timeout_that_is_no_positive_number_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(ValueError, match=r"TRIAGE_MODEL_TIMEOUT=.* not a number of seconds above 0"):
        Settings.from_env({"TRIAGE_DATA_DIR": str(tmp_path), "TRIAGE_MODEL_TIMEOUT": value})
    assert Settings.from_env({"TRIAGE_DATA_DIR": str(tmp_path),
                              "TRIAGE_MODEL_TIMEOUT": "12.5"}).model_timeout == 12.5
    assert Settings.from_env({"TRIAGE_DATA_DIR": str(tmp_path)}).model_timeout == 60.0


@pytest.mark.parametrize("value, why", [
    ("http://[::1", "Invalid IPv6 URL"),
    ("http://127.0.0.1:99999", "out of range"),
    ("localhost:abc", "Port could not be cast"),
    ("ftp://127.0.0.1", "scheme 'ftp'"),
    ("http://127.0.0.1 :11434", "space"),
])
def test_an_ollama_host_the_client_cannot_use_is_refused(tmp_path: Path, value: str,
                                                         why: str) -> None:
    with pytest.raises(ValueError) as refused:
        Settings.from_env({"TRIAGE_DATA_DIR": str(tmp_path), "OLLAMA_HOST": value})
    assert str(refused.value).startswith(f"OLLAMA_HOST={value!r} is not a host")
    assert why in str(refused.value)


@pytest.mark.parametrize("value", ["127.0.0.1", ":11434", "localhost:11434",
                                   "http://127.0.0.1:11434", "https://ollama.internal/",
                                   "[::1]:11434", "http://[::1]", " http://127.0.0.1:1 "])
def test_every_host_spelling_the_ollama_client_reads_is_accepted(tmp_path: Path,
                                                                 value: str) -> None:
    host = Settings.from_env({"TRIAGE_DATA_DIR": str(tmp_path), "OLLAMA_HOST": value}).ollama_host
    assert host == value.strip()


def test_a_bad_ollama_host_is_a_named_error_not_a_traceback(tmp_path: Path) -> None:
    """`triage brief` with OLLAMA_HOST='http://[::1': the ollama package raised from its import
    (its default client reads the variable), a traceback; now exit 2 before anything runs."""
    result = subprocess.run(
        [sys.executable, "-m", "console", "brief", "checkout latency up"], capture_output=True,
        text=True, cwd=REPO, env={"PATH": "/usr/bin:/bin", "TRIAGE_DATA_DIR": str(tmp_path),
                                  "OLLAMA_HOST": "http://[::1", "TRIAGE_MODEL": "qwen2.5:7b"})
    assert result.returncode == 2, result.stderr
    assert "bad environment: OLLAMA_HOST='http://[::1' is not a host" in result.stderr
    assert "Invalid IPv6 URL" in result.stderr and "Traceback" not in result.stderr
