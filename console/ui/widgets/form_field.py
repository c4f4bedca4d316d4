"""One labelled form control with its own message line under it (an error, or a hint)."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import Static


class FormField(Vertical):
    """A label, a control, and the inline error for that control (hidden when there is none).

    The message line's id is ``<control id>-error`` so a screen can address it directly.
    """

    DEFAULT_CSS = """
    FormField { height: auto; width: 1fr; }
    FormField > .form-row { height: auto; }
    FormField > .form-row > .form-label { color: $text-muted; }
    FormField > .form-row > Input, FormField > .form-row > Select { width: 1fr; }
    FormField > .form-row > Input:focus { background: $accent 20%; }
    FormField > .form-row > Select:focus > SelectCurrent { background: $accent 20%; }
    FormField > .form-row > .form-label.-active { color: $accent; text-style: bold; }
    FormField > .form-message { display: none; color: $text-error; text-style: bold; }
    FormField > .form-message.-hint { color: $text-warning; text-style: none; }
    FormField > .form-message.-shown { display: block; }
    """

    def __init__(self, label: str, control: Widget, *, label_width: int = 14,
                 id: str | None = None, classes: str | None = None) -> None:
        if control.id is None:
            raise ValueError("a FormField's control needs an id")
        super().__init__(id=id or f"{control.id}-field", classes=classes)
        self.label = label
        self.control = control
        self.label_width = label_width
        self._shown: tuple[str | None, bool] = (None, False)

    @property
    def control_id(self) -> str:
        assert self.control.id is not None
        return self.control.id

    def compose(self) -> ComposeResult:
        with Horizontal(classes="form-row"):
            label = Static(Text(self.label), markup=False, classes="form-label")
            label.styles.width = self.label_width
            yield label
            yield self.control
        message = Static("", markup=False, classes="form-message", id=f"{self.control_id}-error")
        message.styles.padding = (0, 0, 0, self.label_width)
        yield message

    # :focus-within does not restyle the label reliably, so the label follows focus by class.
    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self.query_one(".form-label").add_class("-active")

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self.query_one(".form-label").remove_class("-active")

    def show_message(self, message: str | None, *, hint: bool = False) -> None:
        """Show ``message`` under the control (an error in red, a hint in yellow), or hide it."""
        # Called on every keystroke: touching an unchanged line would re-layout the form.
        if (message, hint) == self._shown:
            return
        self._shown = (message, hint)
        line = self.query_one(".form-message", Static)
        line.update(Text(f"{'•' if hint else '✗'} {message}") if message else Text(""))
        line.set_class(bool(message), "-shown")
        line.set_class(hint, "-hint")
