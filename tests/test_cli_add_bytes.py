"""`triage add` keeps the team's bytes and says what happened (issue 22 items 3, 4, 6, 14).

Through the real CLI (``call_cli``; a subprocess where only a process shows the point: a
signal, two processes racing for the lock). Each test checks the exact bytes of the incidents
file, the message and the exit code.
"""

from __future__ import annotations

import codecs
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from store.loader import load_incidents, parse_incidents_text
from store.writer import incident_block, lock_path
from tests.conftest import BUNDLED_INCIDENTS, TEST_NOW
from tests.test_cli import call_cli

REPO = Path(__file__).resolve().parent.parent
NEW = """\
- id: INC-3001
  service: ledger-service
  symptoms: ledger totals drift between shards after failover
  actions:
    - id: A1
      action: Replayed the shard journal on every shard
      outcome: WORSENED
      explanation: Replay doubled entries on the primary
    - id: A2
      action: Reconciled from the audit stream
      outcome: RESOLVED
      explanation: The audit stream is authoritative
"""
LEXICAL = {"TRIAGE_EMBED_MODEL": "none"}  # the file is the point: no embedder to load


def new_block(text: str = NEW, newline: str = "\n") -> bytes:
    incident = parse_incidents_text(text, "new.yaml")[0]
    return incident_block(incident).replace("\n", newline).encode("utf-8")


@pytest.fixture
def new_file(tmp_path: Path) -> Path:
    path = tmp_path / "new.yaml"
    path.write_text(NEW, encoding="utf-8")
    return path


def crlf_copy(folder: Path) -> Path:
    """The bundled memory as a Windows checkout holds it: CRLF and a byte-order mark."""
    path = folder / "incidents.yaml"
    path.write_bytes(codecs.BOM_UTF8 + BUNDLED_INCIDENTS.read_bytes().replace(b"\n", b"\r\n"))
    return path


# --- item 3 -------------------------------------------------------------------------------

def test_add_and_replace_into_a_crlf_file_change_only_their_block(
        tmp_path: Path, bundled_data_dir: Path, new_file: Path) -> None:
    incidents = crlf_copy(tmp_path)
    before = incidents.read_bytes()

    added = call_cli("add", str(new_file), data_dir=bundled_data_dir, incidents=incidents)
    assert added.returncode == 0, added.stderr
    assert f"saved INC-3001 to {incidents}" in added.stdout
    # Every CRLF of the 1,888 lines stays: old bytes, a blank line, the block in CRLF.
    assert incidents.read_bytes() == before + b"\r\n" + new_block(newline="\r\n")

    changed = NEW.replace("Reconciled from the audit stream", "Reconciled from the audit log")
    new_file.write_text(changed, encoding="utf-8")
    replaced = call_cli("add", str(new_file), "--replace", data_dir=bundled_data_dir,
                        incidents=incidents)
    assert replaced.returncode == 0, replaced.stderr
    assert incidents.read_bytes() == before + b"\r\n" + new_block(changed, "\r\n")
    checked = call_cli("check", data_dir=bundled_data_dir, incidents=incidents)
    assert checked.returncode == 0 and ": ok — " in checked.stdout, checked.stderr


# --- item 4 -------------------------------------------------------------------------------

def test_add_through_a_symlink_saves_into_the_checkout_it_points_to(
        tmp_path: Path, bundled_data_dir: Path, new_file: Path) -> None:
    checkout = tmp_path / "team-repo"
    checkout.mkdir()
    target = checkout / "incidents.yaml"
    shutil.copyfile(BUNDLED_INCIDENTS, target)
    before = target.read_bytes()
    link = tmp_path / "home" / "incidents.yaml"
    link.parent.mkdir()
    link.symlink_to(target)

    added = call_cli("add", str(new_file), data_dir=bundled_data_dir, incidents=link)

    assert added.returncode == 0, added.stderr
    assert link.is_symlink() and link.resolve() == target  # still a link
    assert target.read_bytes() == before + b"\n" + new_block()  # the checkout got it
    assert lock_path(link) == checkout / ".incidents.yaml.lock"
    assert sorted(p.name for p in link.parent.iterdir()) == ["incidents.yaml"]


