"""`triage drill` and `triage eval`: replaying the memory to measure it, through the engine.

``drill`` replays past incidents as alerts, each against the memory as it was the day it
started (``--leave-one-out``: today's memory less itself) — would the console have been
right, per confidence tier?; ``eval`` measures recall on alerts whose answer is known (hit@k,
MRR, abstention)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.cli.errors import command, fail
from console.cli.progress import embedding_progress, replay_progress
from console.engine.config import Settings
from console.engine.engine import TriageEngine
from console.exit_codes import EXIT_OK

if TYPE_CHECKING:
    from console.engine.practice.evaluate import EvalReport


@command
def drill(settings: Settings, args: argparse.Namespace) -> int:
    """Replay one incident (or every one, ``--all``) as an alert with itself hidden; ``--all``
    caches the report as the console's track record (DATA/drill.json)."""
    from console.engine.practice.replay import UnknownIncident, as_json

    if bool(args.incident) == bool(args.all):
        return fail("give one INCIDENT_ID or --all")
    try:
        report = TriageEngine(settings).replay(
            None if args.all else [args.incident],
            progress=replay_progress() if args.all else None,
            index_progress=embedding_progress("embedding"), mode=_mode(args))
    except UnknownIncident:
        return fail(f"{args.incident} is not an incident in {settings.incidents_path} — "
                    "`triage drill --all` replays every one")
    print(as_json(report) if args.json else replay_text(report))
    if args.all and report.mode != "time-ordered":
        print("leave-one-out replays are not saved as the track record: `triage drill --all` "
              "saves the time-ordered one", file=sys.stderr)
    return EXIT_OK


@command
def evaluate(settings: Settings, args: argparse.Namespace) -> int:
    """Recall over known alerts in one process: per-query rank and state, then the figures."""
    if bool(args.queries) == bool(args.replay):
        return fail("give exactly one of --queries FILE or --replay")
    if args.queries and args.leave_one_out:
        return fail("--leave-one-out is for --replay: a queries file hides nothing")
    engine = TriageEngine(settings)
    progress = embedding_progress("embedding")
    report = (engine.evaluate_file(Path(args.queries), progress) if args.queries
              else engine.evaluate(None, progress, mode=_mode(args)))
    if args.json:
        print(report.model_dump_json(indent=2))
        return EXIT_OK
    print(eval_text(report))
    return EXIT_OK


def _mode(args: argparse.Namespace) -> Any:
    return "leave-one-out" if getattr(args, "leave_one_out", False) else "time-ordered"


def replay_text(report: Any) -> str:
    """A drill report for a terminal: each replay in one line, then the figures (for a
    time-ordered ``--all``, leave-one-out's beside them)."""
    from console.engine.practice.replay import ReplayReport

    assert isinstance(report, ReplayReport)
    met = ("the memory as it was the day it started" if report.mode == "time-ordered"
           else "today's memory less itself")
    lines = [f"memory: {report.memory['incidents']} incidents · embedder "
             f"{report.memory['embedder']} · same-fix cosine ≥ {report.same_fix_cosine}",
             f"replays: {report.mode} — each incident against {met} · {report.undated} undated "
             "(known from the start" + ("; each replayed against the other undated ones)"
                                        if report.undated and report.mode == "time-ordered"
                                        else ")"), ""]
    for r in report.replays:
        lead = "abstained" if r.state == "no_prior_incident" else (
            "no lead fix" if r.lead is None else
            f"lead {r.lead.action_id} {_verdict(r.lead_right)}"
            + (f" (by {r.lead.rule})" if r.lead.rule else ""))
        related = (f" · related rank {r.rank or '-'}" if r.related else "")
        warned = {True: " · warned right", False: " · missed a WORSENED kind"}.get(
            r.warned_right, "") if r.warned_right is not None else ""
        lines.append(f"{r.incident_id:12} {r.state:18} tier {r.tier:3} {lead}{related}{warned}")
    summaries = [(report.mode, report.summary)]
    if report.summary_leave_one_out is not None:
        summaries.append(("leave-one-out", report.summary_leave_one_out))
    for name, s in summaries:
        lines += ["", f"== {name}" + (" (the track record)" if name == "time-ordered"
                                      and len(summaries) > 1 else ""),
                  *_summary_lines(s)]
    lines += [f"{report.wall_seconds:.1f} s"]
    return "\n".join(lines)


def _summary_lines(s: Any) -> list[str]:
    lines = [f"replays {s.replays} · with related {s.with_related} · hit@1 {s.hit_at_1:.2f} "
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
    lines.append(f"decided by kind {s.rules['kind']}, by cosine {s.rules['cosine']} · warned "
                 f"right {s.warned.right} of {s.warned.replays}")
    return lines


def _verdict(right: bool | None) -> str:
    return "not counted" if right is None else ("right" if right else "wrong")


def eval_text(report: EvalReport) -> str:
    """The eval report for a terminal: the figures, per kind, then every query that missed."""
    lines = [f"memory: {report.memory.get('incidents')} incidents · embedder "
             f"{report.memory.get('embedder')} · gate {report.memory.get('calibration')}"]
    if report.mode is not None:
        lines.append(f"replays: {report.mode} · {report.undated} undated (known from the start)")
    lines.append("")
    header = f"{'':14}{'n':>4}{'hit@1':>8}{'hit@5':>8}{'MRR':>7}{'abst.P':>8}{'abst.R':>8}{'wrong abst.':>13}"
    lines.append(header)
    rows = [("all", report.summary), *report.by_kind.items()]
    if report.summary_leave_one_out is not None:
        rows.append(("leave-one-out", report.summary_leave_one_out))
    for name, summary in rows:
        ranked = (f"{summary.hit_at_1:>8.2f}{summary.hit_at_5:>8.2f}{summary.mrr:>7.2f}"
                  if summary.answerable else f"{'-':>8}{'-':>8}{'-':>7}")
        lines.append(f"{name[:14]:14}{summary.n:>4}{ranked}{summary.abstention_precision:>8.2f}"
                     f"{summary.abstention_recall:>8.2f}{summary.wrongly_abstained:>13.2f}")
    lines += ["", "state shown        n  right"]
    for state, row in report.summary.by_state.items():
        lines.append(f"  {state:17}{row.n:>3}{row.right:>7}")
    lines += ["", "confidence shown   n  lead right"]
    lines += [f"  {band.band:17}{band.n:>3}{band.right:>7}" for band in report.summary.by_band]
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
