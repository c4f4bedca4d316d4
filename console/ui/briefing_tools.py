"""What the engineer does with the briefing on screen: check an intended action against its
tripwire ("about to do…"), note that action for the postmortem, export the briefing as
Markdown, and on a game day end the drill with its report.

``BriefingToolsMixin`` is part of :class:`console.ui.app.TriageApp` (kept in its own file to
keep the App readable). Its workers only post messages; the handlers here change the App's
state (console/ui/state.py), on its event loop. What it shows goes to a
:class:`TripwireView` — the main screen, which this module does not import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from textual import work

from console.ui.messages import (
    ActionNoted,
    Exported,
    ExportRequested,
    GameDayReported,
    IntentTyped,
    TripwireChecked,
    TripwireReady,
)

if TYPE_CHECKING:
    from textual.message import Message
    from textual.notifications import SeverityLevel

    from console.engine.briefing.tripwire import Tripwire, TripwireHit
    from console.engine.config import Settings
    from console.engine.engine import TriageEngine
    from console.engine.pipeline import Routed
    from console.engine.practice.gameday import Timeline
    from console.ui.state import ConsoleState
    from store.models import Action


class TripwireView(Protocol):
    """Where the tripwire's answer is shown: the "about to do…" line."""

    def show_tripwire(self, text: str, hits: list[TripwireHit]) -> None: ...


class BriefingToolsMixin:
    """The App's tripwire, noted actions, export and game-day report."""

    if TYPE_CHECKING:  # provided by TriageApp
        settings: Settings
        timeline: Timeline | None
        state: ConsoleState

        @property
        def engine(self) -> TriageEngine: ...

        @property
        def main_screen(self) -> TripwireView | None: ...

        def post_message(self, message: Message) -> bool: ...

        def copy_to_clipboard(self, text: str) -> None: ...

        def notify(self, message: str, *, title: str = "",
                   severity: SeverityLevel = "information", timeout: float | None = None,
                   markup: bool = True) -> None: ...

    # --- the tripwire: "about to do…" ---------------------------------------------------------

    @work(thread=True, exclusive=True, group="tripwire", exit_on_error=False)
    def build_tripwire(self, request_id: int, routed: Routed) -> None:
        from console.engine.briefing.tripwire import Tripwire, gather_candidates

        memory = self.engine.memory
        embedder = self.engine.embedder()
        if memory is None or embedder is None:
            return  # lexical-only memory: no tripwire (the warnings in the briefing stand)
        candidates = gather_candidates(routed.recall, memory, [routed.alert.service],
                                       include_drills=self.settings.include_drills)
        self.post_message(TripwireReady(Tripwire(candidates, embedder), request_id))

    def on_tripwire_ready(self, message: TripwireReady) -> None:
        if self.state.shown is not None and self.state.last_request_id == message.request_id:
            self.state.tripwire = message.tripwire

    def on_intent_typed(self, message: IntentTyped) -> None:
        if self.state.tripwire is not None:
            self._check_intent(self.state.last_request_id, self.state.tripwire, message.text)

    @work(thread=True, exclusive=True, group="tripwire-check", exit_on_error=False)
    def _check_intent(self, request_id: int, tripwire: Tripwire, text: str) -> None:
        from store.embedder import EmbedderUnavailable

        try:
            hits = tripwire.check(text)
        except EmbedderUnavailable:
            return
        self.post_message(TripwireChecked(text, hits, request_id))

    def on_tripwire_checked(self, message: TripwireChecked) -> None:
        if message.request_id == self.state.last_request_id and self.main_screen is not None:
            self.main_screen.show_tripwire(message.text, message.hits)

    def on_action_noted(self, message: ActionNoted) -> None:
        """An action the engineer is about to take: kept for the postmortem form (and the
        game day's timeline), with the warnings it raised."""
        from console.engine.briefing.tripwire import safe_intent

        noted, hits = safe_intent(message.text), list(message.hits)
        self.state.noted.append((noted, hits))
        if self.timeline is not None:
            self.timeline.action_noted(noted, None, hits)
        warned = f" — it resembles {hits[0].action_id} WORSENED" if hits else ""
        self.notify(f"Noted: {noted}{warned}. Ctrl+R carries it into the postmortem.",
                    title="About to do", timeout=4, markup=False)

    def noted_rows(self) -> list[Action]:
        """The noted actions as postmortem rows: outcome not observed yet (NO_EFFECT,
        unconfirmed) for the engineer to set."""
        from store.models import Action, ActionOutcome

        rows: list[Action] = []
        for text, hits in self.state.noted:
            warned = (f" The tripwire warned: it resembles {hits[0].action_id} WORSENED."
                      if hits else "")
            rows.append(Action(id=f"A{len(rows) + 1}", action=text,
                               outcome=ActionOutcome.NO_EFFECT, confirmed=False,
                               explanation="noted on the about-to-do line during triage; set "
                                           f"the outcome you saw.{warned}"))
        return rows

    # --- export and the drill report ----------------------------------------------------------

    def on_export_requested(self, message: ExportRequested) -> None:
        if self.state.shown is None:
            self.notify("No briefing to export yet.", timeout=3)
            return
        self._export(self.state.shown.briefing)

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def _export(self, briefing: Any) -> None:
        from console.engine.render.markdown import briefing_markdown, write_markdown

        path = write_markdown(briefing, self.settings.data_dir / "exports")
        self.post_message(Exported(str(path), briefing_markdown(briefing)))

    def on_exported(self, message: Exported) -> None:
        self.copy_to_clipboard(message.markdown)  # OSC 52: where the terminal supports it
        self.notify(f"Briefing written to {message.path} (and copied to the clipboard where "
                    "the terminal supports it).", title="Export", timeout=6, markup=False)

    @work(thread=True, exclusive=True, group="drill-report", exit_on_error=False)
    def _drill_report(self, timeline: Timeline, briefing: Any) -> None:
        from console.engine.practice.gameday import game_day_report

        report = game_day_report(timeline, briefing, self.engine.embedder())
        path = timeline.path.with_suffix(".md")
        path.write_text(report, encoding="utf-8")
        self.post_message(GameDayReported(str(path)))

    def on_game_day_reported(self, message: GameDayReported) -> None:
        self.notify(f"Drill report written to {message.path}. This console stays in game-day "
                    "mode: a postmortem recorded here is still saved as a drill (drill: true); "
                    "quit and start `triage` without --drill for real work.", title="Game day",
                    timeout=12, markup=False)