# --- item 14: a new memory ----------------------------------------------------------------

@pytest.mark.parametrize(("text", "kept"), [
    ("", ""),
    ("# Payments team memory: one item per incident.\n",
     "# Payments team memory: one item per incident.\n\n"),
    ("# Payments team memory.\n[]\n", "# Payments team memory.\n\n"),
], ids=["empty", "comment-only", "empty-list"])
def test_add_starts_a_new_memory(tmp_path: Path, new_file: Path, text: str, kept: str) -> None:
    incidents = tmp_path / "incidents.yaml"
    incidents.write_text(text, encoding="utf-8")

    added = call_cli("add", str(new_file), data_dir=tmp_path / "data", incidents=incidents,
                     extra_env=LEXICAL)

    assert added.returncode == 0, added.stderr
    assert f"saved INC-3001 to {incidents}" in added.stdout
    assert "memory: 1 incidents, 2 actions; index updated" in added.stdout
    assert incidents.read_bytes() == kept.encode() + new_block()
    checked = call_cli("check", data_dir=tmp_path / "data", incidents=incidents,
                       extra_env=LEXICAL)
    assert checked.returncode == 0, checked.stderr
    assert f"{incidents}: ok — 1 incidents" in checked.stdout


# --- item 6: Ctrl-C (leftover temp files: tests/test_check_leftovers.py) -----------------

