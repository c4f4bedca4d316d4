"""`triage index`: the index on disk; ``--publish``, ``--pull`` and ``--prune`` the shared one."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from console.cli.errors import command, fail
from console.cli.progress import embedding_progress
from console.engine.config import Settings
from console.engine.engine import TriageEngine
from console.exit_codes import EXIT_OK

if TYPE_CHECKING:
    from store.shared import Store


@command
def index(settings: Settings, args: argparse.Namespace) -> int:
    """Build (or check and reuse) the index on disk; a write that fails exits 1 naming the
    fault and the place — it is not held in memory here, that would build nothing.
    ``--publish`` builds and publishes a version of the shared index (TRIAGE_INDEX_URI);
    ``--pull`` copies the current version into the data dir for offline use."""
    if getattr(args, "keep", None) is not None and not getattr(args, "prune", False):
        return fail("--keep N goes with --prune")
    if any(getattr(args, flag, False) for flag in ("publish", "pull", "prune")):
        return _index_shared(settings, args)
    status = TriageEngine(settings).load(rebuild=args.rebuild, on_disk=True,
                                         progress=embedding_progress("embedding incidents"))
    for notice in status.notices:
        print(notice)
    print(f"index {status.index}: {status.incidents} incidents, {status.actions} actions "
          f"from {status.source} → {settings.index_dir}")
    return EXIT_OK


def _index_shared(settings: Settings, args: argparse.Namespace) -> int:
    """`triage index --publish | --pull | --prune`: the shared index on object storage."""
    store = settings.shared_store()
    if store is None:
        return fail("--publish, --pull and --prune need TRIAGE_INDEX_URI (e.g. "
                    "s3://bucket/prefix) and the AWS variables for the store (see README)")
    publishing, pulling = getattr(args, "publish", False), getattr(args, "pull", False)
    pruning, keep = getattr(args, "prune", False), getattr(args, "keep", None)
    if pulling and (publishing or pruning):
        return fail("give --pull alone (--publish and --prune change the store)")
    if not publishing:
        return _prune(store, keep) if pruning else _pull(store, settings)
    engine = TriageEngine(settings)
    memory = engine.current_memory()
    result = engine.publish_index(store, memory, when=getattr(args, "source_time", None),
                                  force=bool(getattr(args, "force", False)),
                                  progress=embedding_progress("embedding incidents"))
    for notice in result.notices:
        print(notice)
    if result.published is not None:
        print(f"published {result.published.describe()} to {store.describe()}, built from "
              f"{settings.incidents_path} (content {memory.source_hash[:12]}, written "
              f"{result.published.source_time})")
    return _prune(store, keep) if pruning else EXIT_OK


def _pull(store: Store, settings: Settings) -> int:
    from store.pulled import pull

    pulled = pull(store, settings.data_dir)
    print(f"pulled {pulled.version.describe()} from {store.describe()} → {settings.data_dir}; "
          "the console uses it when the store is out of reach (or with TRIAGE_OFFLINE=1)")
    return EXIT_OK


def _prune(store: Store, keep: int | None) -> int:
    from store.shared import DEFAULT_KEEP, prune

    result = prune(store, keep or DEFAULT_KEEP)
    labels = ", ".join(v.label for v in result.removed) or "none"
    print(f"pruned {len(result.removed)} old version(s) of {store.describe()}: {labels}; kept "
          f"{', '.join(v.label for v in result.kept) or 'none'}"
          + (f"; {result.gone} pruned earlier" if result.gone else ""))
    return EXIT_OK

