"""Issue 22 item 1: one broken incident never silences every briefing (a partial memory).

A bad merge or a half-typed edit in the incidents file: `triage check` still exits 2 naming
file:line, `triage index` still refuses (the index is never rebuilt from a partial memory),
`triage add` into that file is refused with the file's bytes unchanged — and `triage brief`
briefs from every incident that loads (exit 0), saying so once in ``search.notices`` and once
on stderr, with file:line and the incidents not searched. Also item 5 (editor files in a
memory directory) and from item 14 the ``related`` warnings, a start in 2099 and problems
reported in one pass. Through the real CLI in process (tests/test_fault_matrix.py's ``cli``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from store.index import META_FILE
from tests.conftest import BUNDLED_INCIDENTS
from tests.test_fault_matrix import CHECKOUT, cli

NEW = """\
- id: INC-9100
  title: Widget queue stuck
  service: widget-api
  symptoms: Widget queue stopped draining
  actions:
    - id: A1
      action: Restarted the frobnicator
      outcome: RESOLVED
      explanation: It came back with an empty queue
"""

BROKEN_ITEMS = {
    # fault: (the broken incident's lines, words of the problem, its line within the item)
    "yaml-typo": ("- id: INC-9001\n  service: [oops\n  symptoms: half-typed edit\n",
                  "not valid YAML", 3),
    "impossible-date": ("- id: INC-9001\n  service: a\n  symptoms: s\n"
                        "  started_at: 2026-02-30T02:05:00Z\n",
                        "'2026-02-30T02:05:00Z' is not a real date or time", 4),
    "5000-deep-list": ("- id: INC-9001\n  service: a\n  symptoms: s\n  tags: "
                       + "[" * 5000 + "]" * 5000 + "\n", "nested more than 64 levels", 4),
    "3000-deep-mapping": ("- id: INC-9001\n  service: a\n  symptoms: s\n  tags: "
                          + "{a: " * 3000 + "1" + "}" * 3000 + "\n",
                          "nested more than 64 levels", 4),
    "4301-digit-integer": ("- id: INC-9001\n  service: a\n  symptoms: s\n  severity: "
                           + "7" * 4301 + "\n", "an integer of 4,301 digits", 4),
    "conflict-marker": ("<<<<<<< HEAD\n- id: INC-9001\n  service: a\n  symptoms: ours\n"
                        "=======\n- id: INC-9001\n  service: a\n  symptoms: theirs\n"
                        ">>>>>>> feature/widgets\n", "merge conflict", 1),
}


@pytest.fixture
def warm_data(bundled_index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data dir with no index but the bundled memory's embeddings cached (fast, offline)."""
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copyfile(bundled_index_dir / "embeddings.sqlite", folder / "embeddings.sqlite")
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(folder))
    return folder


