"""The drill screen: replay past incidents (each against the memory as it was the day it
started — earlier incidents only), see each replay's briefing, and each confidence tier's
track record as a chart with its intervals.

The screen owns its drill: a run is a thread worker with a run id; its progress and its report
come back as messages tagged with that id, and a late message of an older run is dropped.
Replays run on the App's engine (``TriageEngine.replay`` / ``replay_briefing``), so on the
memory the console shows. The last ``--all`` result (DATA/drill.json) is shown when the screen
opens, with a warning when the memory changed since: the App reads it off the event loop and
hands it over (``saved``, or later ``saved_drill_read``); after a replay of every incident the
screen tells the App (``ReplaysSaved``) so its track record follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from console.ui.keys import Key
from console.ui.messages import ReplaysSaved

if TYPE_CHECKING:
    from console.engine.briefing.models import Briefing
    from console.engine.engine import TriageEngine
    from console.engine.practice.replay import Replay, ReplayReport, TierRow
    from console.ui.state import SavedReplay

VERDICT = {True: ("right", "bold green"), False: ("wrong", "bold red"), None: ("—", "dim")}


def replay_option(replay: Replay) -> Text:
    text = Text()
    word, style = VERDICT[replay.lead_right]
    if replay.state == "no_prior_incident":
        word, style = "abstained", "bold yellow"
    text.append(f"{replay.incident_id:<10}", style="bold")
    text.append(f" tier {replay.tier:<2} {replay.confidence:>3} ")
    text.append(f"{word:<9}", style=style)
    text.append(f" {replay.title or replay.service}"[:60])
    return text


class DrillScreen(Screen[None]):
    """Replays by keys: a runs every incident, Enter on a replay shows its briefing."""

    BINDINGS = [
        Key("a", "run_all", "Replay all", title="Drill: replay every incident",
            tooltip="Replay every past incident against the memory as it was that day (the "
                    "track record per tier)",
            id="drill-run-all"),
        Key("enter", "show_replay", "Briefing", show=False,
            tooltip="Show the highlighted replay's briefing", id="drill-show"),
        Key("escape", "back", "Back", tooltip="Back to the console", id="drill-back"),
    ]
    DEFAULT_CSS = """
    DrillScreen #drill-heading { height: auto; padding: 0 1; background: $panel; }
    DrillScreen #drill-progress { height: 1; padding: 0 1; }
    DrillScreen #drill-body { height: 1fr; }
    DrillScreen #drill-replays { width: 1fr; border: round $primary; }
    DrillScreen #drill-right { width: 1fr; }
    DrillScreen #drill-chart { height: 14; border: round $primary; }
    DrillScreen #drill-table { height: auto; padding: 0 1; }
    DrillScreen #drill-briefing { height: 1fr; border: round $primary; padding: 0 1; }
    """

    @dataclass
    class Progressed(Message):
        run_id: int
        done: int
        total: int

    @dataclass
    class Finished(Message):
        run_id: int
        report: ReplayReport

    @dataclass
    class Failed(Message):
        run_id: int
        reason: str

    @dataclass
    class BriefingReady(Message):
        run_id: int
        incident_id: str
        briefing: Briefing

    def __init__(self, engine: TriageEngine, saved: SavedReplay | None = None) -> None:
        """``saved``: the last saved drill as the App read it (None: not read yet)."""
        super().__init__()
        self.engine = engine
        self.saved = saved
        self.report: ReplayReport | None = None
        self.drawn: list[tuple[str, int]] = []  # (tier, % right) as the chart shows them
        self.run_id = 0
        self.running = False

    def compose(self) -> ComposeResult:
        yield Static("", markup=False, id="drill-heading")
        yield ProgressBar(total=None, show_eta=True, id="drill-progress")
        with Horizontal(id="drill-body"):
            yield OptionList(markup=False, id="drill-replays")
            with Vertical(id="drill-right"):
                yield self._chart()
                yield Static("", markup=False, id="drill-table")
                with VerticalScroll(id="drill-briefing"):
                    yield Static(Text("Enter on a replay shows the briefing it would have "
                                      "had.", style="dim"), markup=False, id="drill-briefing-body")
        yield Footer()

    def _chart(self) -> Widget:
        from textual_plotext import PlotextPlot

        chart = PlotextPlot(id="drill-chart")
        chart.border_title = "Lead fix right per confidence tier (95% Wilson interval)"
        return chart

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()
        self._show_saved()

    def saved_drill_read(self, saved: SavedReplay) -> None:
        """The App (re)read the saved drill: shown unless this screen has a report of its own."""
        self.saved = saved
        if self.report is None and not self.running:
            self._show_saved()

    def _show_saved(self) -> None:
        saved = self.saved
        if saved is not None and saved.report is not None and saved.record is not None:
            record = saved.record
            self.show_report(saved.report, stale=record.why if record.stale else "")
        else:
            self._heading("No drill has been run on this memory yet: press a to replay every "
                          "incident as a new alert, against only the incidents before it.")

    def _heading(self, line: str, style: str = "") -> None:
        text = Text("Drill", style="bold")
        text.append(" · replay past incidents, each against the memory of its day · "
                    "a replay all · Enter a replay's briefing · Esc back\n", style="dim")
        text.append(line, style=style)
        self.query_one("#drill-heading", Static).update(text)

    # --- the worker: never touches widgets, only posts --------------------------------------

    @work(thread=True, exclusive=True, group="drill", exit_on_error=False)
    def run_replays(self, run_id: int) -> None:
        from console.engine.progress import REPLAY_INTERVAL, throttled
        from store.errors import TriageError

        def progress(done: int, total: int) -> None:
            self.post_message(self.Progressed(run_id, done, total))

        try:  # every incident: saves drill.json
            report = self.engine.replay(progress=throttled(progress, REPLAY_INTERVAL))
        except TriageError as exc:
            self.post_message(self.Failed(run_id, exc.render()))
            return
        except OSError as exc:
            self.post_message(self.Failed(run_id, f"the drill could not be saved: {exc}"))
            return
        self.post_message(self.Finished(run_id, report))

    @work(thread=True, exclusive=True, group="drill-briefing", exit_on_error=False)
    def load_briefing(self, run_id: int, incident_id: str) -> None:
        briefing = self.engine.replay_briefing(incident_id)
        if briefing is not None:
            self.post_message(self.BriefingReady(run_id, incident_id, briefing))

    # --- handlers: the screen's state changes only here --------------------------------------

    def on_drill_screen_progressed(self, message: Progressed) -> None:
        if message.run_id != self.run_id:
            return
        bar = self.query_one(ProgressBar)
        bar.update(total=message.total, progress=message.done)
        self._heading(f"replaying {message.done} of {message.total} incidents…")

    def on_drill_screen_finished(self, message: Finished) -> None:
        if message.run_id != self.run_id:
            return
        self.running = False
        self.show_report(message.report)
        self.app.post_message(ReplaysSaved())

    def on_drill_screen_failed(self, message: Failed) -> None:
        if message.run_id != self.run_id:
            return
        self.running = False
        self._heading(f"The drill could not run: {message.reason}", "bold red")

    def on_drill_screen_briefing_ready(self, message: BriefingReady) -> None:
        from console.ui.widgets.briefing_pane import briefing_renderable

        highlighted = self._highlighted()
        if message.run_id != self.run_id or highlighted is None \
                or highlighted.incident_id != message.incident_id:
            return
        text = Text(f"Replay of {message.incident_id} — {highlighted.alert[:200]}\n\n",
                    style="bold")
        text.append_text(briefing_renderable(message.briefing))
        self.query_one("#drill-briefing-body", Static).update(text)

    def show_report(self, report: ReplayReport, stale: str = "") -> None:
        self.report = report
        summary = report.summary
        listing = self.query_one(OptionList)
        listing.clear_options()
        listing.add_options([Option(replay_option(r), id=r.incident_id) for r in report.replays])
        if report.replays:
            listing.highlighted = 0
        bar = self.query_one(ProgressBar)
        bar.update(total=max(1, summary.replays), progress=summary.replays)
        related = (f"hit@1 {summary.hit_at_1:.2f} · hit@5 {summary.hit_at_5:.2f} · MRR "
                   f"{summary.mrr:.2f} over {summary.with_related} replays with related "
                   "incidents" if summary.with_related else "no incident names a related one")
        line = (f"{summary.replays} replays in {report.wall_seconds:.1f}s, each knowing only "
                f"the incidents before it · {related} · abstained {summary.abstained.replays}")
        if report.undated:
            line += f" · {report.undated} undated incident(s) counted as known from the start"
        if stale:
            self._heading(f"{line}\nThe memory changed since this drill ({stale}): press a to "
                          "run it again.", "bold yellow")
        else:
            self._heading(line)
        table = Text()
        for row in summary.tiers:
            table.append(row.line() + "\n")
        if report.summary_leave_one_out is not None:
            table.append_text(_hindsight(summary.tiers, report.summary_leave_one_out.tiers))
        table.append("Figures on a memory are only as real as the memory: the bundled one is a "
                     "demo written by us, not evidence.", style="dim")
        self.query_one("#drill-table", Static).update(table)
        self._draw(report)

    def _draw(self, report: ReplayReport) -> None:
        from textual_plotext import PlotextPlot

        chart = self.query_one(PlotextPlot)
        plt = chart.plt
        plt.clear_data()
        rows = [row for row in report.summary.tiers if row.counted]
        where = [float(n) for n in range(1, len(rows) + 1)]  # plotext reads text x as dates
        plt.bar(where, [100 * (row.rate or 0) for row in rows], width=0.4, label="right %")
        plt.scatter(where, [100 * (row.ci_low or 0) for row in rows], marker="▾",
                    label="95% low")
        plt.scatter(where, [100 * (row.ci_high or 0) for row in rows], marker="▴",
                    label="95% high")
        plt.xticks(where, [f"tier {row.tier}" for row in rows])
        plt.ylim(0, 100)
        self.drawn = [(row.tier, round(100 * (row.rate or 0))) for row in rows]
        plt.xlabel("confidence tier")
        chart.refresh()

    def _highlighted(self) -> Replay | None:
        index = self.query_one(OptionList).highlighted
        if self.report is None or index is None or index >= len(self.report.replays):
            return None
        return self.report.replays[index]

    # --- keys -----------------------------------------------------------------------------

    def action_run_all(self) -> None:
        if self.running:
            self.notify("A drill is already running.", timeout=3)
            return
        self.running = True
        self.run_id += 1
        self.query_one(ProgressBar).update(total=None, progress=0)
        self._heading("Building the drill's index and replaying every incident…")
        self.run_replays(self.run_id)

    def action_show_replay(self) -> None:
        replay = self._highlighted()
        if replay is None:
            return
        self.query_one("#drill-briefing-body", Static).update(
            Text(f"Replaying {replay.incident_id}…", style="italic"))
        self.load_briefing(self.run_id, replay.incident_id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_show_replay()

    def action_back(self) -> None:
        self.dismiss(None)


def _hindsight(ordered: list[TierRow], loo: list[TierRow]) -> Text:
    """The same tiers replayed leave-one-out (each incident hidden alone, later ones known):
    what knowing the future would have added, so the difference shows."""
    text = Text("With hindsight (leave-one-out, later incidents known): ", style="dim")
    by_tier = {row.tier: row for row in ordered}
    parts = []
    for row in loo:
        mine = by_tier.get(row.tier)
        if not row.counted and not (mine and mine.counted):
            continue
        parts.append(f"tier {row.tier} {row.right}/{row.counted}")
    text.append((" · ".join(parts) or "no tier counted") + "\n", style="dim")
    return text
