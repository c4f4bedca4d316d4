"""The triage pipeline: memory → recall → draft → guards → briefing. UI and CLI call this."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from console.engine.alert import Alert
from console.engine.audit import AuditLog
from console.engine.briefing import Briefing, RecalledRecord, SourceUse
from console.engine.config import Settings
from console.engine.deterministic import deterministic_briefing, recalled_records, search_info
from console.engine.model_client import ModelClient, ModelUnavailable, Progress, is_pulled
from console.engine.prompts import looks_like_instructions
from console.engine.steer import run_model
from store.embedder import NO_EMBEDDER, Embedder, EmbedProgress, OllamaEmbedder
from store.index import MemoryIndex, freshness
from store.loader import LoadedMemory, load_incidents
from store.models import Incident
from store.recall import Recall, recall
from store.writer import file_sha256, redact_incident, save_incident


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


def _short_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


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
        index = MemoryIndex(self.settings.data_dir, self.embedder())
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

        Raises store.writer.SaveRefused (nothing written) when the file changed on disk since
        it was loaded, or when the result would not re-read exactly as intended.
        """
        if self.memory is None or self.index is None:
            self.load()
        assert self.index is not None
        cleaned, redacted = redact_incident(incident)
        previous = self.incident(cleaned.id)
        path = save_incident(self.settings.incidents_path, cleaned, self.loaded_sha256)
        self.loaded_sha256 = file_sha256(self.settings.incidents_path)
        memory = load_incidents(self.settings.incidents_path)
        self.notices = self.index.update_incident(memory, cleaned.id, previous)
        self.memory = memory
        return SaveResult(str(path), cleaned, tuple(redacted), self._status(memory, "fresh"))

    def _status(self, memory: LoadedMemory, index_state: str) -> MemoryStatus:
        return MemoryStatus(len(memory.incidents), memory.action_count, len(memory.services),
                            index_state, self.model_label(), str(self.settings.incidents_path),
                            tuple(self.notices))

    def brief(self, alert: Alert,
              on_recall: Callable[[list[RecalledRecord]], None] | None = None,
              on_progress: Callable[[Progress], None] | None = None) -> Briefing:
        """The whole pipeline for one alert; loads the memory first if needed.

        ``on_recall`` receives the recalled records as soon as recall returns, before any
        draft exists; ``on_progress`` receives draft progress (size, elapsed) — never text.
        """
        if self.memory is None or self.index is None:
            self.load()
        assert self.memory is not None and self.index is not None
        recalled = recall(self.index, alert.text)
        quarantined = {a.action_id for a in recalled.actions if looks_like_instructions(a.text)}
        records = [r.model_copy(update={"quarantined": r.action_id in quarantined})
                   for r in recalled_records(recalled)]
        if on_recall is not None:
            on_recall(records)
        notices = []
        if self.index.meta and self.index.meta.embed_error:
            notices.append(f"recall is lexical only: {self.index.meta.embed_error}")
        if alert.truncated:
            notices.append("alert was longer than 20,000 characters; only the start was searched")
        if quarantined:
            notices.append(f"{len(quarantined)} recalled record(s) read like instructions to a "
                           f"model and were kept out of the prompt: {', '.join(sorted(quarantined))}")
        briefing = self._briefing(recalled, notices, quarantined, on_progress)
        briefing.recalled = records
        briefing.coverage = self._coverage(alert, recalled, briefing, quarantined)
        return briefing

    def _briefing(self, recalled: Recall, notices: list[str], quarantined: set[str],
                  on_progress: Callable[[Progress], None] | None) -> Briefing:
        assert self.memory is not None
        size = len(self.memory.incidents)
        client = self.model_client()
        if client is None:
            reason = ("offline (TRIAGE_OFFLINE=1) — deterministic briefing" if self.settings.offline
                      else "no model configured (set TRIAGE_MODEL) — deterministic briefing")
            return deterministic_briefing(recalled, size, reason, notices)
        if not recalled.incidents:
            return deterministic_briefing(recalled, size, "no prior incident — the model was not "
                                          "asked (nothing it could cite)", notices)
        prompt_records = [a for a in recalled.actions if a.action_id not in quarantined]
        audit = AuditLog(self.settings.data_dir / "audit.jsonl")
        steered = run_model(client, recalled.query, recalled, prompt_records, audit,
                            budget=self.settings.model_timeout * 2, on_progress=on_progress)
        if audit.error:
            notices.append(audit.error)
        if steered.accepted is None:
            fallback = deterministic_briefing(recalled, size, steered.degraded, notices)
            fallback.attempts, fallback.guard_log = steered.attempts, steered.guard_log
            return fallback
        draft = steered.accepted
        return Briefing(
            state="proven" if draft.confidence.proven else "unproven", source="model",
            model=client.model, degraded=None, recalled=[], summary=draft.summary,
            recommendations=draft.recommendations, warnings=draft.warnings,
            confidence=draft.confidence, guard_log=steered.guard_log, attempts=steered.attempts,
            search=search_info(recalled, size, notices), likely_cause=draft.likely_cause,
            steps=draft.steps)

    def _coverage(self, alert: Alert, recalled: Recall, briefing: Briefing,
                  quarantined: set[str]) -> list[SourceUse]:
        memory_text = "\n".join(a.text for a in recalled.actions) + "\n".join(
            i.document for i in recalled.incidents if not i.actions)
        record_count = sum(max(1, len(i.actions)) for i in recalled.incidents)
        uses = [
            SourceUse(source="alert", status="truncated" if alert.truncated else "used",
                      sha256=_short_sha(recalled.query),
                      detail=f"{len(recalled.redacted)} secret(s) redacted" if recalled.redacted
                      else ""),
            SourceUse(source="memory", status="used", sha256=_short_sha(memory_text),
                      detail=f"{record_count} records from {len(recalled.incidents)} "
                             f"incidents ({recalled.mode} recall)"),
        ]
        if quarantined:
            uses.append(SourceUse(source="quarantined records", status="excluded",
                                  detail=", ".join(sorted(quarantined))))
        embedder_id = self.index.embedder_id if self.index else None
        if embedder_id is None:
            uses.append(SourceUse(source="embeddings", status="not_configured",
                                  detail="TRIAGE_EMBED_MODEL=none: lexical recall only"))
        elif recalled.mode != "hybrid":
            reason = (self.index.meta.embed_error if self.index and self.index.meta
                      and self.index.meta.embed_error else "; ".join(recalled.notices))
            uses.append(SourceUse(source=f"embeddings {embedder_id}", status="unavailable",
                                  detail=reason))
        else:
            uses.append(SourceUse(source=f"embeddings {embedder_id}", status="used"))
        if briefing.source == "model":
            accepted = briefing.attempts[-1]
            uses.append(SourceUse(source=f"model {briefing.model}", status="used",
                                  sha256=accepted.output_sha256[:12],
                                  detail=f"attempt {accepted.n}"))
        elif self.settings.model:
            uses.append(SourceUse(source=f"model {self.settings.model}", status="unavailable",
                                  detail=briefing.degraded or ""))
        else:
            uses.append(SourceUse(source="model", status="not_configured"))
        return uses