@pytest.fixture
def data(bundled_data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the prebuilt index of the bundled memory, in use."""
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(bundled_data_dir))
    return bundled_data_dir


@pytest.fixture
def memory_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "memory" / "incidents.yaml"
    path.parent.mkdir()
    shutil.copyfile(BUNDLED_INCIDENTS, path)
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(path))
    return path


def append(path: Path, text: str) -> int:
    """Append ``text`` to the file; the (1-based) line it starts on."""
    old = path.read_text(encoding="utf-8")
    path.write_text(old + ("" if old.endswith("\n") else "\n") + text, encoding="utf-8")
    return old.count("\n") + 1


def new_incident_file(tmp_path: Path, text: str = NEW) -> Path:
    path = tmp_path / "new.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("fault", list(BROKEN_ITEMS))
def test_one_broken_incident_fails_check_index_add_but_brief_goes_on(
        fault: str, memory_file: Path, warm_data: Path, tmp_path: Path) -> None:
    text, words, offset = BROKEN_ITEMS[fault]
    start = append(memory_file, text)
    where = f"{memory_file}:{start + offset - 1}"
    before = memory_file.read_bytes()

    check = cli("check")
    assert check.code == 2 and not check.crashed, check.err
    assert "triage: the incidents file has 1 problem:" in check.err
    assert f"  {where}: " in check.err and words in check.err, check.err
    assert "Traceback" not in check.err

    briefed = cli("brief", CHECKOUT, "--json")
    assert briefed.code == 0 and not briefed.crashed, briefed.err
    [line] = briefed.err.splitlines()  # exactly one stderr line
    assert line.startswith("triage: warning: partial memory — the incidents file has 1 "
                           "problem"), line
    assert where in line and "INC-9001" in line and "not searched: INC-9001" in line
    assert "indexed in memory only (no index was written)" in line
    out = briefed.json()
    assert [n for n in out["search"]["notices"] if n.startswith("partial memory")] == [
        line.removeprefix("triage: warning: ")]
    assert "INC-2041" in {r["incident_id"] for r in out["recalled"]}, out["recalled"]
    assert out["state"] == "proven"

    added = cli("add", str(new_incident_file(tmp_path)))
    assert added.code == 2 and not added.crashed, added.err
    assert where in added.err and words in added.err
    assert "saved" not in added.out

    indexed = cli("index")
    assert indexed.code == 2 and not indexed.crashed, indexed.err
    assert where in indexed.err and "the index was left as it was" in indexed.err

    assert memory_file.read_bytes() == before
    assert not (warm_data / "index").exists()  # nothing built on disk from a partial memory


def test_the_last_good_index_is_kept_and_briefed_from(memory_file: Path, data: Path) -> None:
    """An index on disk from the file as it last loaded: briefed from as it is, never rebuilt
    (its bytes do not change); the notice says which incidents it holds an earlier version of
    and which it does not hold at all."""
    text = memory_file.read_text(encoding="utf-8")
    block = text.index("- id: INC-1533\n")
    service = text.index("  service:", block)
    broken = text[:service] + "  service: [oops\n" + text[service:]
    memory_file.write_text(broken, encoding="utf-8")
    append(memory_file, NEW)
    meta = (data / "index" / META_FILE).read_bytes()
    listing = sorted(p.relative_to(data) for p in (data / "index").rglob("*"))

    briefed = cli("brief", CHECKOUT, "--json")
    assert briefed.code == 0 and not briefed.crashed, briefed.err
    [line] = briefed.err.splitlines()
    assert "briefed from the last good index (58 incidents" in line, line
    assert "not searched: INC-9100 (newer than the index)" in line
    assert "searched as last indexed: INC-1533" in line
    assert f"{memory_file}:" in line and "not valid YAML" in line
    out = briefed.json()
    assert "INC-2041" in {r["incident_id"] for r in out["recalled"]}

    assert (data / "index" / META_FILE).read_bytes() == meta
    assert sorted(p.relative_to(data) for p in (data / "index").rglob("*")) == listing
    assert cli("check").code == 2


def test_nothing_loads_and_no_index_is_still_bad_input(memory_file: Path,
                                                       warm_data: Path) -> None:
    """Nothing to brief from: "no prior incident" would be a lie, so brief exits 2 as before."""
    memory_file.write_text("- id: INC-1\n  service: [oops\n", encoding="utf-8")
    briefed = cli("brief", CHECKOUT, "--json")
    assert briefed.code == 2 and briefed.out == "", briefed.err
    assert f"{memory_file}:" in briefed.err and "not valid YAML" in briefed.err


def test_directory_mode_briefs_from_the_other_files(tmp_path: Path, warm_data: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    shutil.copyfile(BUNDLED_INCIDENTS, folder / "team.yaml")
    broken = folder / "INC-9001.yaml"
    broken.write_bytes("- id: INC-9001\n  service: a\n  symptoms: caf\u00e9\n".encode("latin-1"))
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(folder))
    briefed = cli("brief", CHECKOUT, "--json")
    assert briefed.code == 0, briefed.err
    [line] = briefed.err.splitlines()
    assert f"{broken}:3: not UTF-8 text" in line
    assert f"not searched: every incident in INC-9001.yaml ({broken})" in line
    assert "INC-2041" in {r["incident_id"] for r in briefed.json()["recalled"]}
    assert cli("check").code == 2



def test_directory_mode_saves_into_a_healthy_file_beside_a_broken_one(
        tmp_path: Path, warm_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    shutil.copyfile(BUNDLED_INCIDENTS, folder / "team.yaml")
    broken = folder / "widgets.yaml"
    broken.write_text(BROKEN_ITEMS["impossible-date"][0], encoding="utf-8")
    before = {f.name: f.read_bytes() for f in folder.iterdir()}
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(folder))

    added = cli("add", str(new_incident_file(tmp_path)))  # before: exit 2, nothing saved
    assert f"saved INC-9100 to {folder / 'INC-9100.yaml'}" in added.out, added.err
    assert "widgets.yaml does not load" in added.out + added.err
    assert "INC-9100's id was checked against the other files only" in added.out + added.err
    assert added.code == 1 and "not updated from a memory with problems: widgets.yaml" in added.err
    assert "Fix the file with problems (`triage check`), then run `triage index`" in added.err
    assert {f.name: f.read_bytes() for f in folder.iterdir() if f.name in before} == before
    assert not (warm_data / "index").exists()  # no index written from a partial memory

    # the broken file's own id cannot be saved beside it: its uniqueness is unknown
    clash = new_incident_file(tmp_path, NEW.replace("INC-9100", "INC-9001"))
    refused = cli("add", str(clash))
    assert refused.code == 2 and "INC-9001 is also written at" in refused.err, refused.err
    assert f"{broken}:1, which does not load" in refused.err
    assert not (folder / "INC-9001.yaml").exists()
    assert broken.read_bytes() == before["widgets.yaml"]
    assert cli("check").code == 2


# --- item 5: editor files in a memory directory -----------------------------------------------

def test_editor_files_and_directories_named_yaml_are_not_the_memory(
        tmp_path: Path, warm_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    shutil.copyfile(BUNDLED_INCIDENTS, folder / "team.yaml")
    (folder / ".#INC-2041.yaml").symlink_to("alice@laptop.4242:1700000000")  # an Emacs lock
    (folder / "._team.yaml").write_bytes(b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        ")
    (folder / "archive.yaml").mkdir()
    (folder / "archive.yaml" / "old.yaml").write_text("- not: an incident\n", encoding="utf-8")
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(folder))

    check = cli("check")
    assert check.code == 0, check.err
    assert f"{folder}: ok — 58 incidents" in check.out
    briefed = cli("brief", CHECKOUT, "--json")
    assert briefed.code == 0 and briefed.err == "", briefed.err
    assert "INC-2041" in {r["incident_id"] for r in briefed.json()["recalled"]}
    added = cli("add", str(new_incident_file(tmp_path)))
    assert added.code == 0, added.err
    assert f"saved INC-9100 to {folder / 'INC-9100.yaml'}" in added.out
    assert (folder / "._team.yaml").read_bytes().startswith(b"\x00\x05\x16\x07")
    assert (folder / ".#INC-2041.yaml").is_symlink()


# --- item 14: related ids, a start in 2099, every problem in one pass ---------------------------

def test_a_dangling_related_id_is_a_warning_in_check_and_blocks_nothing(
        memory_file: Path, warm_data: Path, tmp_path: Path) -> None:
    start = append(memory_file, NEW.replace("  actions:", "  related: [INC-404]\n  actions:"))
    check = cli("check")
    assert check.code == 0, check.err
    assert (f"{memory_file}:{start + 4}: warning: INC-9100 related[0]: 'INC-404' is not an "
            "incident in memory") in check.out
    assert "59 incidents" in check.out and "1 related id not in memory (warning)" in check.out
    briefed = cli("brief", CHECKOUT, "--json")
    assert briefed.code == 0 and briefed.err == "", briefed.err


def test_a_start_in_2099_is_warned_by_check_and_add(memory_file: Path, warm_data: Path,
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    start = append(memory_file, NEW.replace("  service:", "  started_at: 2099-03-14T02:05:00Z\n"
                                                          "  service:"))
    check = cli("check")
    assert check.code == 0, check.err
    assert (f"{memory_file}:{start + 2}: warning: INC-9100 started_at 2099-03-14T02:05:00Z "
            "is 26,399 days after now (2026-12-02)") in check.out, check.out
    assert "1 start in the future (warning)" in check.out

    later = new_incident_file(tmp_path, NEW.replace("INC-9100", "INC-9101").replace(
        "  service:", "  started_at: 2027-01-01T00:00:00Z\n  service:"))
    added = cli("add", str(later))
    assert added.code == 0, added.err
    assert "triage: warning: INC-9101 started_at 2027-01-01T00:00:00Z is 29 days after now" \
        in added.err

    monkeypatch.setenv("TRIAGE_NOW", "2099-03-14T00:00:00Z")  # within a day of it: fine
    again = cli("check")
    assert again.code == 0 and "warning" not in again.out, again.out


def test_check_reports_every_problem_of_a_file_in_one_pass(memory_file: Path,
                                                           warm_data: Path) -> None:
    start = append(memory_file, """\
- id: INC-9001
  service: [oops
- id: INC-9002
  service: widget-api
- id: INC-9002
  service: widget-api
  symptoms: stuck again
  actions:
    - {id: A1, action: Restarted it, outcome: MAYBE, explanation: it came back}
""")
    check = cli("check")
    assert check.code == 2, check.err
    assert "triage: the incidents file has 4 problems:" in check.err, check.err
    for line, words in [(start + 1, "not valid YAML"), (start + 2, "INC-9002 symptoms"),
                        (start + 4, "duplicate incident id 'INC-9002'"),
                        (start + 8, "INC-9002 actions[0].outcome")]:
        assert any(f"{memory_file}:{line}: " in row and words in row
                   for row in check.err.splitlines()), (line, words, check.err)
