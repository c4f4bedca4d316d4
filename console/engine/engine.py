"""The triage pipeline: memory → recall → briefing. The UI and the CLI both call this."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from console.engine.alert import Alert
from console.engine.briefing import Briefing, RecalledRecord
from console.engine.config import Settings
from console.engine.deterministic import deterministic_briefing, recalled_records
from store.embedder import Embedder, OllamaEmbedder
from store.index import MemoryIndex, freshness
from store.loader import LoadedMemory, load_incidents
from store.recall import recall


@dataclass(frozen=True)
class MemoryStatus:
    """What the status line shows about the memory and the model."""

    incidents: int
    actions: int
    services: int
    index: str  # fresh | stale | missing | "fresh (rebuilt)"
    model: str  # "not configured" | "offline (TRIAGE_OFFLINE)" | "<name>"
    source: str
    notices: tuple[str, ...] = field(default_factory=tuple)


class TriageEngine:
    """Owns the loaded memory and its index; every method is safe to call from a worker."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.memory: LoadedMemory | None = None
        self.index: MemoryIndex | None = None
        self.notices: list[str] = []

    def embedder(self) -> Embedder | None:
        if self.settings.offline or not self.settings.embed_model:
            return None
        return OllamaEmbedder(self.settings.ollama_host, self.settings.embed_model)

    def model_label(self) -> str:
        if not self.settings.model:
            return "not configured"
        if self.settings.offline:
            return f"{self.settings.model} offline (TRIAGE_OFFLINE)"
        return self.settings.model

    def peek(self) -> MemoryStatus:
        """Load the incidents file and check index freshness without importing LanceDB."""
        memory = load_incidents(self.settings.incidents_path)
        embedder = self.embedder()
        state = freshness(self.settings.data_dir / "index", memory.source_hash,
                          embedder.id if embedder else None)
        return self._status(memory, state)

    def load(self, rebuild: bool = False) -> MemoryStatus:
        """Load the memory and bring its index up to date (rebuilding when stale)."""
        memory = load_incidents(self.settings.incidents_path)
        index = MemoryIndex(self.settings.data_dir, self.embedder())
        before = freshness(index.index_dir, memory.source_hash, index.embedder_id)
        self.notices = index.open(memory, rebuild=rebuild)
        self.memory, self.index = memory, index
        return self._status(memory, "fresh" if before == "fresh" and not rebuild else "fresh (rebuilt)")

    def _status(self, memory: LoadedMemory, index_state: str) -> MemoryStatus:
        return MemoryStatus(len(memory.incidents), memory.action_count, len(memory.services),
                            index_state, self.model_label(), str(self.settings.incidents_path),
                            tuple(self.notices))

    def brief(self, alert: Alert,
              on_recall: Callable[[list[RecalledRecord]], None] | None = None) -> Briefing:
        """The whole pipeline for one alert; loads the memory first if needed.

        ``on_recall`` receives the recalled records as soon as recall returns, before any
        briefing exists, so a UI can show the raw memory while the briefing is prepared.
        """
        if self.memory is None or self.index is None:
            self.load()
        assert self.memory is not None and self.index is not None
        recalled = recall(self.index, alert.text)
        if on_recall is not None:
            on_recall(recalled_records(recalled))
        notices = []
        if self.index.meta and self.index.meta.embed_error:
            notices.append(f"recall is lexical only: {self.index.meta.embed_error}")
        if alert.truncated:
            notices.append("alert was longer than 20,000 characters; only the start was searched")
        degraded = None
        if self.settings.model is None:
            degraded = "no model configured (set TRIAGE_MODEL) — deterministic briefing"
        elif self.settings.offline:
            degraded = "offline (TRIAGE_OFFLINE=1) — deterministic briefing"
        return deterministic_briefing(recalled, len(self.memory.incidents), degraded, notices)
