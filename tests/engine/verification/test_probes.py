"""Declared probes (issue 10): the probes file, typed parameters, and real runs.

Every run here is a real subprocess: a tiny Python script written into tmp_path, started with
``sys.executable`` as argv[0]. Nothing runs through a shell, and no test depends on wall-clock
speed beyond generous bounds.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import ValidationError

from console.engine.verification import probes as probes_module
from console.engine.verification.method import Category as VerifyCategory
from console.engine.verification.probe_run import (
    EMPTY_NOT_PROOF,
    MAX_CONCURRENT,
    OUTPUT_CAP,
    ProbeNotConfirmed,
    ProbeRun,
    run_all,
    run_probe,
)
from console.engine.verification.probes import (
    DeclaredProbe,
    ProbeFileError,
    ProbeParamError,
    ProbeRefused,
    check_params,
    load_probes,
    pick_from_model,
    probes_path,
    question_text,
    render_argv,
)
from store.errors import TriageError

# --- helpers -----------------------------------------------------------------------------------


def declared(argv: list[str], params: dict[str, Any] | None = None, **fields: Any
             ) -> DeclaredProbe:
    """A valid probe: ``argv`` and ``params`` as given; a question using every parameter."""
    params = params or {}
    question = "Is the check passing" + "".join(f" for {{{name}}}" for name in params) + "?"
    data: dict[str, Any] = {"name": "check", "description": "a check", "question": question,
                            "argv": argv, "params": params, "confirmed_if": r"\S"}
    data.update(fields)
    return DeclaredProbe.model_validate(data)


def script(tmp_path: Path, body: str, name: str = "probe.py") -> list[str]:
    """argv prefix [python, script] for a script holding ``body``."""
    path = tmp_path / name
    path.write_text("import json, os, subprocess, sys, time\n" + body, encoding="utf-8")
    return [sys.executable, str(path)]


def printing(tmp_path: Path, **fields: Any) -> DeclaredProbe:
    """A probe whose program prints its text parameter ``out`` as given."""
    argv = script(tmp_path, "sys.stdout.write(sys.argv[1])\n", "printer.py")
    return declared([*argv, "{out}"], {"out": {"type": "text"}}, **fields)


def run_printing(tmp_path: Path, out: str, **fields: Any) -> ProbeRun:
    probe = printing(tmp_path, **fields)
    return run_probe(probe, render_argv(probe, {"out": out}), confirmed=True)


def gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (no such process, or a zombie nobody reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def eventually_gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while not gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


# --- the probes file ---------------------------------------------------------------------------

GOOD = """\
# probes the on-call team may run during verification
- name: pg-conns
  description: Share of max_connections in use on the service's database
  question: Is {service} below 80% of max_connections?
  argv: [/usr/local/bin/pg-share, "--service={service}", --window, "{window}"]
  params:
    service: {type: service, description: the service whose database is checked}
    window: {type: duration, default: 5m}
  timeout: 5
  confirmed_if: '^share=[0-7]?[0-9]%$'
  refuted_if: '^share=(8[0-9]|9[0-9]|100)%$'
- name: no-open-incident
  description: Open incidents on the service in the tracker
  question: Is there no other open incident on {service}?
  category: suspicious_direction
  argv: [/usr/local/bin/tracker, open, "{service}"]
  params:
    service: {type: service}
  empty: confirmed
  empty_means: the tracker lists every open incident; none listed means none is open
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "probes.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_file_loads_every_probe_as_declared(tmp_path: Path) -> None:
    first, second = load_probes(write(tmp_path, GOOD))
    assert first.name == "pg-conns" and first.timeout == 5 and first.category == "tool_gap"
    assert first.argv[1] == "--service={service}"
    assert first.params["service"].type == "service" and first.params["window"].default == "5m"
    assert first.empty == "unknown"
    assert second.category == "suspicious_direction" and second.empty == "confirmed"
    assert second.confirmed_if is None


