"""The triage pipeline: memory → recall → draft → guards → briefing. UI and CLI call this."""

from __future__ import annotations

import dataclasses
import gc
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.engine.config import Settings
from store.embedder import NO_EMBEDDER, Embedder, EmbeddingCache, EmbedProgress, OllamaEmbedder
from store.errors import TriageError
from store.index import IndexWriteFailed, MemoryIndex
from store.loader import IncidentFileError, LoadedMemory, load_incidents
from store.models import Incident
from store.validation import future_start
from store.writer import file_sha256, redact_incident, save_incident, save_lock

# The briefing pipeline and the model client are imported where they are used: `triage index`,
# `doctor` and `check` never run them (bench/headless_bench.py).
if TYPE_CHECKING:
    from console.engine.briefing.alert import Alert
    from console.engine.briefing.models import Briefing
    from console.engine.briefing.request import BriefingRequest, CancelToken
    from console.engine.model.client import ModelClient
    from console.engine.pipeline import FirstLook, Hooks, MemorySnapshot, Routed
    from console.engine.practice.evaluate import EvalQuery, EvalReport
    from console.engine.practice.history import Mode
    from console.engine.practice.replay import ReplayReport, TrackRecord
    from console.engine.verification.passes import Plan, VerificationResult
    from console.engine.verification.probe_run import ProbeRun
    from console.engine.verification.probes import DeclaredProbe
    from store.loader import SecretFinding
    from store.recall import Recall
    from store.shared import PublishResult, Store


@dataclass(frozen=True)
class MemoryStatus:
    """What the status line shows about the memory and the model."""

    incidents: int
    actions: int
    services: int
    index: str  # fresh | "fresh (rebuilt)" | "in memory only" (could not be written) | stale
    model: str  # "not configured" | "<name> offline (TRIAGE_OFFLINE)" | "<name>"
    source: str
    notices: tuple[str, ...] = field(default_factory=tuple)
    # With TRIAGE_INDEX_URI: which memory recall reads ("shared v3", "pulled v3, 2 h old",
    # "local (shared index not used)") and how many local incidents are laid over it.
    shared: str | None = None
    overlaid: int = 0
    hidden: str = ""  # what the overlay hides ("hides 1 shared: deleted here INC-2041"), or ""
    # The incidents file does not load whole: what this memory is and what it leaves out
    # (file:line, the incidents not searched) — the console's banner; "" when it loads whole.
    partial: str = ""


@dataclass(frozen=True)
class SaveResult:
    """Where an incident was saved, what was redacted from it, and the memory after.

    A SaveResult means the incidents file *was* written. The index is a separate outcome:
    ``index_problem`` says why it could not be updated on disk ("No space left on device at
    <dir>"; this session then searches an index held in memory), None when it was.
    ``notes`` are other things that went wrong after the file was saved."""

    path: str
    incident: Incident
    redacted: tuple[str, ...]
    status: MemoryStatus
    index_problem: str | None = None
    notes: tuple[str, ...] = ()