def triage_process(*args: str, incidents: Path, data_dir: Path, pause_at: str | None = None
                   ) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TRIAGE_", "OLLAMA_"))}
    env.update(TRIAGE_INCIDENTS=str(incidents), TRIAGE_DATA_DIR=str(data_dir),
               TRIAGE_NOW=TEST_NOW, PYTHONFAULTHANDLER="1", **LEXICAL)
    if pause_at:
        env["TRIAGE_PAUSE_AT"] = pause_at  # store/writer.py stops itself there (SIGSTOP)
    return subprocess.Popen([sys.executable, "-m", "console", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_stopped(child: subprocess.Popen[str]) -> None:
    _, status = os.waitpid(child.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), f"did not pause: {child.communicate(timeout=60)}"


def finished(child: subprocess.Popen[str], seconds: float = 60) -> tuple[str, str]:
    """The child's output once it exits. One that has not exited within ``seconds`` fails the
    test with where it was: its state ("T" = stopped, e.g. at a second pause point) and every
    thread's stack (faulthandler, on SIGABRT), not a bare timeout."""
    try:
        return child.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        state = Path(f"/proc/{child.pid}/stat").read_text().split(") ")[1][0]
        os.kill(child.pid, signal.SIGABRT)
        os.kill(child.pid, signal.SIGCONT)
        out, err = child.communicate(timeout=30)
        raise AssertionError(f"triage did not exit within {seconds} s (state {state})\n"
                             f"stdout: {out}\nstderr: {err}") from None


ONE = "- id: INC-1\n  service: ledger\n  symptoms: totals drift\n  actions: []\n"


def test_ctrl_c_during_add_after_the_write_says_the_incident_was_saved(
        tmp_path: Path, new_file: Path) -> None:
    incidents = tmp_path / "incidents.yaml"
    incidents.write_text(ONE, encoding="utf-8")
    before = incidents.read_bytes()
    second = NEW.replace("INC-3001", "INC-3002")
    new_file.write_text(NEW + second, encoding="utf-8")
    # The add stops itself right after renaming INC-3001 into place; Ctrl-C arrives there.
    child = triage_process("add", str(new_file), incidents=incidents, data_dir=tmp_path / "data",
                           pause_at="renamed")
    try:
        wait_stopped(child)
        os.kill(child.pid, signal.SIGINT)  # pending while stopped: delivered as it goes on
        os.kill(child.pid, signal.SIGCONT)
        out, err = finished(child)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()

    assert child.returncode == 1, (out, err)
    assert "Traceback" not in err
    assert out == f"saved INC-3001 to {incidents}\n"
    assert err == (f"triage: interrupted, but INC-3001 WAS saved to {incidents}\n"
                   "  the index may not hold it yet\n"
                   "  not saved: INC-3002\n"
                   "Run `triage index` to bring the index up to date (the console also does "
                   "when it next starts); add the others again.\n")
    assert incidents.read_bytes() == before + b"\n" + new_block()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []



def test_a_ctrl_c_whose_interrupt_is_swallowed_still_stops_the_add(
        tmp_path: Path, new_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Ctrl-C lost in CI (its KeyboardInterrupt dropped somewhere in native code): made
    to happen here, in process. Right after INC-3001 is written, SIGINT arrives and whatever
    runs then swallows the interrupt; the add must still stop before INC-3002."""
    import console.engine.engine as engine_module

    incidents = tmp_path / "incidents.yaml"
    incidents.write_text(ONE, encoding="utf-8")
    before = incidents.read_bytes()
    new_file.write_text(NEW + NEW.replace("INC-3001", "INC-3002"), encoding="utf-8")
    real = engine_module.save_incident

    def saved_then_interrupt_lost(*args: object, **kwargs: object) -> Path:
        path = real(*args, **kwargs)  # type: ignore[arg-type]
        try:
            signal.raise_signal(signal.SIGINT)  # the Ctrl-C, right after the write …
        except KeyboardInterrupt:
            pass  # … and its interrupt lost
        return path

    monkeypatch.setattr(engine_module, "save_incident", saved_then_interrupt_lost)
    done = call_cli("add", str(new_file), data_dir=tmp_path / "data", incidents=incidents,
                    extra_env={"TRIAGE_EMBED_MODEL": "none"})
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == f"saved INC-3001 to {incidents}\n"
    assert f"interrupted, but INC-3001 WAS saved to {incidents}" in done.stderr
    assert "not saved: INC-3002" in done.stderr
    assert incidents.read_bytes() == before + b"\n" + new_block()  # before the fix: INC-3002 too


# --- item 14: the loser of a same-id race -------------------------------------------------

def waiting_for_lock(pid: int) -> bool:
    """Is process ``pid`` blocked on a flock (a ``->`` line of /proc/locks)?"""
    return any("-> FLOCK" in line and f" {pid} " in line
               for line in Path("/proc/locks").read_text().splitlines())


def test_the_loser_of_a_same_id_race_is_told_the_id_now_exists(
        tmp_path: Path, new_file: Path) -> None:
    incidents = tmp_path / "incidents.yaml"
    incidents.write_text(ONE, encoding="utf-8")
    theirs = tmp_path / "theirs.yaml"
    theirs.write_text(NEW.replace("Reconciled from the audit stream", "Rolled the shard back"),
                      encoding="utf-8")
    # The winner takes the lock and stops there; the loser loads the memory (no INC-3001 yet)
    # and waits for the lock; then the winner saves and the loser gets its turn.
    winner = triage_process("add", str(theirs), incidents=incidents,
                            data_dir=tmp_path / "data-a", pause_at="created")
    loser: subprocess.Popen[str] | None = None
    try:
        wait_stopped(winner)
        loser = triage_process("add", str(new_file), incidents=incidents,
                               data_dir=tmp_path / "data-b")
        deadline = time.monotonic() + 120
        while not waiting_for_lock(loser.pid):
            assert loser.poll() is None, loser.communicate()
            assert time.monotonic() < deadline, "the second add never reached the lock"
            time.sleep(0.05)
        os.kill(winner.pid, signal.SIGCONT)
        won = finished(winner)
        lost = finished(loser)
    finally:
        for child in (winner, loser):
            if child is not None and child.poll() is None:
                child.kill()
                child.wait()

    assert winner.returncode == 0, won
    assert loser.returncode == 2, lost
    out, err = lost
    assert "saved" not in out
    assert "someone else edited it" not in err
    assert (f"INC-3001 now exists in {incidents}:6 — another save added it after this memory "
            "was loaded, so yours was not saved (nothing was written); run `triage add` again "
            "with --replace to replace that block with yours, or give your incident a new id"
            ) in err
    stored = [i for i in load_incidents(incidents).incidents if i.id == "INC-3001"]
    assert [a.action for a in stored[0].actions] == ["Replayed the shard journal on every shard",
                                                     "Rolled the shard back"]