def test_the_probes_file_sits_beside_the_memory(tmp_path: Path) -> None:
    assert probes_path(tmp_path / "incidents.yaml") == tmp_path / "probes.yaml"
    # a memory directory: beside it, never inside it (it would be read as incidents)
    assert probes_path(tmp_path / "memory") == tmp_path / "probes.yaml"


@pytest.mark.parametrize("text", [None, "# nothing declared yet\n", "[]\n"])
def test_no_file_or_an_empty_one_declares_no_probes(tmp_path: Path, text: str | None) -> None:
    path = tmp_path / "probes.yaml" if text is None else write(tmp_path, text)
    assert load_probes(path) == []


def swap(old: str, new: str) -> str:
    first = GOOD.split("- name: no-open-incident")[0]
    assert old in first, old
    return first.replace(old, new)


# (name, file text, line, where, what the message says)
BAD_FILES = [
    ("bad yaml", swap("  timeout: 5\n", "  timeout: [5\n"), 10, "", "not valid YAML"),
    ("unknown field", swap("  timeout: 5", "  timout: 5"), 9, "probe pg-conns timout",
     "unknown field"),
    ("unknown param field", swap("type: duration,", "type: duration, dflt: 1m,"), 8,
     "probe pg-conns params.window.dflt", "unknown field"),
    ("undeclared param in argv", swap('"--service={service}"', '"--service={servce}"'), 5,
     "probe pg-conns argv", "argv[1] uses {servce}, which is not declared in params"),
    ("undeclared param in question", swap("Is {service} below", "Is {svc} below"), 4,
     "probe pg-conns question", "the question uses {svc}, which is not declared"),
    ("templated program", swap("[/usr/local/bin/pg-share,", '["{service}",'), 5,
     "probe pg-conns argv", "argv[0] must be the program itself"),
    ("attribute access", swap('"--service={service}"', '"{service.__class__}"'), 5,
     "probe pg-conns argv", "{service.__class__} is not a parameter field"),
    ("index access", swap('"--service={service}"', '"{service[0]}"'), 5,
     "probe pg-conns argv", "{service[0]} is not a parameter field"),
    ("lone brace", swap('"--service={service}"', '"--service={service}}"'), 5,
     "probe pg-conns argv", "a lone '}'"),
    ("bad regex", swap("'^share=[0-7]?[0-9]%$'", "'^share=([0-7'"), 10,
     "probe pg-conns confirmed_if", "not a valid regular expression"),
    ("empty without a reason", swap("  timeout: 5\n", "  timeout: 5\n  empty: refuted\n"), 2,
     "probe pg-conns empty_means", "empty is 'refuted', so say why an empty result proves it"),
    ("never answers", swap("  confirmed_if: '^share=[0-7]?[0-9]%$'\n", "").replace(
        "  refuted_if: '^share=(8[0-9]|9[0-9]|100)%$'\n", ""), 2,
     "probe pg-conns confirmed_if", "the probe can never answer"),
    ("unused param", swap("    window: {type: duration, default: 5m}\n",
                          "    window: {type: duration, default: 5m}\n    spare: {type: word}\n"),
     7, "probe pg-conns params", "'spare' is declared but used neither"),
    ("duplicate names", GOOD.replace("no-open-incident", "pg-conns"), 12, "probe pg-conns",
     "duplicate probe name (first at line 2)"),
    ("duplicate key", swap("  timeout: 5\n", "  timeout: 5\n  timeout: 6\n"), 10,
     "probe pg-conns timeout", "key given twice"),
    ("timeout too long", swap("  timeout: 5", "  timeout: 500"), 9, "probe pg-conns timeout",
     "less than or equal to 120"),
    ("timeout zero", swap("  timeout: 5", "  timeout: 0"), 9, "probe pg-conns timeout",
     "greater than 0"),
    ("timeout a boolean", swap("  timeout: 5", "  timeout: yes"), 9, "probe pg-conns timeout",
     "must be a number of seconds"),
    ("unknown param type", swap("type: duration", "type: float"), 8,
     "probe pg-conns params.window.type", "Input should be"),
    ("default of the wrong type", swap("default: 5m", "default: soon"), 8,
     "probe pg-conns params.window", "'soon' is not a duration"),
    ("bad probe name", swap("name: pg-conns", "name: PG conns"), 2, "probe PG conns name",
     "String should match pattern"),
    ("not a question", swap("max_connections?", "max_connections."), 4,
     "probe pg-conns question", "must be a yes/no question"),
    ("bundled question", swap("Is {service} below 80% of max_connections?",
                              "Is {service} below 80% and did the pool shrink?"), 4,
     "probe pg-conns question", "asks more than one thing"),
    ("missing field", swap("  description: Share of max_connections in use on the service's "
                           "database\n", ""), 2, "probe pg-conns description",
     "required field is missing"),
    ("top level mapping", "probes:\n" + "\n".join("  " + line for line in
                                                  GOOD.splitlines()[1:]), 1, "",
     "top level must be a list of probes"),
    ("alias", swap("    window: {type: duration, default: 5m}\n",
                   "    window: &w {type: duration, default: 5m}\n    other: *w\n"), 8, "",
     "YAML aliases"),
    ("probe not a mapping", "- just a string\n", 1, "probe #1", "each probe must be a mapping"),
]


