"""The console with a REAL local model (Qwen2.5-Coder-1.5B over tests/realmodel/harness.py).

Marked ``realmodel``: deselected by `make test` (pyproject addopts), run by `make model-check`
(which installs the runtime and weights first). Without them these tests FAIL, saying how to
install — a real-model run that silently skipped would measure nothing.

Wording is never asserted (a model's prose); only what the console promises: a draft is shown
once the guards accepted it, labelled as the model's; a model slower than the timeout gives
the memory's own briefing with the reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Input, Static

from console.engine.config import Settings
from console.ui.app import TriageApp
from tests.conftest import BUNDLED_INCIDENTS
from tests.realmodel import install
from tests.realmodel.launch import MODEL_NAME, Harness

pytestmark = pytest.mark.realmodel

# Accepted at attempt 1 in the model-check runs (and the first measured end-to-end run).
ACCEPTED_ALERT = "payments service KeyError: 'amount' after deploy"
STORED_FIX = "Flushed the payment-schema cache and redeployed with versioned cache keys"
SLOW_ALERT = "payments-api p99 latency up, intermittent database connection errors"
# A 1.5B model on one CPU thread reads a ~2,000-token prompt for 30-60 s (more under load).
REAL_TIMEOUT = 300.0
WAIT = 900.0  # the longest a test waits for a briefing (two attempts under load)


@pytest.fixture(scope="session")
def real_model() -> Iterator[Harness]:
    if not install.ready():
        pytest.fail("the real model is not installed: run `make model-check` or "
                    "`python tests/realmodel/install.py` (a 4-17 min compile and a 1.1 GB "
                    f"download into {install.cache_dir()})", pytrace=False)
    harness = Harness(install.venv_python(), install.model_path())
    try:
        harness.wait_ready()
    except RuntimeError as exc:
        pytest.fail(f"the real-model harness did not start: {exc} — reinstall with "
                    "`python tests/realmodel/install.py`", pytrace=False)
    yield harness
    harness.stop()


def settings(data_dir: Path, host: str, **timing: float) -> Settings:
    return Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=data_dir, ollama_host=host,
                    model=MODEL_NAME, **timing)


def body(app: TriageApp) -> str:
    return " ".join(str(app.screen.query_one("#briefing-body", Static).content).split())


async def brief(app: TriageApp, pilot: object, alert: str) -> str:
    """Types the alert, waits (bounded) for every worker to finish, returns the briefing."""
    await app.workers.wait_for_complete()
    await pilot.pause()  # type: ignore[attr-defined]
    status = str(app.screen.query_one("#status-line", Static).content)
    assert f"{MODEL_NAME} online" in status, status
    app.screen.query_one("#alert-input", Input).value = alert
    await pilot.press("enter")  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
    await asyncio.wait_for(app.workers.wait_for_complete(), WAIT)
    await pilot.pause()  # type: ignore[attr-defined]
    return body(app)


async def test_the_console_shows_a_real_models_accepted_briefing(
        bundled_data_dir: Path, real_model: Harness) -> None:
    app = TriageApp(settings(bundled_data_dir, real_model.host, model_timeout=REAL_TIMEOUT))
    async with app.run_test(size=(120, 40)) as pilot:
        shown = await brief(app, pilot, ACCEPTED_ALERT)
    assert f"written by model {MODEL_NAME}" in shown, shown[:1500]
    assert "Not written by a model" not in shown and "· deterministic" not in shown
    assert STORED_FIX in shown  # the guards cite the stored fix, whatever the model's words


async def test_a_real_model_slower_than_the_timeout_gives_the_deterministic_briefing(
        bundled_data_dir: Path, real_model: Harness) -> None:
    # 1 s: the model is still reading its prompt (tens of seconds) when the client gives up.
    app = TriageApp(settings(bundled_data_dir, real_model.host, model_timeout=1.0))
    async with app.run_test(size=(120, 40)) as pilot:
        shown = await brief(app, pilot, SLOW_ALERT)
    assert "· deterministic" in shown and "Not written by a model" in shown, shown[:1500]
    assert "timed out after 1s" in shown or "too slow" in shown, shown[:1500]
    assert "INC-2041/A1 WORSENED" in shown  # the memory's own warning is there
    assert "written by model" not in shown
