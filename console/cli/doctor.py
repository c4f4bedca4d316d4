"""`triage doctor`: is everything the console needs in place? One line per check, each
with what to do when it fails; exit 0 only when every check passes."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from console.cli.errors import command
from console.engine.config import Settings
from console.engine.engine import TriageEngine
from console.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from store.loader import IncidentFileError

if TYPE_CHECKING:
    from store.loader import LoadedMemory

Report = Callable[[bool, str, str], None]


@command
def doctor(settings: Settings, args: argparse.Namespace) -> int:
    """Check each piece the console relies on; print the exact fix for each missing one."""
    problems = 0

    def report(ok: bool, what: str, fix: str = "") -> None:
        nonlocal problems
        problems += 0 if ok else 1
        print(f"{'ok  ' if ok else 'FIX '} {what}" + (f"\n      → {fix}" if fix and not ok else ""))

    engine = TriageEngine(settings)
    try:
        memory = engine.current_memory()
    except IncidentFileError as exc:
        report(False, f"incidents file {settings.incidents_path}: {len(exc.problems)} problem(s)",
               "run `triage check` and fix what it lists")
    else:
        report(True, f"incidents file {settings.incidents_path}: {len(memory.incidents)} "
                     f"incidents, {memory.action_count} actions")
        _doctor_index(settings, engine, memory, report)
    incidents_dir = (settings.incidents_path if settings.incidents_path.is_dir()
                     else settings.incidents_path.parent)
    for place, setting in ((settings.data_dir, "TRIAGE_DATA_DIR"),
                           (incidents_dir, "TRIAGE_INCIDENTS")):
        _doctor_writable(place, setting, report)
    _doctor_embedder(settings, engine, report)
    if settings.index_uri:
        _doctor_shared(settings, engine, report)
    if settings.offline:
        print("note TRIAGE_OFFLINE=1: no model will be called; briefings are deterministic")
        return EXIT_BAD_INPUT if problems else EXIT_OK
    wanted = [m for m in (settings.model, settings.embed_model) if m]
    if not settings.model:
        print("note no chat model configured: briefings are deterministic\n"
              "      → to use one: ollama pull qwen2.5:7b && export TRIAGE_MODEL=qwen2.5:7b")
    if not wanted:
        return EXIT_BAD_INPUT if problems else EXIT_OK
    # (the model client, httpx and ollama only when a model is to be asked about)
    from console.engine.model.client import ModelClient, ModelUnavailable, is_pulled

    host = settings.ollama_host or "http://127.0.0.1:11434"
    try:
        pulled = ModelClient(settings.ollama_host, wanted[0], timeout=5.0).list_models()
    except ModelUnavailable as exc:
        answered = not_ollama(exc)
        if answered is not None:
            # Something answers there, but not Ollama: "start it" or "pull the model" would
            # send the engineer the wrong way.
            report(False, f"not an Ollama server at {host} ({answered}): something else "
                          "answers there",
                   "set OLLAMA_HOST to where Ollama runs (its default is "
                   "http://127.0.0.1:11434), or start it there with `ollama serve`")
        else:
            report(False, f"Ollama at {host}: {exc}",
                   "start it with `ollama serve`, or set OLLAMA_HOST to where it runs")
        return EXIT_BAD_INPUT
    report(True, f"Ollama reachable at {host} ({len(pulled)} models pulled)")
    for role, model in (("chat model", settings.model), ("embedding model", settings.embed_model)):
        if model:
            report(is_pulled(model, pulled), f"{role} {model} pulled", f"ollama pull {model}")
    return EXIT_BAD_INPUT if problems else EXIT_OK


def not_ollama(exc: BaseException) -> str | None:
    """How a server that is not Ollama answered its model listing (``HTTP 404``, ``not
    Ollama's JSON``), or None when nothing answered (refused, timed out). Real Ollama always
    serves ``/api/tags``: an HTTP error or a body that is not its JSON comes from something
    else listening there (a web server, a proxy's error page)."""
    import ollama

    cause = exc.__cause__
    if isinstance(cause, ollama.ResponseError):
        return f"HTTP {cause.status_code}"
    if isinstance(cause, ValueError):  # JSON that does not parse, or not the listing's shape
        return "its answer to /api/tags is not Ollama's JSON"
    return None


def _doctor_index(settings: Settings, engine: TriageEngine, memory: LoadedMemory,
                  report: Report) -> None:
    """Is the local index fresh and whole? Only a note when recall reads a shared index."""
    state, mismatch = engine.index_on_disk(memory)
    if settings.index_uri and (state != "fresh" or mismatch is not None):
        print(f"note local index {state} ({settings.index_dir}): recall reads the shared "
              "index; a local one is only a fallback (`triage index --pull` or `triage "
              "index`)")
        return
    report(state == "fresh" and mismatch is None,
           f"index {state if mismatch is None else 'does not match itself: ' + mismatch}"
           f" ({settings.index_dir})",
           "run `triage index` (the console also rebuilds it on start)")


def _doctor_writable(place: Path, setting: str, report: Report) -> None:
    """Can a save (incidents) or the index (data dir) be written there? A 64 KB probe, removed."""
    import tempfile

    from store.faults import fault_hint, fault_name

    if not place.is_dir():
        return  # the data dir is made on first use; a missing incidents dir fails elsewhere
    try:
        with tempfile.TemporaryFile(dir=place) as probe:
            probe.write(b"\0" * 65536)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:
        report(False, f"{place} ({setting}) cannot be written: {fault_name(exc)}",
               fault_hint(exc, place, setting))
        return
    report(True, f"{place} ({setting}) is writable", "")


def _doctor_shared(settings: Settings, engine: TriageEngine,
                   report: Report) -> None:
    """Is the shared index's store reachable, is a version published, does its embedder match
    this console's? And how old is the pulled copy, if any?"""
    import time

    from store.pulled import read_pulled
    from store.shared import SharedUnavailable, read_current

    store = settings.shared_store()
    pulled = read_pulled(settings.data_dir)
    if pulled is not None:
        print(f"note pulled copy of shared {pulled.version.label}, {pulled.age()} old "
              f"(published {pulled.version.published_at})")
    if settings.offline:
        print(f"note TRIAGE_OFFLINE=1: the shared index at {store.describe()} is not contacted")
        return
    from store.index import lancedb_module

    lancedb_module()  # (imported before the clock starts: ~1 s that is not the store's)
    started = time.monotonic()
    try:
        version = read_current(store)
    except SharedUnavailable as exc:
        report(False, f"shared index at {store.describe()}: {exc.title.split(': ', 1)[-1]} "
                      f"({time.monotonic() - started:.1f} s)", exc.hint)
        return
    if version is None:
        report(False, f"shared index at {store.describe()}: reachable, nothing published yet",
               "publish it: `triage index --publish` (CI does this after a merge)")
        return
    report(True, f"shared index at {store.describe()}: reachable "
                 f"({time.monotonic() - started:.1f} s), current {version.describe()}", "")
    embedder = engine.embedder()
    mine = embedder.id if embedder else None
    report(version.embedder == mine,
           f"shared {version.label} embedder {version.embedder or 'none'} matches this "
           f"console's ({mine or 'none'})",
           "set TRIAGE_EMBED_MODEL to the shared index's embedder, or publish it again with "
           "this one: `triage index --publish`")


def _doctor_embedder(settings: Settings, engine: TriageEngine,
                     report: Report) -> None:
    """Is the in-process embedder there? Without it recall is lexical only (and says so)."""
    from store.minilm import MiniLMEmbedder

    embedder = engine.embedder()
    if embedder is None:
        print("note TRIAGE_EMBED_MODEL=none: recall is lexical only (BM25 and term coverage)")
        return
    if not isinstance(embedder, MiniLMEmbedder):
        return  # an Ollama embedding model: checked with the other Ollama models below
    reason = embedder.available()
    report(reason is None, f"embedder {embedder.id} (in-process, bundled weights)"
           + (" — recall is lexical only until it is installed" if reason else ""),
           reason or "")