@pytest.mark.parametrize(("text", "line", "where", "says"),
                         [case[1:] for case in BAD_FILES], ids=[case[0] for case in BAD_FILES])
def test_a_bad_file_names_the_file_line_and_probe(tmp_path: Path, text: str, line: int,
                                                  where: str, says: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ProbeFileError) as caught:
        load_probes(path)
    expected = f"{path}:{line}: {where}: " if where else f"{path}:{line}: "
    matching = [ln for ln in caught.value.lines if ln.startswith(expected)]
    assert matching, f"no line starts with {expected!r}: {caught.value.lines}"
    assert any(says in ln for ln in matching), caught.value.lines
    rendered = caught.value.render()
    assert rendered.startswith("the probes file has") and "Traceback" not in rendered
    assert isinstance(caught.value, TriageError) and caught.value.hint


def test_a_file_that_is_not_utf8_is_an_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "probes.yaml"
    path.write_bytes(b"- name: a\n  description: caf\xe9\n")
    with pytest.raises(ProbeFileError) as caught:
        load_probes(path)
    assert caught.value.lines[0].startswith(f"{path}:2: not UTF-8")


def test_the_categories_are_those_of_verification() -> None:
    assert get_args(probes_module.Category) == get_args(VerifyCategory)


# --- typed parameters --------------------------------------------------------------------------

TYPES = {name: {"type": name} for name in ("service", "incident", "word", "int", "duration",
                                            "text")}

# (type, value given, the typed string — or None when it must be refused)
PARAM_CASES: list[tuple[str, object, str | None]] = [
    ("service", "payments-api", "payments-api"),
    ("service", "db.eu-west-1:5432/main", "db.eu-west-1:5432/main"),
    ("service", "a b", None),
    ("service", "x;y", None),
    ("service", "$(reboot)", None),
    ("service", "-rf", None),
    ("service", "", None),
    ("service", "a" * 128, "a" * 128),
    ("service", "a" * 129, None),
    ("service", "api\n", None),
    ("service", 5, None),
    ("incident", "INC-2024.07_a", "INC-2024.07_a"),
    ("incident", "../etc", None),
    ("incident", "a/b", None),
    ("word", "eu-west-1", "eu-west-1"),
    ("word", "two words", None),
    ("int", 42, "42"),
    ("int", "-3", "-3"),
    ("int", "007", "7"),
    ("int", "12a", None),
    ("int", 1.5, None),
    ("int", True, None),
    ("int", "1" * 13, None),
    ("duration", "5m", "5m"),
    ("duration", "30s", "30s"),
    ("duration", "7d", "7d"),
    ("duration", "5", None),
    ("duration", "5w", None),
    ("duration", "m", None),
    ("text", "; rm -rf /", "; rm -rf /"),
    ("text", "$(reboot)", "$(reboot)"),
    ("text", "[bold]x[/] `id` && |", "[bold]x[/] `id` && |"),
    ("text", "", ""),
    ("text", "x" * 500, "x" * 500),
    ("text", "x" * 501, None),
    ("text", "a\nb", None),
    ("text", "a\tb", None),
    ("text", "a\x1b[2Jb", None),
    ("text", "a\x00b", None),
    ("text", "a\u202eb", None),
    ("text", ["a"], None),
]


