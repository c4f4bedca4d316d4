"""Settings read once from the environment and handed to the engine (no globals)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict


def _default_data_dir() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("triage-console", appauthor=False))


class Settings(BaseModel):
    """Where the memory lives and which models to use; see README for each variable."""

    model_config = ConfigDict(frozen=True)

    incidents_path: Path
    data_dir: Path
    ollama_host: str | None = None
    model: str | None = None
    embed_model: str | None = None
    offline: bool = False
    model_timeout: float = 60.0
    # Incidents recorded in a game day (`drill: true`) are hidden from every recall unless
    # this is set (`--include-drills`): a practice run's notes are never real evidence.
    include_drills: bool = False
    # Game-day mode (`triage --drill`, TRIAGE_DRILL=1): a DRILL banner on every screen, every
    # audit line tagged, a timeline recorded, postmortems saved with `drill: true`.
    game_day: bool = False

    def hidden_drills(self, drill_ids: frozenset[str]) -> frozenset[str]:
        """The drill incidents a recall must not see under these settings."""
        return frozenset() if self.include_drills else drill_ids

    @property
    def index_dir(self) -> Path:
        """The LanceDB index derived from the incidents (see store/index.py)."""
        from store.index import INDEX_DIR

        return self.data_dir / INDEX_DIR

    @property
    def audit_path(self) -> Path:
        """One JSON line per model attempt and per dropped or cancelled briefing."""
        return self.data_dir / "audit.jsonl"

    @property
    def embedding_cache(self) -> Path:
        """Vectors by embedder and text hash, shared by the index and `triage eval`."""
        return self.data_dir / "embeddings.sqlite"

    @property
    def calibration_path(self) -> Path:
        """A team's own recall calibration (bench/recall_eval.py --write), if any."""
        return self.data_dir / "calibration.json"

    @property
    def drill_path(self) -> Path:
        """The last `triage drill --all` result (the console's track record per tier)."""
        return self.data_dir / "drill.json"

    def eval_dir(self, source_hash: str) -> Path:
        """Where `triage eval` builds its own index of a memory: never over the team's."""
        return self.data_dir / "eval" / source_hash[:16]

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        return cls(
            incidents_path=Path(env.get("TRIAGE_INCIDENTS") or "incidents.yaml"),
            data_dir=Path(env["TRIAGE_DATA_DIR"]) if env.get("TRIAGE_DATA_DIR")
            else _default_data_dir(),
            ollama_host=env.get("OLLAMA_HOST") or None,
            model=env.get("TRIAGE_MODEL") or None,
            embed_model=env.get("TRIAGE_EMBED_MODEL") or None,
            offline=env.get("TRIAGE_OFFLINE", "").strip().lower() in ("1", "true", "yes"),
            model_timeout=float(env.get("TRIAGE_MODEL_TIMEOUT") or 60.0),
            game_day=env.get("TRIAGE_DRILL", "").strip().lower() in ("1", "true", "yes"),
        )
