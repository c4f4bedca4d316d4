"""The `triage` CLI: the headless subcommands, each returning an exit code (see __main__)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.engine.briefing.alert import AlertError, decode_alert, parse_alert, read_alert_file
from console.engine.config import Settings
from console.engine.engine import SaveResult, TriageEngine, read_memory
from console.engine.render.text import briefing_text, open_question_lines
from console.exit_codes import EXIT_INTERNAL, EXIT_OK
from store.errors import TriageError
from store.loader import IncidentFileError

if TYPE_CHECKING:
    from console.engine.pipeline import Routed
    from console.engine.practice.evaluate import EvalReport


def report_error(error: TriageError) -> int:
    """The one way the CLI shows an error: title, lines, hint on stderr; its exit code."""
    print(f"triage: {error.render()}", file=sys.stderr)
    return error.exit_code


def _fail(message: str) -> int:
    return report_error(TriageError(message))


def _read_raw_alert(args: argparse.Namespace) -> str:
    sources = [s for s in (args.text, args.alert_file) if s is not None]
    if len(sources) != 1:
        raise AlertError("give the alert as TEXT, --alert-file F, or - for stdin (exactly one)")
    if args.alert_file is not None:
        return read_alert_file(Path(args.alert_file))
    if args.text == "-":
        return decode_alert(sys.stdin.buffer.read(), "stdin")
    return str(args.text)


def _verify_mode(args: argparse.Namespace) -> str | None:
    """``auto``/``always`` from ``--verify[=always]``, None without it. ``--verify TEXT``
    (argparse took the alert for the option's value) gives the text back to the alert."""
    mode = getattr(args, "verify", None)
    if mode is None or mode in ("auto", "always"):
        return mode
    if args.text is None and args.alert_file is None:
        args.text = mode
        return "auto"
    raise AlertError(f"--verify={mode!r}: expected --verify or --verify=always")


def brief(settings: Settings, args: argparse.Namespace) -> int:
    """Brief one alert; for a multi-alert payload the strongest group, or ``--group N``;
    with ``--verify``, audit it (console/engine/verification/passes.py)."""
    group = getattr(args, "group", None)
    try:
        mode = _verify_mode(args)
        if mode is None and (getattr(args, "answer", None) or getattr(args, "allow_probe", None)):
            raise ValueError("--answer and --allow-probe answer a verification: add --verify")
        answers: dict[str, str] = {}
        if mode is not None:
            from console.engine.verification.passes import parse_answers

            answers = parse_answers(getattr(args, "answer", None) or [])
        alert = parse_alert(_read_raw_alert(args))
        if group is not None:
            alert = alert.for_group(group - 1)  # numbered from 1, as the group list shows
    except AlertError as exc:
        return report_error(exc)
    except ValueError as exc:
        return _fail(str(exc))
    engine = TriageEngine(settings)
    try:
        routed = engine.brief_routed(alert)
    except IncidentFileError as exc:
        return report_error(exc)
    briefing, code = routed.briefing, EXIT_OK
    if mode is not None:
        verification, code = _verification(engine, routed, mode, answers,
                                           set(getattr(args, "allow_probe", None) or []))
        briefing = briefing.model_copy(update={"verification": verification})
    output = "json" if args.json else (getattr(args, "format", None) or "text")
    if output == "json":
        print(briefing.model_dump_json(indent=2))
    elif output == "md":
        from console.engine.render.markdown import briefing_markdown

        print(briefing_markdown(briefing), end="")
    else:
        print(briefing_text(briefing))
    return code


def _verification(engine: TriageEngine, routed: Routed, mode: str, answers: dict[str, str],
                  allowed: set[str]) -> tuple[dict[str, Any], int]:
    """The ``verification`` of a briefing, and the exit code; what is still open, unknown
    ids and probes that do not exist go to stderr."""
    from console.engine.verification.passes import (
        alert_service,
        failed,
        needed,
        not_needed,
        run_pass,
    )
    from console.engine.verification.probes import ProbeFileError, load_probes, probes_path

    briefing = routed.briefing
    if mode != "always" and not needed(briefing):
        return not_needed(briefing), EXIT_OK
    settings = engine.settings
    try:
        probes = load_probes(probes_path(settings.incidents_path))
    except ProbeFileError as exc:
        report_error(exc)
        return failed(exc.title), exc.exit_code
    declared = {p.name for p in probes}
    for name in sorted(allowed - declared):
        print(f"triage: --allow-probe {name}: no probe of that name in "
              f"{probes_path(settings.incidents_path)}", file=sys.stderr)
    result, _ = run_pass(briefing, routed.recall,
                         service=alert_service(routed.alert, engine.known_services()),
                         data_dir=settings.data_dir,
                         rerecall=partial(engine.rerecall, routed.alert.text), probes=probes,
                         answers=answers, allowed=allowed, client=engine.model_client())
    if result["status"] == "failed":
        print(f"triage: {result['error']}", file=sys.stderr)
        return result, EXIT_INTERNAL
    asked = {q["id"] for q in result["questions"]}
    for qid in sorted(set(answers) - asked):
        print(f"triage: --answer {qid}: no question of this verification has that id",
              file=sys.stderr)
    for line in open_question_lines(result):
        print(line, file=sys.stderr)
    return result, EXIT_OK


def index(settings: Settings, args: argparse.Namespace) -> int:
    """Build (or check and reuse) the index on disk; a write that fails exits 1 naming the
    fault and the place — it is not held in memory here, that would build nothing.
    ``--publish`` builds and publishes a version of the shared index (TRIAGE_INDEX_URI);
    ``--pull`` copies the current version into the data dir for offline use."""
    if getattr(args, "keep", None) is not None and not getattr(args, "prune", False):
        return _fail("--keep N goes with --prune")
    if any(getattr(args, flag, False) for flag in ("publish", "pull", "prune")):
        return _index_shared(settings, args)
    engine = TriageEngine(settings)
    try:
        status = engine.load(rebuild=args.rebuild, progress=_progress("embedding incidents"),
                             on_disk=True)
    except TriageError as exc:
        return report_error(exc)
    for notice in status.notices:
        print(notice)
    print(f"index {status.index}: {status.incidents} incidents, {status.actions} actions "
          f"from {status.source} → {settings.index_dir}")
    return EXIT_OK


def _index_shared(settings: Settings, args: argparse.Namespace) -> int:
    """`triage index --publish | --pull | --prune`: the shared index on object storage."""
    from store.index import MemoryIndex
    from store.shared import publish

    store = settings.shared_store()
    if store is None:
        return _fail("--publish, --pull and --prune need TRIAGE_INDEX_URI (e.g. "
                     "s3://bucket/prefix) and the AWS variables for the store (see README)")
    publishing, pulling = getattr(args, "publish", False), getattr(args, "pull", False)
    pruning, keep = getattr(args, "prune", False), getattr(args, "keep", None)
    if pulling and (publishing or pruning):
        return _fail("give --pull alone (--publish and --prune change the store)")
    if not publishing:
        return _prune(store, keep) if pruning else _pull(store, settings)
    try:
        memory = read_memory(settings.incidents_path)
        engine = TriageEngine(settings)
        builder = MemoryIndex(settings.data_dir, engine.embedder(),
                              calibration_file=settings.calibration_path)
        result = publish(store, memory, builder, when=getattr(args, "source_time", None),
                         force=bool(getattr(args, "force", False)),
                         progress=_progress("embedding incidents"))
    except TriageError as exc:
        return report_error(exc)
    for notice in result.notices:
        print(notice)
    if result.published is not None:
        print(f"published {result.published.describe()} to {store.describe()}, built from "
              f"{settings.incidents_path} (content {memory.source_hash[:12]}, written "
              f"{result.published.source_time})")
    return _prune(store, keep) if pruning else EXIT_OK


def _pull(store: Any, settings: Settings) -> int:
    from store.pulled import pull

    try:
        pulled = pull(store, settings.data_dir)
    except TriageError as exc:
        return report_error(exc)
    print(f"pulled {pulled.version.describe()} from {store.describe()} → {settings.data_dir}; "
          "the console uses it when the store is out of reach (or with TRIAGE_OFFLINE=1)")
    return EXIT_OK


def _prune(store: Any, keep: int | None) -> int:
    from store.shared import DEFAULT_KEEP, prune

    try:
        result = prune(store, keep or DEFAULT_KEEP)
    except TriageError as exc:
        return report_error(exc)
    labels = ", ".join(v.label for v in result.removed) or "none"
    print(f"pruned {len(result.removed)} old version(s) of {store.describe()}: {labels}; kept "
          f"{', '.join(v.label for v in result.kept) or 'none'}"
          + (f"; {result.gone} pruned earlier" if result.gone else ""))
    return EXIT_OK


def check(settings: Settings, args: argparse.Namespace) -> int:
    """Validate the incidents file; warn (file:line, kind — never the value) of each secret
    written in it. Secrets alone still exit 0: they are redacted everywhere the memory goes,
    but remain in the file and its git history until someone scrubs them."""
    from store.loader import SecretFinding

    def warn_secrets(secrets: list[SecretFinding]) -> None:
        for found in secrets:  # one compiler-style line each, on stdout with the report
            print(f"{found.file}:{found.line}: warning: {found.kind} secret in "
                  f"{found.incident_id} {found.field} — redacted on load; scrub it from the "
                  "file and its git history")

    try:
        memory = read_memory(settings.incidents_path)
    except IncidentFileError as exc:
        warn_secrets(exc.secrets)
        for warning in exc.warnings:
            print(warning)
        return report_error(exc)
    warn_secrets(memory.secrets)
    for warning in memory.warnings:  # fields a newer build (or a typo) added: ignored on load
        print(warning)
    if memory.reference_problems:
        return report_error(IncidentFileError(memory.reference_problems))
    count = len(memory.secrets)
    secrets = (f"; {count} secret{'s' if count != 1 else ''} found (redacted on load; scrub "
               "them from the file and its git history)" if count else "; no secrets found")
    unknown = len(memory.warnings)
    ignored = f"; {unknown} unknown field{'s' if unknown != 1 else ''} ignored" if unknown else ""
    drills = len(memory.drill_ids)
    drilled = f", {drills} drill{'s' if drills != 1 else ''}" if drills else ""
    print(f"{settings.incidents_path}: ok — {len(memory.incidents)} incidents{drilled}, "
          f"{memory.action_count} actions, {len(memory.services)} services{secrets}{ignored}")
    return _check_probes(settings)


def _check_probes(settings: Settings) -> int:
    """The declared probes beside the incidents file, if there is a probes.yaml."""
    from console.engine.verification.probes import ProbeFileError, load_probes, probes_path

    path = probes_path(settings.incidents_path)
    if not path.exists():
        return EXIT_OK
    try:
        probes = load_probes(path)
    except ProbeFileError as exc:
        return report_error(exc)
    print(f"{path}: ok — {len(probes)} declared probe{'s' if len(probes) != 1 else ''} "
          f"({', '.join(p.name for p in probes) or 'none'})")
    return EXIT_OK


def add(settings: Settings, args: argparse.Namespace) -> int:
    """Validate incidents from FILE and append them (or replace same-id blocks), one by one.

    The incidents file and the index are separate outcomes, reported as such: "saved …" is
    printed only once the file is written; an index that could not follow exits 1 saying so.
    """
    from store.loader import SecretFinding, parse_incidents_text
    from store.writer import SaveFailed, SaveRefused

    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return _fail(f"cannot read {path}: {exc}")
    secrets: list[SecretFinding] = []
    try:
        incidents = parse_incidents_text(text, str(path), secrets)
    except IncidentFileError as exc:
        return report_error(exc)
    if not incidents:
        return _fail(f"{path} holds no incidents")
    engine = TriageEngine(settings)
    saved: list[SaveResult] = []
    try:
        engine.load()
        for incident in incidents:
            if engine.incident(incident.id) is not None and not args.replace:
                return _fail(f"{incident.id} is already in {settings.incidents_path} — pass "
                             "--replace to replace its block")
        for incident in incidents:
            result = engine.save_incident(incident)
            saved.append(result)
            # (redacted as FILE was read: each secret with its line in FILE, never its value)
            found = [f"{s.kind} in {s.field} (line {s.line})" for s in secrets
                     if s.incident_id == incident.id] + list(result.redacted)
            redacted = f" (redacted: {', '.join(found)})" if found else ""
            print(f"saved {incident.id} to {result.path}{redacted}")
            for note in result.notes:
                print(f"triage: {note}", file=sys.stderr)
    except (IncidentFileError, SaveRefused, SaveFailed) as exc:
        if saved:  # the ones before it are in the file: say which, then why this one is not
            partly = TriageError(f"{incidents[len(saved)].id} and any after it were not saved "
                                 f"({', '.join(r.incident.id for r in saved)} were): "
                                 f"{exc.title}", exc.lines, exc.hint)
            partly.exit_code = exc.exit_code
            return report_error(partly)
        return report_error(exc)
    last = saved[-1]
    if last.index_problem is not None:
        print(f"memory: {last.status.incidents} incidents, {last.status.actions} actions; "
              "index NOT updated")
        ids = ", ".join(r.incident.id for r in saved)
        failure = TriageError(
            f"saved {ids} to {last.path}; the index could not be updated ({last.index_problem})",
            ["the incidents file holds the new incident(s); only the index is behind"],
            "The console rebuilds the index when it next starts; or free the space (fix the "
            "data dir) and run `triage index`.")
        failure.exit_code = EXIT_INTERNAL
        return report_error(failure)
    print(f"memory: {last.status.incidents} incidents, {last.status.actions} actions; "
          "index updated")
    return EXIT_OK


def evaluate(settings: Settings, args: argparse.Namespace) -> int:
    """Recall over known alerts in one process: per-query rank and state, then the figures."""
    from console.engine.practice.evaluate import (
        EvalInputError,
        eval_index,
        load_queries,
        replay_queries,
        run_eval,
    )

    if bool(args.queries) == bool(args.replay):
        return _fail("give exactly one of --queries FILE or --replay")
    try:
        memory = read_memory(settings.incidents_path)
        queries = load_queries(Path(args.queries)) if args.queries else replay_queries(memory)
    except IncidentFileError as exc:
        return report_error(exc)
    except EvalInputError as exc:
        return report_error(exc)
    engine = TriageEngine(settings)
    index = eval_index(settings, memory, engine.embedder(), _progress("embedding"))
    report = run_eval(index, memory, queries, replay=bool(args.replay),
                      hidden=settings.hidden_drills(memory.drill_ids))
    if args.json:
        print(report.model_dump_json(indent=2))
        return EXIT_OK
    print(eval_text(report))
    return EXIT_OK


def drill(settings: Settings, args: argparse.Namespace) -> int:
    """Replay one incident (or every one, ``--all``) as an alert with itself hidden; ``--all``
    caches the report as the console's track record (DATA/drill.json)."""
    from console.engine.practice.evaluate import eval_index
    from console.engine.practice.replay import UnknownIncident, as_json, run_drill, save_track_record

    if bool(args.incident) == bool(args.all):
        return _fail("give one INCIDENT_ID or --all")
    try:
        memory = read_memory(settings.incidents_path)
    except IncidentFileError as exc:
        return report_error(exc)
    if args.incident and args.incident not in {i.id for i in memory.incidents}:
        return _fail(f"{args.incident} is not an incident in {settings.incidents_path} — "
                     "`triage drill --all` replays every one")
    embedder = TriageEngine(settings).embedder()
    index = eval_index(settings, memory, embedder, _progress("embedding"))
    progress = _replay_progress() if args.all else None
    try:
        report = run_drill(index, memory, settings, None if args.all else [args.incident],
                           progress=progress)
    except UnknownIncident as exc:  # (checked above; kept for callers racing a file edit)
        return _fail(f"{exc} is not an incident in {settings.incidents_path}")
    if args.all:
        save_track_record(settings, memory, report, index.embedder_id)
    print(as_json(report) if args.json else drill_text(report))
    return EXIT_OK


def drill_text(report: Any) -> str:
    """A drill report for a terminal: each replay in one line, then the figures."""
    from console.engine.practice.replay import DrillReport

    assert isinstance(report, DrillReport)
    lines = [f"memory: {report.memory['incidents']} incidents · embedder "
             f"{report.memory['embedder']} · same-fix cosine ≥ {report.same_fix_cosine}", ""]
    for r in report.replays:
        lead = "abstained" if r.state == "no_prior_incident" else (
            "no lead fix" if r.lead is None else
            f"lead {r.lead.action_id} {_verdict(r.lead_right)}"
            + (f" (by {r.lead.rule})" if r.lead.rule else ""))
        related = (f" · related rank {r.rank or '-'}" if r.related else "")
        warned = {True: " · warned right", False: " · missed a WORSENED kind"}.get(
            r.warned_right, "") if r.warned_right is not None else ""
        lines.append(f"{r.incident_id:12} {r.state:18} tier {r.tier:3} {lead}{related}{warned}")
    s = report.summary
    lines += ["", f"replays {s.replays} · with related {s.with_related} · hit@1 {s.hit_at_1:.2f} "
              f"hit@5 {s.hit_at_5:.2f} MRR {s.mrr:.2f}", "",
              f"{'tier':6}{'replays':>8}{'counted':>9}{'right':>7}{'no lead':>9}  95% Wilson"]
    for row in s.tiers:
        ci = (f"{row.rate:.0%} [{row.ci_low:.0%}–{row.ci_high:.0%}]" if row.counted
              and row.rate is not None and row.ci_low is not None and row.ci_high is not None
              else "-")
        lines.append(f"{row.tier:6}{row.replays:>8}{row.counted:>9}{row.right:>7}"
                     f"{row.no_lead:>9}  {ci}")
    lines.append(f"{'abst.':6}{s.abstained.replays:>8}  ({s.abstained.related_in_memory} "
                 "with a related incident in memory)")
    for title, rows in (("state", s.by_state), ("lead match", s.by_match)):
        lines.append("")
        lines.append(f"{title:18}{'replays':>8}{'counted':>9}{'right':>7}  rate")
        for group in rows:
            rate = f"{group.rate:.0%}" if group.rate is not None else "-"
            lines.append(f"{group.name:18}{group.replays:>8}{group.counted:>9}{group.right:>7}  "
                         f"{rate}")
    lines += [f"decided by kind {s.rules['kind']}, by cosine {s.rules['cosine']} · warned right "
              f"{s.warned.right} of {s.warned.replays} · {report.wall_seconds:.1f} s"]
    return "\n".join(lines)


def _verdict(right: bool | None) -> str:
    return "not counted" if right is None else ("right" if right else "wrong")


def _replay_progress() -> Callable[[int, int], None]:
    """``replaying done/total`` on stderr: redrawn in place on a terminal, else a line per 10%."""
    import time

    started = time.monotonic()
    tty = sys.stderr.isatty()
    shown = [-1]

    def show(done: int, total: int) -> None:
        step = max(1, total // (100 if tty else 10))
        if done < total and (done % step or done == shown[0]):
            return
        shown[0] = done
        elapsed = time.monotonic() - started
        left = (f", ~{elapsed / done * (total - done):.0f} s left" if done and done < total
                else f", {elapsed:.1f} s" if done == total else "")
        print(f"{chr(13) if tty else ''}replaying {done}/{total} "
              f"({100 * done / max(total, 1):.0f}%{left})  ",
              end="" if tty and done < total else "\n", file=sys.stderr, flush=True)
    return show


def eval_text(report: EvalReport) -> str:
    """The eval report for a terminal: the figures, per kind, then every query that missed."""
    lines = [f"memory: {report.memory.get('incidents')} incidents · embedder "
             f"{report.memory.get('embedder')} · gate {report.memory.get('calibration')}", ""]
    header = f"{'':14}{'n':>4}{'hit@1':>8}{'hit@5':>8}{'MRR':>7}{'abst.P':>8}{'abst.R':>8}{'wrong abst.':>13}"
    lines.append(header)
    for name, summary in [("all", report.summary), *report.by_kind.items()]:
        ranked = (f"{summary.hit_at_1:>8.2f}{summary.hit_at_5:>8.2f}{summary.mrr:>7.2f}"
                  if summary.answerable else f"{'-':>8}{'-':>8}{'-':>7}")
        lines.append(f"{name[:14]:14}{summary.n:>4}{ranked}{summary.abstention_precision:>8.2f}"
                     f"{summary.abstention_recall:>8.2f}{summary.wrongly_abstained:>13.2f}")
    misses = [q for q in report.queries
              if (q.expect and (q.rank != 1 or q.state == "no_prior_incident"))
              or (not q.expect and q.state != "no_prior_incident")]
    if misses:
        lines += ["", "misses:"]
        for q in misses:
            got = "abstained" if q.state == "no_prior_incident" else f"rank {q.rank}"
            lines.append(f"  {q.qid:8} expect {','.join(q.expect) or 'nothing':18} {got:12} "
                         f"top {', '.join(q.ranked_incident_ids[:3])}")
    return "\n".join(lines)


def _progress(what: str) -> Callable[[int, int], None]:
    """A progress line on stderr for long embedding runs (first builds): done/total, rate and
    time left; a resumed build says how much the embedding cache already held."""
    import time

    started = [time.monotonic(), -1]

    def show(done: int, total: int) -> None:
        if total < 32 or not sys.stderr.isatty():
            return
        now = time.monotonic()
        if started[1] < 0:
            started[:] = [now, done]
            if 0 < done < total:
                print(f"{what}: {done}/{total} already embedded (cache), resuming", file=sys.stderr)
        rate = (done - started[1]) / (now - started[0]) if now > started[0] else 0.0
        left = f", ~{(total - done) / rate / 60:.0f} min left" if rate > 0 and done < total else ""
        print(f"\r{what} {done}/{total} ({100 * done / total:.0f}%{left})  ",
              end="" if done < total else "\n", file=sys.stderr)
    return show