@pytest.mark.parametrize(("kind", "value", "typed"), PARAM_CASES)
def test_each_value_is_checked_against_its_type(kind: str, value: object,
                                                typed: str | None) -> None:
    probe = declared(["/bin/true", "x={v}"], {"v": TYPES[kind]})
    if typed is None:
        with pytest.raises(ProbeParamError, match=r"^v: .* is not "):
            check_params(probe, {"v": value})
    else:
        assert check_params(probe, {"v": value}) == {"v": typed}


def test_unknown_and_missing_parameters_are_refused_and_defaults_filled() -> None:
    probe = declared(["/bin/true", "{service}", "{window}"],
                     {"service": {"type": "service"},
                      "window": {"type": "duration", "default": "5m"}})
    assert check_params(probe, {"service": "api"}) == {"service": "api", "window": "5m"}
    assert check_params(probe, {"service": "api", "window": "1h"})["window"] == "1h"
    with pytest.raises(ProbeParamError, match="needs service"):
        check_params(probe, {})
    with pytest.raises(ProbeParamError, match="has no parameter 'command'"):
        check_params(probe, {"service": "api", "command": "rm -rf /"})


def test_a_value_stays_inside_its_argv_element_and_is_never_expanded_again() -> None:
    probe = declared(["/bin/prog", "--q={q}", "{q}", "lit{{eral}}"], {"q": {"type": "text"}})
    value = "a b {q} {0} {q.__class__} ; $(x)"
    assert render_argv(probe, {"q": value}) == ["/bin/prog", f"--q={value}", value, "lit{eral}"]


def test_a_template_cannot_reach_attributes_or_indexes() -> None:
    for field in ("{service.__class__}", "{service[0]}", "{service!r}", "{service:>10}", "{}"):
        with pytest.raises(ValidationError, match="is not a parameter field"):
            declared(["/bin/prog", field], {"service": {"type": "service"}})


def test_a_value_that_would_be_an_option_needs_a_double_dash_before_it() -> None:
    grep = declared(["/bin/grep", "{pattern}", "/var/log/app.log"], {"pattern": {"type": "text"}})
    with pytest.raises(ProbeParamError, match="would start argv\\[1\\] with '-'"):
        render_argv(grep, {"pattern": "--file=/etc/shadow"})
    assert render_argv(grep, {"pattern": "timeout"})[1] == "timeout"
    fenced = declared(["/bin/grep", "--", "{pattern}"], {"pattern": {"type": "text"}})
    assert render_argv(fenced, {"pattern": "-v"}) == ["/bin/grep", "--", "-v"]
    inside = declared(["/bin/grep", "--regexp={pattern}"], {"pattern": {"type": "text"}})
    assert render_argv(inside, {"pattern": "-v"}) == ["/bin/grep", "--regexp=-v"]


def test_the_question_is_filled_with_the_typed_values() -> None:
    probe = declared(["/bin/true", "{service}"], {"service": {"type": "service"}},
                     question="Is {service} below 80% of max_connections?")
    assert question_text(probe, {"service": "orders-db"}) == (
        "Is orders-db below 80% of max_connections?")
    with pytest.raises(ProbeParamError):
        question_text(probe, {"service": "orders db"})


# --- running: confirmation, no shell, argv that is not a rendering ----------------------------

