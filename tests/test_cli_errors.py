"""Environment mistakes get a message, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_unusable_data_dir_is_explained(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    env = {**os.environ, "TRIAGE_DATA_DIR": str(blocker / "data")}
    result = subprocess.run([sys.executable, "-m", "console", "brief", "disk full"], env=env,
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "TRIAGE_DATA_DIR" in result.stderr
    assert "Traceback" not in result.stderr
    assert blocker.read_text() == "x"
