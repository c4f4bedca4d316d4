"""Rendering a briefing outside the console: ``text`` (the terminal report of `triage brief`)
and ``markdown`` (the export for a chat or a ticket, every stored string literal)."""

from console.engine.render.markdown import briefing_markdown
from console.engine.render.text import briefing_text

__all__ = ["briefing_markdown", "briefing_text"]