def test_no_shell_metacharacter_reaches_a_shell(tmp_path: Path) -> None:
    pwned = tmp_path / "PWNED"
    argv = script(tmp_path, "print(json.dumps(sys.argv[1:]))\n")
    probe = declared([*argv, "{q}", "--q={q}"], {"q": {"type": "text"}})
    for value in (f"; touch {pwned}", f"$(touch {pwned})", f"`touch {pwned}`",
                  f"x && touch {pwned} | cat > {pwned}", f"x' \"; touch {pwned}; '"):
        run = run_probe(probe, render_argv(probe, {"q": value}), confirmed=True)
        assert run.result == "confirmed", run.missing
        assert json.loads(run.output) == [value, f"--q={value}"]
        assert not pwned.exists()


def test_a_probe_never_runs_unconfirmed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    argv = script(tmp_path, f"open({str(marker)!r}, 'w').close()\nprint('ok')\n")
    probe = declared(argv)
    with pytest.raises(ProbeNotConfirmed):
        run_probe(probe, argv, confirmed=False)
    with pytest.raises(ProbeNotConfirmed):
        run_all([(probe, argv)] * 3, confirmed=False)
    assert not marker.exists()
    assert run_probe(probe, argv, confirmed=True).result == "confirmed"
    assert marker.exists()  # the same probe, confirmed, does run: the marker works


def test_an_argv_that_is_not_a_rendering_of_the_probe_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    argv = script(tmp_path, f"open({str(marker)!r}, 'w').close()\n")
    probe = declared([*argv, "--service={service}"], {"service": {"type": "service"}})
    text_probe = declared([*argv, "{q}"], {"q": {"type": "text"}})
    int_probe = declared([*argv, "--n={n}"], {"n": {"type": "int"}})
    assert render_argv(probe, {"service": "api"}) == [*argv, "--service=api"]
    for job_probe, forged in [
        (probe, ["/bin/sh", "-c", "touch x"]),
        (probe, [*argv, "--service=api", "extra"]),
        (probe, [*argv, "--service=a;b"]),  # the value breaks its type
        (probe, [*argv, "--other=api"]),
        (probe, [sys.executable, "-c", "open('x','w')"]),
        (text_probe, [*argv, "--exec=boom"]),  # would be an option
        (probe, " ".join([*argv, "--service=api"])),
        (int_probe, [*argv, "--n=007"]),  # matches the type's shape, but no rendering gives it
    ]:
        with pytest.raises(ProbeRefused, match="refused"):
            run_probe(job_probe, forged, confirmed=True)
    assert not marker.exists()


# --- running: failures are unknown with their reason -------------------------------------------

