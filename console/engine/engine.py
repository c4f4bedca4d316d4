"""The triage pipeline: memory → recall → draft → guards → briefing. UI and CLI call this."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from console.engine import pipeline
from console.engine.alert import Alert
from console.engine.briefing import Briefing, RecalledRecord
from console.engine.config import Settings
from console.engine.model_client import ModelClient, ModelUnavailable, Progress, is_pulled
from console.engine.pipeline import Hooks, MemorySnapshot
from console.engine.request import BriefingRequest
from store.embedder import NO_EMBEDDER, Embedder, EmbeddingCache, EmbedProgress, OllamaEmbedder
from store.index import MemoryIndex, freshness
from store.loader import IncidentFileError, LoadedMemory, load_incidents
from store.models import Incident
from store.writer import file_sha256, redact_incident, save_incident, save_lock


@dataclass(frozen=True)
class MemoryStatus:
    """What the status line shows about the memory and the model."""

    incidents: int
    actions: int
    services: int
    index: str  # fresh | stale | missing | "fresh (rebuilt)"
    model: str  # "not configured" | "<name> offline (TRIAGE_OFFLINE)" | "<name>"
    source: str
    notices: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class SaveResult:
    """Where an incident was saved, what was redacted from it, and the memory after."""

    path: str
    incident: Incident
    redacted: tuple[str, ...]
    status: MemoryStatus


class TriageEngine:
    """Owns the loaded memory and its index; every method is safe to call from a worker."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.memory: LoadedMemory | None = None
        self.index: MemoryIndex | None = None
        self.notices: list[str] = []
        self.loaded_sha256: str | None = None

    def embedder(self) -> Embedder | None:
        """The bundled in-process MiniLM unless an Ollama model is named (and may be called);
        ``TRIAGE_EMBED_MODEL=none`` means lexical recall only."""
        model = self.settings.embed_model
        if model and model.strip().lower() == NO_EMBEDDER:
            return None
        if model and not self.settings.offline:
            return OllamaEmbedder(self.settings.ollama_host, model)
        from store.minilm import MiniLMEmbedder

        return MiniLMEmbedder()

    def model_client(self) -> ModelClient | None:
        if self.settings.offline or not self.settings.model:
            return None
        return ModelClient(self.settings.ollama_host, self.settings.model,
                           self.settings.model_timeout)

    def model_label(self) -> str:
        if not self.settings.model:
            return "not configured"
        if self.settings.offline:
            return f"{self.settings.model} offline (TRIAGE_OFFLINE)"
        return self.settings.model

    def model_state(self) -> str:
        """``online``, ``offline: why`` or ``not pulled``, asked of the server (short timeout)."""
        if self.settings.offline or not self.settings.model:
            return self.model_label()
        client = ModelClient(self.settings.ollama_host, self.settings.model, timeout=3.0)
        try:
            pulled = client.list_models()
        except ModelUnavailable:
            return f"{self.settings.model} offline (Ollama not reachable)"
        if not is_pulled(self.settings.model, pulled):
            return f"{self.settings.model} not pulled (ollama pull {self.settings.model})"
        return f"{self.settings.model} online"

    def load(self, rebuild: bool = False, progress: EmbedProgress | None = None) -> MemoryStatus:
        """Load the memory and bring its index up to date (rebuilding when stale).

        ``progress`` hears (documents embedded, documents in all) during a (re)build.
        """
        self.loaded_sha256 = file_sha256(self.settings.incidents_path)
        memory = load_incidents(self.settings.incidents_path)
        index = MemoryIndex(self.settings.data_dir, self.embedder(),
                            EmbeddingCache(self.settings.embedding_cache),
                            calibration_file=self.settings.calibration_path)
        before = freshness(index.index_dir, memory.source_hash, index.embedder_id)
        self.notices = index.open(memory, rebuild=rebuild, progress=progress)
        self.memory, self.index = memory, index
        return self._status(memory, "fresh" if before == "fresh" and not rebuild else
                            "fresh (rebuilt)")

    def known_services(self) -> list[str]:
        return self.memory.services if self.memory else []

    def suggest_incident_id(self) -> str:
        """The next free ``INC-<n>`` after the highest number in memory."""
        numbers = [int("".join(ch for ch in i.id if ch.isdigit()) or 0)
                   for i in (self.memory.incidents if self.memory else [])]
        return f"INC-{max(numbers, default=1000) + 1}"

    def incident(self, incident_id: str) -> Incident | None:
        if self.memory is None:
            return None
        return next((i for i in self.memory.incidents if i.id == incident_id), None)

    def save_incident(self, incident: Incident) -> SaveResult:
        """Redact, save into the incidents file (append or replace its block), update the index.

        The whole save holds the incidents file's lock. If the file changed on disk since it
        was loaded, a *new* incident is still appended when the change only added or edited
        other incidents (everything this engine loaded is there unchanged); anything else raises
        store.writer.SaveRefused with nothing written.
        """
        if self.memory is None or self.index is None:
            self.load()
        assert self.index is not None and self.memory is not None
        cleaned, redacted = redact_incident(incident)
        target = self.settings.incidents_path
        with save_lock(target):
            expected = self.loaded_sha256
            others_saved = file_sha256(target) != expected and self._only_others_changed(
                cleaned.id)
            if others_saved:
                expected = file_sha256(target)
            previous = self.incident(cleaned.id)
            path = save_incident(target, cleaned, expected)
            self.loaded_sha256 = file_sha256(target)
            memory = load_incidents(target)
            # After someone else's save the index is brought up to the whole file (vectors
            # come from the cache); otherwise only this incident's row changes.
            self.notices = (self.index.open(memory) if others_saved
                            else self.index.update_incident(memory, cleaned.id, previous))
            self.memory = memory
        return SaveResult(str(path), cleaned, tuple(redacted), self._status(memory, "fresh"))

    def _only_others_changed(self, incident_id: str) -> bool:
        """Is appending ``incident_id`` onto the file as it is now safe? Only when it is new
        there and in what was loaded, and every incident loaded is still there unchanged (the
        file only gained incidents, comments or formatting)."""
        assert self.memory is not None
        if self.incident(incident_id) is not None:
            return False  # an edit of a stored incident: the user must see the other change
        try:
            fresh = load_incidents(self.settings.incidents_path)
        except IncidentFileError:
            return False
        fresh_by_id = {i.id: i for i in fresh.incidents}
        return incident_id not in fresh_by_id and all(
            fresh_by_id.get(i.id) == i for i in self.memory.incidents)

    def _status(self, memory: LoadedMemory, index_state: str) -> MemoryStatus:
        return MemoryStatus(len(memory.incidents), memory.action_count, len(memory.services),
                            index_state, self.model_label(), str(self.settings.incidents_path),
                            tuple(self.notices))

    def snapshot(self) -> MemorySnapshot:
        """The memory and index a request will read (loading them first if needed)."""
        if self.memory is None or self.index is None:
            self.load()
        assert self.memory is not None and self.index is not None
        return MemorySnapshot(self.memory, self.index.pinned(), self.settings)

    def brief(self, alert: Alert,
              on_recall: Callable[[list[RecalledRecord]], None] | None = None,
              on_progress: Callable[[Progress], None] | None = None) -> Briefing:
        """The whole pipeline for one alert, as one request that nobody cancels (the CLI)."""
        return self.run(BriefingRequest(alert), Hooks(on_recall, on_progress))

    def run(self, request: BriefingRequest, hooks: Hooks | None = None) -> Briefing:
        """One request through the pipeline (console/engine/pipeline.py reads top to bottom)."""
        return pipeline.run(request, self.snapshot(), hooks, self.model_client())
