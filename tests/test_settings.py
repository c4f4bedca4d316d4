"""Settings read from the environment: credentials never show, bad values are named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