@needs_proc
def test_a_timed_out_probe_is_unknown_and_its_whole_process_group_is_killed(
        tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    argv = script(tmp_path, f"""\
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
with open({str(pids)!r}, "w") as f:
    f.write(f"{{os.getpid()}} {{child.pid}}")
print("started", flush=True)
time.sleep(60)
""")
    probe = declared(argv, timeout=1.0)
    run = run_probe(probe, argv, confirmed=True)
    assert run.result == "unknown"
    assert run.missing == "timed out after 1s"
    assert run.seconds < 30
    leader, grandchild = (int(p) for p in pids.read_text().split())
    assert not Path(f"/proc/{leader}").exists()  # killed and reaped
    assert eventually_gone(grandchild)


@needs_proc
def test_what_a_probe_leaves_behind_is_killed_with_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    argv = script(tmp_path, f"""\
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
open({str(pid_file)!r}, "w").write(str(child.pid))
print("ok")
""")
    run = run_probe(declared(argv), argv, confirmed=True)
    assert run.result == "confirmed" and run.exit_code == 0
    assert eventually_gone(int(pid_file.read_text()))


def test_a_failing_probe_is_unknown_with_the_first_line_of_its_errors(tmp_path: Path) -> None:
    argv = script(tmp_path, """\
sys.stderr.write("\\n\\x1b[31mboom: password=hunter2\\x1b[0m\\nsecond line\\n")
print("share=10%")
sys.exit(3)
""")
    run = run_probe(declared(argv), argv, confirmed=True)
    assert run.result == "unknown" and run.exit_code == 3
    assert run.missing == "exit 3: [31mboom: password=[REDACTED:secret-value]"
    assert "hunter2" not in repr(run)
    assert "secret-value" in run.redacted


def test_a_silent_failure_says_so(tmp_path: Path) -> None:
    argv = script(tmp_path, "sys.exit(2)\n")
    run = run_probe(declared(argv), argv, confirmed=True)
    assert (run.result, run.missing) == ("unknown", "exit 2: (no error output)")


def test_a_missing_or_unrunnable_program_is_unknown(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-probe")
    run = run_probe(declared([missing]), [missing], confirmed=True)
    assert (run.result, run.missing, run.exit_code) == (
        "unknown", f"program not found: {missing}", None)
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\necho yes\n")
    run = run_probe(declared([str(plain)]), [str(plain)], confirmed=True)
    assert run.result == "unknown" and run.missing.startswith("program not runnable")


# --- running: what the output means ------------------------------------------------------------

def test_empty_output_is_unknown_unless_the_probe_says_what_empty_means(tmp_path: Path) -> None:
    run = run_printing(tmp_path, "  ")
    assert (run.result, run.missing) == ("unknown", EMPTY_NOT_PROOF)
    run = run_printing(tmp_path, " ", empty="refuted",
                       empty_means="the pool lists every live connection")
    assert (run.result, run.missing) == ("refuted", "")
    assert run.basis == "empty output: the pool lists every live connection"
    run = run_printing(tmp_path, "", empty="confirmed", empty_means="no row is no error")
    assert run.result == "confirmed"


# (output, confirmed_if, refuted_if, result, missing)
RULES = [
    ("share=42%\n", r"^share=[0-7]?\d%$", r"^share=(8\d|9\d|100)%$", "confirmed", ""),
    ("share=93%\n", r"^share=[0-7]?\d%$", r"^share=(8\d|9\d|100)%$", "refuted", ""),
    ("header\nshare=42%\n", r"^share=[0-7]?\d%$", None, "confirmed", ""),
    ("share=n/a\n", r"^share=[0-7]?\d%$", r"^share=(8\d|9\d|100)%$", "unknown",
     "output matched neither rule"),
    ("share=93%\n", r"^share=[0-7]?\d%$", None, "unknown", "output matched neither rule"),
    ("ok\nerror\n", r"^ok$", r"^error$", "unknown", "output matched both rules"),
]


@pytest.mark.parametrize(("out", "confirmed_if", "refuted_if", "result", "missing"), RULES)
def test_the_rules_decide_on_the_output(tmp_path: Path, out: str, confirmed_if: str | None,
                                        refuted_if: str | None, result: str,
                                        missing: str) -> None:
    argv = script(tmp_path, f"sys.stdout.write({out!r})\n")
    run = run_probe(declared(argv, confirmed_if=confirmed_if, refuted_if=refuted_if), argv,
                    confirmed=True)
    assert (run.result, run.missing) == (result, missing)
    assert run.output == out


def test_secrets_in_the_output_are_redacted_everywhere_in_the_run(tmp_path: Path) -> None:
    argv = script(tmp_path, """\
print("db password=hunter2")
print("key AKIAIOSFODNN7EXAMPLE in use")
""")
    run = run_probe(declared(argv, confirmed_if="hunter2|AKIAIOSFODNN7EXAMPLE",
                             refuted_if=r"\[REDACTED:aws-access-key\]"), argv, confirmed=True)
    assert "hunter2" not in repr(run) and "AKIAIOSFODNN7EXAMPLE" not in repr(run)
    assert run.output == ("db password=[REDACTED:secret-value]\n"
                          "key [REDACTED:aws-access-key] in use\n")
    assert set(run.redacted) == {"secret-value", "aws-access-key"}
    # the rules read the redacted text only: the secret cannot confirm, its marker refutes
    assert run.result == "refuted"
    expected = hashlib.sha256(("\x1f".join(argv) + "\x1e" + run.output).encode()).hexdigest()
    assert run.evidence_sha256 == expected


def test_a_secret_in_a_parameter_is_redacted_in_the_recorded_argv(tmp_path: Path) -> None:
    probe = printing(tmp_path)
    argv = render_argv(probe, {"out": "password=hunter2"})
    run = run_probe(probe, argv, confirmed=True)
    assert "hunter2" not in repr(run)
    assert run.argv[-1] == "password=[REDACTED:secret-value]" and run.argv[:-1] == tuple(argv[:-1])
    expected = hashlib.sha256(("\x1f".join(run.argv) + "\x1e" + run.output).encode()).hexdigest()
    assert run.evidence_sha256 == expected


def test_escapes_are_removed_and_markup_is_kept_as_plain_text(tmp_path: Path) -> None:
    argv = script(tmp_path, r"""
sys.stdout.write("\x1b]0;pwned\x07[bold red]x[/]\x1b[2J\x9b1m [link=http://e.vil]y[/link]\n")
""")
    run = run_probe(declared(argv), argv, confirmed=True)
    assert not any(c in run.output for c in "\x1b\x07\x9b")
    assert run.output == "]0;pwned[bold red]x[/][2J1m [link=http://e.vil]y[/link]\n"


def test_bytes_that_are_not_utf8_are_replaced(tmp_path: Path) -> None:
    argv = script(tmp_path, r"sys.stdout.buffer.write(b'ok \xff\xfe')" + "\n")
    run = run_probe(declared(argv), argv, confirmed=True)
    assert run.output == "ok \ufffd\ufffd" and run.result == "confirmed"


def test_output_over_the_cap_is_cut_and_proves_nothing(tmp_path: Path) -> None:
    argv = script(tmp_path, f"sys.stdout.write('a' * {OUTPUT_CAP * 3})\n")
    run = run_probe(declared(argv), argv, confirmed=True)
    assert run.truncated and len(run.output) == OUTPUT_CAP
    assert run.result == "unknown" and "was cut" in run.missing
    small = script(tmp_path, f"sys.stdout.write('a' * {OUTPUT_CAP})\n", "small.py")
    run = run_probe(declared(small), small, confirmed=True)
    assert not run.truncated and run.result == "confirmed"


def test_a_runaway_probe_is_stopped_long_before_its_timeout(tmp_path: Path) -> None:
    argv = script(tmp_path, """\
chunk = b"x" * 65536
while True:
    sys.stdout.buffer.write(chunk)
""")
    run = run_probe(declared(argv, timeout=60), argv, confirmed=True)
    assert run.result == "unknown" and run.missing == "wrote more than 1 MiB — stopped"
    assert run.truncated and len(run.output) == OUTPUT_CAP
    assert run.seconds < 50


def test_the_same_output_gives_the_same_evidence_hash(tmp_path: Path) -> None:
    first, second = run_printing(tmp_path, "share=1%"), run_printing(tmp_path, "share=1%")
    assert first.evidence_sha256 == second.evidence_sha256
    assert run_printing(tmp_path, "share=2%").evidence_sha256 != first.evidence_sha256


# --- run_all -----------------------------------------------------------------------------------

def test_run_all_runs_at_most_six_at_once_and_keeps_job_order(tmp_path: Path) -> None:
    log = tmp_path / "events"
    # Each probe logs its start, then waits until 7 have started (or 1.5 s): with the cap
    # the first six wait it out; without it, seven would run at once.
    argv = script(tmp_path, f"""\
log = {str(log)!r}
fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
os.write(fd, b"start\\n")
def started():
    with open(log) as f:
        return sum(1 for line in f if line == "start\\n")
deadline = time.monotonic() + 1.5
while started() < 7 and time.monotonic() < deadline:
    time.sleep(0.01)
os.write(fd, b"end\\n")
print(sys.argv[1])
""")
    probe = declared([*argv, "{n}"], {"n": {"type": "int"}})
    jobs = [(probe, render_argv(probe, {"n": n})) for n in range(10)]
    done: list[tuple[int, str, int]] = []
    runs = run_all(jobs, confirmed=True,
                   on_done=lambda i, run: done.append((i, run.output, threading.get_ident())))
    assert [run.output for run in runs] == [f"{n}\n" for n in range(10)]
    assert all(run.result == "confirmed" for run in runs)
    assert sorted(i for i, _, _ in done) == list(range(10))
    assert all(out == f"{i}\n" for i, out, _ in done)
    assert {ident for _, _, ident in done} == {threading.get_ident()}
    running = overlap = 0
    for event in log.read_text().split():
        running += 1 if event == "start" else -1
        overlap = max(overlap, running)
    assert 2 <= overlap <= MAX_CONCURRENT


def test_a_broken_job_is_an_unknown_run_and_the_others_still_run(tmp_path: Path) -> None:
    good = printing(tmp_path)
    jobs = [(good, render_argv(good, {"out": "one"})),
            (good, ["/bin/sh", "-c", "echo two"]),
            (good, render_argv(good, {"out": "three"}))]
    runs = run_all(jobs, confirmed=True, max_concurrent=2)
    assert [run.result for run in runs] == ["confirmed", "unknown", "confirmed"]
    assert runs[1].missing.startswith("probe failed: refused:")
    assert runs[1].argv == ("/bin/sh", "-c", "echo two") and runs[1].exit_code is None
    assert run_all([], confirmed=True) == []


# --- a model's pick ----------------------------------------------------------------------------

DECLARED = [declared(["/usr/local/bin/pg-share", "--service={service}"],
                     {"service": {"type": "service"}}, name="pg-conns"),
            declared(["/usr/local/bin/grep-logs", "--", "{pattern}"],
                     {"pattern": {"type": "text"}}, name="grep-logs")]

REFUSED_PICKS: list[tuple[object, str]] = [
    ({"probe": "pg-conns", "params": {"service": "api"}, "argv": ["rm", "-rf", "/"]},
     "never supplies a command"),
    ({"command": "rm -rf /"}, "never supplies a command"),
    ({"probe": "pg-conns", "cmd": "id"}, "'cmd'"),
    ({"probe": "pg-conns", "shell": True, "params": {"service": "api"}}, "'shell'"),
    ({"probe": "pg-conns", "script": "curl x | sh"}, "'script'"),
    ({"probe": "rm-everything", "params": {}}, "'rm-everything' is not a declared probe"),
    ({"probe": None}, "is not a declared probe"),
    ({"probe": "pg-conns", "params": {"service": "api; reboot"}}, "is not a service name"),
    ({"probe": "pg-conns", "params": {}}, "needs service"),
    ({"probe": "pg-conns", "params": {"service": "api", "argv": "x"}}, "no parameter 'argv'"),
    ({"probe": "pg-conns", "params": "service=api"}, "must be an object"),
    ({"probe": "grep-logs", "params": {"pattern": "a\x1b]0;x\x07"}}, "is not printable text"),
    ("run pg-conns", "a pick must be an object"),
    (["pg-conns"], "a pick must be an object"),
]


@pytest.mark.parametrize(("pick", "says"), REFUSED_PICKS)
def test_a_model_pick_that_is_not_a_declared_probe_is_refused(pick: object, says: str) -> None:
    with pytest.raises(ProbeRefused, match="^refused: ") as caught:
        pick_from_model(pick, DECLARED)
    assert says in caught.value.reason


def test_a_valid_model_pick_gives_the_probe_and_typed_values() -> None:
    probe, values = pick_from_model({"probe": "pg-conns", "params": {"service": "orders-db"}},
                                    DECLARED)
    assert probe is DECLARED[0] and values == {"service": "orders-db"}
    assert render_argv(probe, values) == ["/usr/local/bin/pg-share", "--service=orders-db"]
    probe, values = pick_from_model({"probe": "grep-logs",
                                     "params": {"pattern": "$(reboot); -rf"}}, DECLARED)
    assert render_argv(probe, values)[2] == "$(reboot); -rf"