@contextmanager
def gc_paused() -> Iterator[None]:
    """Reading a big incidents file builds millions of small acyclic objects (YAML nodes):
    each cyclic-GC pass walks all of them, which made loading superlinear (0.44 s/MB at 5 MB,
    0.50 s/MB at 50 MB; paused, 0.28 s/MB at both — bench/load_bench.py). Nothing read there
    forms a cycle; the GC is back on (if it was) as soon as the read ends. Other threads keep
    running meanwhile; only their cycles wait for the next pass."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def partial_notice(error: IncidentFileError, source: str, missing: list[str],
                   earlier: list[str], earlier_words: str = "searched as last indexed") -> str:
    """One line: the incidents file's problems (file:line, the first few), what the briefing
    reads instead, the incidents not searched and those searched as last indexed."""
    first = [" ".join(str(p).split()) for p in error.problems[:2]]
    more = len(error.problems) - len(first)
    problems = "; ".join(first) + (f"; and {more} more" if more else "")
    count = len(error.problems)
    text = (f"partial memory — the incidents file has {count} problem{'s' if count != 1 else ''}"
            f" ({problems}): {source}")
    text += f"; not searched: {_listed(missing)}" if missing else "; every incident searched"
    if earlier:
        text += f"; {earlier_words}: {_listed(earlier)}"
    return text + " — fix the file (`triage check`), then reload"


def _listed(items: list[str], limit: int = 8) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def read_memory(path: Path) -> LoadedMemory:
    """load_incidents with the cyclic GC paused (see gc_paused)."""
    with gc_paused():
        return load_incidents(path)


class TriageEngine:
    """Owns the loaded memory and its index; every method is safe to call from a worker."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.memory: LoadedMemory | None = None
        self.index: MemoryIndex | None = None
        self.notices: list[str] = []
        self.loaded_sha256: str | None = None
        self.shared: tuple[str, int] | None = None  # (status words, incidents overlaid)
        self.partial: str | None = None  # the partial-memory notice (see load), or None
        # One load at a time: the console's memory worker, and a briefing asked for before it
        # finished (snapshot() loads when nothing is loaded yet), would otherwise both build
        # the index into one data dir, and the status line say whichever ended last.
        self._loading = threading.RLock()

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
        from console.engine.model.client import ModelClient

        return ModelClient(self.settings.ollama_host, self.settings.model,
                           self.settings.model_timeout, stall=self.settings.stall_seconds)

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
        from console.engine.model.client import ModelClient, ModelUnavailable, is_pulled

        client = ModelClient(self.settings.ollama_host, self.settings.model, timeout=3.0)
        try:
            pulled = client.list_models()
        except ModelUnavailable as exc:
            import ollama

            # Real Ollama always lists its models: an HTTP error here is something else.
            if isinstance(exc.__cause__, ollama.ResponseError):
                return (f"{self.settings.model} offline (not an Ollama server at "
                        f"{self.settings.ollama_host or 'the default host'}, HTTP "
                        f"{exc.__cause__.status_code})")
            return f"{self.settings.model} offline (Ollama not reachable)"
        if not is_pulled(self.settings.model, pulled):
            return f"{self.settings.model} not pulled (ollama pull {self.settings.model})"
        return f"{self.settings.model} online"

    def load(self, rebuild: bool = False, progress: EmbedProgress | None = None,
             on_disk: bool = False, partial: bool = False) -> MemoryStatus:
        """Load the memory and bring its index up to date (rebuilding when stale or when it
        does not match itself).

        ``progress`` hears (documents embedded, documents in all) during a (re)build. An index
        that cannot be written (full disk, read-only data dir) is held in memory with a notice,
        unless ``on_disk`` (`triage index`), which raises IndexWriteFailed instead.

        With ``partial`` (the console, `triage brief`) an incidents file that does not load
        whole still briefs: see :meth:`_load_partial`. Otherwise (check, index, add, saves) it
        raises IncidentFileError, as every writer must.
        """
        with self._loading:
            return self._load(rebuild, progress, on_disk, partial)

    def _load(self, rebuild: bool, progress: EmbedProgress | None, on_disk: bool,
              partial: bool) -> MemoryStatus:
        self.loaded_sha256 = file_sha256(self.settings.incidents_path)
        try:
            memory = read_memory(self.settings.incidents_path)
        except IncidentFileError as exc:
            if not partial or on_disk or rebuild:
                raise
            store = self.settings.shared_store()
            if store is not None and exc.partial is not None:
                return self._load_partial_shared(store, exc, progress)
            return self._load_partial(exc, progress)
        self.partial = None
        store = self.settings.shared_store()
        if store is not None and not on_disk:
            return self._load_shared(store, memory)
        index = MemoryIndex(self.settings.data_dir, self.embedder(),
                            EmbeddingCache(self.settings.embedding_cache),
                            calibration_file=self.settings.calibration_path)
        self.notices = index.open(memory, rebuild=rebuild, progress=progress,
                                  in_memory_fallback=not on_disk)
        self.memory, self.index = memory, index
        return self._status(memory)

    def _load_partial(self, error: IncidentFileError,
                      progress: EmbedProgress | None) -> MemoryStatus:
        """Brief from what loads while the incidents file has problems (a bad merge at 2 a.m.):
        the last good index on disk, read as it is; without one, the incidents that load on
        their own (``error.partial``), indexed in memory only. Never an index written or
        rebuilt from a partial memory. ``error`` itself when nothing at all can be searched.
        The notice (self.partial) names the problems (file:line) and what is not searched."""
        index = MemoryIndex(self.settings.data_dir, self.embedder(),
                            EmbeddingCache(self.settings.embedding_cache),
                            calibration_file=self.settings.calibration_path)
        loads = error.partial.incidents if error.partial is not None else []
        last_good = index.open_last_good()
        notices: list[str] = []
        if last_good is not None:
            memory = last_good
            held = {i.id: i for i in last_good.incidents}
            built = index.meta.built_at if index.meta is not None else "earlier"
            source = (f"briefed from the last good index ({len(held)} incidents, built "
                      f"{built}; not rebuilt)")
            missing = [str(u) for u in error.unsearched if u.label not in held]
            missing += [f"{i.id} (newer than the index)" for i in loads if i.id not in held]
            earlier = [u.label for u in error.unsearched if u.label in held]
            earlier += [i.id for i in loads if i.id in held and held[i.id] != i]
        elif loads:
            assert error.partial is not None
            memory = error.partial
            notices = index.build_in_memory(memory, progress)
            source = (f"briefed from the {len(loads)} incidents that load, indexed in memory "
                      "only (no index was written)")
            missing, earlier = [str(u) for u in error.unsearched], []
        else:
            raise error
        self.partial = partial_notice(error, source, missing, earlier)
        self.memory, self.index, self.shared = memory, index, None
        self.notices = [self.partial, *notices]
        return self._status(memory)

    def _load_partial_shared(self, store: Any, error: IncidentFileError,
                             progress: EmbedProgress | None) -> MemoryStatus:
        """A broken local file on a shared index: the incidents that load are laid over the
        shared version, which recalls what the file cannot give (an incomplete memory never
        hides a shared record: store/overlay.py). When no shared version can be read, as
        without one (:meth:`_load_partial`)."""
        from store.overlay import LayeredIndex
        from store.shared import SharedUnavailable

        assert error.partial is not None
        try:
            self._load_shared(store, error.partial)
        except SharedUnavailable:
            return self._load_partial(error, progress)
        held = (set(self.index.base_hashes) if isinstance(self.index, LayeredIndex)
                else set())
        label = self.shared[0] if self.shared else "the shared index"
        loads = len(error.partial.incidents)
        source = (f"briefed from the {loads} incidents that load, laid over {label}, which "
                  "recalls the incidents it holds")
        missing = [str(u) for u in error.unsearched if u.label not in held]
        earlier = [u.label for u in error.unsearched if u.label in held]
        self.partial = partial_notice(error, source, missing, earlier,
                                      f"searched as {label} holds them")
        self.notices = [self.partial, *self.notices]
        return self._status(error.partial)

    def _load_shared(self, store: Any, memory: LoadedMemory) -> MemoryStatus:
        """The shared index (TRIAGE_INDEX_URI) with this laptop's own incidents laid over it;
        the pulled copy or a local index when the store does not answer (with a notice);
        store.shared.SharedUnavailable when none of them can be searched."""
        from store.overlay import Sources, open_layered

        opened = open_layered(Sources(store, self.settings.data_dir, memory, self.embedder(),
                                      EmbeddingCache(self.settings.embedding_cache),
                                      self.settings.calibration_path,
                                      offline=self.settings.offline))
        self.memory, self.index, self.notices = memory, opened.index, opened.notices
        self.shared = (opened.label, opened.overlaid)
        return self._status(memory)

    def known_services(self) -> list[str]:
        return self.memory.services if self.memory else []

    def service_aliases(self) -> dict[str, tuple[str, ...]]:
        """The memory's services.yaml aliases (none before a load, or with a bad file)."""
        return self.memory.service_aliases if self.memory else {}

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
        store.writer.SaveRefused with nothing written. A write the disk refuses raises
        store.writer.SaveFailed, also with nothing written. Once the file is written the result
        says so, whatever happens to the index (``SaveResult.index_problem``).
        """
        if self.memory is None or self.index is None:
            self.load()
        assert self.index is not None and self.memory is not None
        if self.settings.game_day and not incident.drill:
            # A game day's notes are practice: never evidence unless --include-drills.
            incident = incident.model_copy(update={"drill": True})
        cleaned, redacted = redact_incident(incident)
        target = self.settings.incidents_path
        # A start in 2099 is saved as given, and said (`triage add` prints it, the form toasts).
        future = future_start(cleaned, self.settings.now())
        notes: list[str] = [f"warning: {future}"] if future else []
        with save_lock(target):
            expected = self.loaded_sha256
            others_saved = file_sha256(target) != expected and self._only_others_changed(
                cleaned.id)
            if others_saved:
                expected = file_sha256(target)
            previous = self.incident(cleaned.id)
            path = save_incident(target, cleaned, expected, notes)
            # The file is saved. Nothing below may be reported as "not saved".
            index_problem = self._follow_save(target, cleaned.id, previous, others_saved, notes)
        assert self.memory is not None
        return SaveResult(str(path), cleaned, tuple(redacted), self._status(self.memory),
                          index_problem, tuple(notes))

    def _follow_save(self, target: Path, incident_id: str, previous: Incident | None,
                     others_saved: bool, notes: list[str]) -> str | None:
        """Bring memory and index up to the file just saved; why the index on disk could not
        follow (None when it did). After someone else's save the index is brought up to the
        whole file (vectors come from the cache); otherwise only this incident's row changes."""
        assert self.index is not None
        self.loaded_sha256 = file_sha256(target)
        try:
            memory = read_memory(target)
        except IncidentFileError as exc:
            if self.partial is not None and exc.partial is not None:
                # Saved beside a broken file (directory mode): brief on from what loads, and
                # never an index written from a partial memory.
                self.load(partial=True)
                broken = ", ".join(sorted({Path(p.file).name for p in exc.problems}))
                return f"it is not updated from a memory with problems: {broken} does not load"
            # Only a hand edit landing right after our rename gets here: the save stands.
            notes.append(f"the incidents file could not be re-read after saving ({exc.title} "
                         f"{'; '.join(exc.lines[:3])}); the memory and index were left as "
                         "they were — reload once the file is fixed")
            return "the incidents file could not be re-read after saving"
        self.memory = memory
        try:
            self.notices = (self.index.open(memory, in_memory_fallback=True) if others_saved
                            else self.index.update_incident(memory, incident_id, previous,
                                                            in_memory_fallback=True))
        except IndexWriteFailed as exc:  # not a storage fault: e.g. the data dir is a file
            self.notices = [exc.render()]
            return exc.short
        except TriageError as exc:
            self.notices = [exc.render()]
            return exc.title
        return self.index.degraded

    def _only_others_changed(self, incident_id: str) -> bool:
        """Is appending ``incident_id`` onto the file as it is now safe? Only when it is new
        there and in what was loaded, and every incident loaded is still there unchanged (the
        file only gained incidents, comments or formatting)."""
        assert self.memory is not None
        if self.incident(incident_id) is not None:
            return False  # an edit of a stored incident: the user must see the other change
        try:
            fresh = read_memory(self.settings.incidents_path)
        except IncidentFileError:
            return False
        fresh_by_id = {i.id: i for i in fresh.incidents}
        return incident_id not in fresh_by_id and all(
            fresh_by_id.get(i.id) == i for i in self.memory.incidents)

    def status(self) -> MemoryStatus | None:
        """The status line's memory as it stands now (None before a load): after a shared
        index stopped answering mid-session, it names what recall reads instead."""
        return self._status(self.memory) if self.memory is not None else None

    def _status(self, memory: LoadedMemory) -> MemoryStatus:
        state = self.index.state if self.index is not None else "missing"
        label = {"fresh": "fresh", "rebuilt": "fresh (rebuilt)",
                 "memory": "in memory only"}.get(state, state)
        if self.partial is not None:
            label = ("last good, not rebuilt — the file has problems" if state == "last good"
                     else "partial, in memory only — the file has problems")
        shared, overlaid = self.shared or (None, 0)
        layers = self.index.layered() if self.index is not None else None
        if shared is not None and layers is not None:
            overlaid, fallen = layers  # a save lays the overlay again
            if fallen is not None:
                shared, overlaid = fallen  # the store stopped answering mid-session
            label = f"{shared} + {overlaid} local" if overlaid else shared
        hidden = ""
        if shared is not None:
            from store.overlay import LayeredIndex

            hidden = self.index.hiding() if isinstance(self.index, LayeredIndex) else ""
        return MemoryStatus(len(memory.incidents), memory.action_count, len(memory.services),
                            label, self.model_label(), str(self.settings.incidents_path),
                            tuple(self.notices), shared, overlaid, hidden,
                            partial=self.partial or "")

    def snapshot(self) -> MemorySnapshot:
        """The memory and index a request will read (loading them first if needed, or waiting
        for the load under way)."""
        if self.memory is None or self.index is None:
            with self._loading:  # (a reload under way does not hold up a briefing)
                if self.memory is None or self.index is None:
                    self.load(partial=True)  # (a briefing goes on from what loads; see load)
        assert self.memory is not None and self.index is not None
        from console.engine.pipeline import MemorySnapshot

        return MemorySnapshot(self.memory, self.index.pinned(), self.settings)

    def brief(self, alert: Alert | BriefingRequest, hooks: Hooks | None = None) -> Routed:
        """The one way to brief: an alert (or a console's request, with its id and cancel
        token) through the pipeline (console/engine/pipeline.py reads top to bottom), keeping
        the alert briefed and the recall it used (verification reads both).

        Without ``hooks`` the caller is headless (the CLI, a replay, a script): it has no
        status line or toast, so what loading the memory had to say (an index rebuilt, and
        why) becomes part of the briefing's notices."""
        from console.engine import pipeline
        from console.engine.briefing.request import BriefingRequest

        request = alert if isinstance(alert, BriefingRequest) else BriefingRequest(alert)
        routed = pipeline.route(request, self.snapshot(), hooks, self.model_client())
        search = routed.briefing.search
        loaded = [n for n in self.notices if search is not None and n not in search.notices]
        if hooks is not None or not loaded or search is None:
            return routed
        return dataclasses.replace(routed, briefing=routed.briefing.model_copy(update={
            "search": search.model_copy(update={"notices": [*loaded, *search.notices]})}))

    def first_look(self, alert: Alert, cancel: CancelToken | None = None) -> FirstLook:
        """The memory's state and top incident for ``alert`` without briefing it (a page
        received by ``--listen``, listed until the engineer briefs it)."""
        from console.engine import pipeline
        from console.engine.briefing.request import CancelToken

        return pipeline.first_look(alert, self.snapshot(), cancel if cancel is not None
                                   else CancelToken())

    def rerecall(self, alert_text: str, hidden: frozenset[str]) -> Recall:
        """Search the memory again for ``alert_text`` as if ``hidden`` were not in it (the
        verification's independent re-recall); quarantined actions are left out, as always."""
        from console.engine import pipeline
        from store.recall import recall

        snapshot = self.snapshot()
        again = recall(snapshot.index, alert_text, hidden | pipeline.hidden_from_recall(snapshot))
        return pipeline.without(again, pipeline.quarantine(again))

    # --- the front door for verification, replays and eval: the CLI and the console alike ---

    def current_memory(self) -> LoadedMemory:
        """The memory this engine loaded (what the console shows), or — headless, before any
        load — the incidents file read now. Replays and eval read this, never a second copy."""
        return self.memory if self.memory is not None else read_memory(self.settings.incidents_path)

    def probes_file(self) -> Path:
        from console.engine.verification.probes import probes_path

        return probes_path(self.settings.incidents_path)

    def probes(self) -> list[DeclaredProbe]:
        """The team's declared probes (none when there is no probes file);
        ProbeFileError when the file is there and malformed."""
        from console.engine.verification.probes import load_probes

        return list(load_probes(self.probes_file()))

    def alert_service(self, alert: Alert) -> str | None:
        """The alert's service as verification reads it: the verdict's reading (None when it
        names none, or when unsure)."""
        from console.engine.verification.passes import alert_service

        return alert_service(alert, self.known_services(), self.service_aliases())

    def verification_plan(self, routed: Routed, probes: list[DeclaredProbe]) -> Plan:
        """Plan the verification of a routed briefing: audit, questions, memory probes and (if
        due) the independent re-recall. No model here: see :meth:`verification_assisted`."""
        from console.engine.verification.passes import plan

        return plan(routed.briefing, routed.recall, service=self.alert_service(routed.alert),
                    now=self.settings.now(), rerecall=partial(self.rerecall, routed.alert.text),
                    probes=probes)

    def verification_assisted(self, made: Plan, routed: Routed,
                              probes: list[DeclaredProbe]) -> Plan | None:
        """``made`` with the model's wording and probe picks (None without a model or a lead)."""
        from console.engine.verification.passes import assisted

        client = self.model_client()
        if client is None or made.ctx.lead is None:
            return None
        return assisted(made, client, probes, routed.recall, self.alert_service(routed.alert))

    def verification_concluded(self, made: Plan, routed: Routed, answers: Mapping[str, str],
                               runs: Mapping[str, ProbeRun]) -> VerificationResult:
        """Synthesis from the answers and probe runs so far, and its artifact written in the
        data dir: the result, or a failed one saying why (the briefing stands either way)."""
        from console.engine.verification.passes import conclude, escalate_late, write_artifact

        escalate_late(made, answers, runs, partial(self.rerecall, routed.alert.text))
        return write_artifact(conclude(made, answers, runs), routed.briefing, routed.recall,
                              self.settings.data_dir)

    def verification_pass(self, routed: Routed, probes: list[DeclaredProbe],
                          answers: Mapping[str, str], allowed: set[str]) -> VerificationResult:
        """One whole headless pass (`triage brief --verify`): plan, the allowed declared
        probes, the answers given, conclusion and artifact."""
        from console.engine.verification.passes import run_pass

        result, _ = run_pass(routed.briefing, routed.recall,
                             service=self.alert_service(routed.alert),
                             data_dir=self.settings.data_dir, now=self.settings.now(),
                             rerecall=partial(self.rerecall, routed.alert.text), probes=probes,
                             answers=answers, allowed=allowed, client=self.model_client())
        return result

    def replay_index(self, memory: LoadedMemory,
                     progress: Callable[[int, int], None] | None = None) -> MemoryIndex:
        """The index replays and eval read: ``memory`` in its own directory (reused when fresh)."""
        from console.engine.practice.evaluate import eval_index

        return eval_index(self.settings, memory, self.embedder(), progress)

    def replay(self, incident_ids: list[str] | None = None,
               progress: Callable[[int, int], None] | None = None,
               index_progress: Callable[[int, int], None] | None = None,
               mode: Mode = "time-ordered") -> ReplayReport:
        """Replay ``incident_ids`` (default: every one) as alerts, each hidden from the memory
        it meets (``mode``: time-ordered — as it was that day — or leave-one-out); replaying
        every one time-ordered saves the console's track record (DATA/drill.json).
        UnknownIncident for an id not in the memory."""
        from console.engine.practice.replay import UnknownIncident, run_replays, save_replays

        memory = self.current_memory()
        known = {i.id for i in memory.incidents}
        unknown = [i for i in incident_ids or [] if i not in known]
        if unknown:  # (before the index is built: a typo costs nothing)
            raise UnknownIncident(", ".join(unknown))
        index = self.replay_index(memory, index_progress)
        report = run_replays(index, memory, self.settings, incident_ids, progress=progress,
                             mode=mode)
        if incident_ids is None and mode == "time-ordered":
            save_replays(self.settings, memory, report, index.embedder_id)
        return report

    def replay_briefing(self, incident_id: str) -> Briefing | None:
        """The briefing a replay of ``incident_id`` showed (None when it is not in memory)."""
        from console.engine.practice.replay import replay_briefing

        memory = self.current_memory()
        incident = next((i for i in memory.incidents if i.id == incident_id), None)
        if incident is None:
            return None
        return replay_briefing(self.replay_index(memory), memory, incident,
                               self.settings.hidden_drills(memory.drill_ids),
                               now=self.settings.now())

    def saved_replays(self) -> tuple[ReplayReport | None, TrackRecord | None]:
        """The last `replay all` saved in the data dir and its per-tier record on the memory
        shown (stale when that memory changed since), from one read; (None, None) when none
        was saved or it is unreadable."""
        from console.engine.practice.replay import read_saved, record_of

        saved = read_saved(self.settings)
        if saved is None:
            return None, None
        return saved.report, record_of(saved, self.settings, self.current_memory())

    def evaluate(self, queries: list[EvalQuery] | None,
                 progress: Callable[[int, int], None] | None = None,
                 mode: Mode = "time-ordered") -> EvalReport:
        """`triage eval`: recall and states over ``queries`` — or, with None, every incident
        replayed as its own alert with itself hidden (``--replay``; ``mode`` time-ordered or
        leave-one-out)."""
        return self._evaluate(self.current_memory(), queries, progress, mode)

    def evaluate_file(self, queries_file: Path,
                      progress: Callable[[int, int], None] | None = None) -> EvalReport:
        """:meth:`evaluate` over the queries in a YAML file (`triage eval --queries F`);
        EvalInputError when it cannot be used. The memory is read first: when both files are
        broken, the incidents file's problems are the ones shown."""
        from console.engine.practice.evaluate import load_queries

        memory = self.current_memory()
        return self._evaluate(memory, load_queries(queries_file), progress)

    def _evaluate(self, memory: LoadedMemory, queries: list[EvalQuery] | None,
                  progress: Callable[[int, int], None] | None,
                  mode: Mode = "time-ordered") -> EvalReport:
        from console.engine.practice.evaluate import replay_queries, run_eval

        index = self.replay_index(memory, progress)
        hidden = self.settings.hidden_drills(memory.drill_ids)
        if queries is None:
            return run_eval(index, memory, replay_queries(memory, mode, hidden), replay=True,
                            hidden=hidden, mode=mode, now=self.settings.now())
        return run_eval(index, memory, queries, hidden=hidden, now=self.settings.now())

    # --- the front door for the rest of the CLI: adding incidents, the index, the doctor ---

    def incidents_in(self, path: Path) -> tuple[list[Incident], list[SecretFinding]]:
        """The incidents in a YAML file other than the memory (`triage add FILE`), validated and
        redacted as the memory's are, with the secrets found (each with its line in ``path``).
        TriageError when the file cannot be read, IncidentFileError when it is invalid."""
        from store.loader import parse_incidents_text

        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TriageError(f"cannot read {path}: {exc}") from None
        secrets: list[SecretFinding] = []
        return parse_incidents_text(text, str(path), secrets), secrets

    def publish_index(self, store: Store, memory: LoadedMemory, when: str | None = None,
                      force: bool = False, progress: EmbedProgress | None = None) -> PublishResult:
        """Build ``memory`` (read with :meth:`current_memory`) with this engine's embedder and
        publish it as a new version of the shared index in ``store`` (`triage index
        --publish`); SharedStale when it is older than the current version, unless ``force``."""
        from store.shared import publish

        builder = MemoryIndex(self.settings.data_dir, self.embedder(),
                              calibration_file=self.settings.calibration_path)
        return publish(store, memory, builder, when=when, force=force, progress=progress)

    def index_on_disk(self, memory: LoadedMemory) -> tuple[str, str | None]:
        """The local index against ``memory``, reading only (`triage doctor`; the console would
        rebuild on what it finds): its freshness ("fresh", "stale", …) and, when fresh, how it
        does not match itself (None when it does)."""
        from store.index import freshness

        embedder = self.embedder()
        state = freshness(self.settings.index_dir, memory.source_hash,
                          embedder.id if embedder else None)
        if state != "fresh":
            return state, None
        return state, MemoryIndex(self.settings.data_dir, embedder).verify(memory)
