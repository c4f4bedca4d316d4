"""The Textual app: receives its settings and engine; owns screens and global keys."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from console.engine.config import Settings
from console.engine.engine import TriageEngine
from console.ui.screens.error import ErrorScreen
from console.ui.screens.help import HelpScreen
from console.ui.screens.main import MainScreen
from console.ui.screens.postmortem import PostmortemScreen


def postmortem_commands(screen: PostmortemScreen) -> Iterable[SystemCommand]:
    yield SystemCommand("Save postmortem", "Check the form and save it (ctrl+s)",
                        screen.action_save)
    yield SystemCommand("Add action", "Add an action row (ctrl+n)", screen.action_add_action)
    if screen.removed:
        yield SystemCommand("Restore action", "Bring back the last removed action row (ctrl+z)",
                            screen.action_restore_action)
    yield SystemCommand("Reload memory", "Re-read the incidents file; the form is kept (ctrl+l)",
                        screen.action_reload)
    yield SystemCommand("Cancel postmortem", "Back to the console without saving (Esc)",
                        screen.action_cancel)


class TriageApp(App[None]):
    """Incident triage console."""

    TITLE = "triage"
    CSS_PATH = Path(__file__).with_name("app.tcss")
    BINDINGS = [
        Binding("f1", "help", "Help", tooltip="What the console shows, and every key", id="help"),
        Binding("ctrl+q", "quit", "Quit", tooltip="Quit the console", id="quit", priority=True),
    ]

    def __init__(self, settings: Settings, engine: TriageEngine | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.engine = engine or TriageEngine(settings)

    def on_mount(self) -> None:
        self.push_screen(MainScreen(self.engine))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        main = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
        yield SystemCommand("Help", "What the console shows, and every key (F1)", self.action_help)
        if isinstance(screen, PostmortemScreen):
            yield from postmortem_commands(screen)
        elif main is not None:
            yield SystemCommand("Focus alert", "Type or paste the alert (F2)",
                                main.action_focus_alert)
            yield SystemCommand("Focus briefing", "Scroll the briefing (F3)",
                                main.action_focus_briefing)
            yield SystemCommand("Focus recalled memory", "Browse recalled records (F4)",
                                main.action_focus_recalled)
            yield SystemCommand("Reload memory", "Re-read the incidents file (F5)",
                                main.action_reload_memory)
            if screen is main:
                yield SystemCommand("Record postmortem", "Record a new incident; symptoms and "
                                    "service start from the alert (ctrl+r)",
                                    main.action_record_postmortem)
                if main.check_action("edit_incident", ()):
                    yield SystemCommand("Edit incident", "Edit the incident of the highlighted "
                                        "recalled record (e)", main.action_edit_incident)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            error = event.worker.error
            self.push_screen(ErrorScreen(
                f"Something went wrong in {event.worker.name or 'a background task'}",
                f"{type(error).__name__}: {error}\n\nIf it persists, run `triage index --rebuild` "
                "and `triage check`, and report this message."))
