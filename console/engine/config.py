"""Settings read once from the environment and handed to the engine (no globals).

A plain frozen dataclass, not a pydantic model: the console imports it before its first
paint, and pydantic's import alone cost ~70 ms of a ~200 ms budget (bench/first_paint.py).
``from_env`` does the parsing a model would; ``__post_init__`` accepts str paths.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def _default_data_dir() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("triage-console", appauthor=False))


class Secret:
    """A credential that never shows itself: repr and str are masked (like pydantic's
    SecretStr); ``get_secret_value`` is the one way to read it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def wall_clock() -> datetime:
    return datetime.now(UTC)


# What Settings.now() reads when no moment is fixed (tests/conftest.py sets it for the suite).
clock: Callable[[], datetime] = wall_clock


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Where the memory lives and which models to use; see README for each variable."""

    incidents_path: Path
    data_dir: Path
    ollama_host: str | None = None
    model: str | None = None
    embed_model: str | None = None
    offline: bool = False
    model_timeout: float = 60.0
    # Seconds without a byte from the model server before it counts as hung (None: the
    # attempt's timeout), and for the whole draft, every attempt (None: twice the timeout). A
    # CPU model reads its prompt for tens of seconds before its first token: see the README.
    model_stall: float | None = None
    model_budget: float | None = None
    # Incidents recorded in a game day (`drill: true`) are hidden from every recall unless
    # this is set (`--include-drills`): a practice run's notes are never real evidence.
    include_drills: bool = False
    # Game-day mode (`triage --drill`, TRIAGE_DRILL=1): a DRILL banner on every screen, every
    # audit line tagged, a timeline recorded, postmortems saved with `drill: true`.
    game_day: bool = False
    # A team's shared index on object storage (store/shared.py): TRIAGE_INDEX_URI and the usual
    # AWS variables; the secret is never shown (Secret).
    index_uri: str | None = None
    s3_endpoint: str | None = None
    s3_region: str | None = None
    s3_access_key_id: str | None = None
    s3_secret_access_key: Secret | None = None
    s3_session_token: Secret | None = None
    s3_allow_http: bool | None = None  # None: allowed when the endpoint is http://
    store_timeout: float = 5.0  # seconds per request to the store (TRIAGE_S3_TIMEOUT)
    # "Now" for the age of evidence (TRIAGE_NOW: an ISO date or time, for demos and tests, so
    # "over a year old" does not change with the calendar); None: the wall clock.
    fixed_now: datetime | None = None
    # The bearer token a webhook posted to `triage --listen` must carry (TRIAGE_LISTEN_TOKEN);
    # None: any local sender is accepted (the default host is loopback only).
    listen_token: Secret | None = None

    @property
    def stall_seconds(self) -> float:
        """No byte from the model server for this long: it is hung (TRIAGE_MODEL_STALL)."""
        return self.model_stall if self.model_stall is not None else self.model_timeout

    @property
    def budget_seconds(self) -> float:
        """Every attempt of one draft together (TRIAGE_MODEL_BUDGET; default 2 × timeout)."""
        return self.model_budget if self.model_budget is not None else 2 * self.model_timeout

    def now(self) -> datetime:
        """``fixed_now`` (TRIAGE_NOW), else the module's clock (the wall clock; the test suite
        sets its own, so nothing it checks moves with the calendar)."""
        return self.fixed_now if self.fixed_now is not None else clock()

    def __post_init__(self) -> None:
        for name in ("incidents_path", "data_dir"):  # callers may hand in str paths
            object.__setattr__(self, name, Path(getattr(self, name)))
        for name in ("s3_secret_access_key", "s3_session_token", "listen_token"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, _secret(value))

    def replace(self, **changes: Any) -> Settings:
        """These settings with ``changes`` (e.g. ``include_drills=True``)."""
        return dataclasses.replace(self, **changes)

    def shared_store(self) -> Any:
        """The shared index's store.shared.Store, or None without TRIAGE_INDEX_URI."""
        if not self.index_uri:
            return None
        from store.shared import Store, storage_options

        secret = self.s3_secret_access_key.get_secret_value() if self.s3_secret_access_key else None
        token = self.s3_session_token.get_secret_value() if self.s3_session_token else None
        return Store(self.index_uri, storage_options(
            self.s3_endpoint, self.s3_region, self.s3_access_key_id, secret, token,
            self.s3_allow_http, self.store_timeout), self.s3_endpoint,
            deadline=min(6.0, 2 * self.store_timeout))

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
    def replay_path(self) -> Path:
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
            ollama_host=_ollama_host(env.get("OLLAMA_HOST")),
            model=env.get("TRIAGE_MODEL") or None,
            embed_model=env.get("TRIAGE_EMBED_MODEL") or None,
            offline=env.get("TRIAGE_OFFLINE", "").strip().lower() in ("1", "true", "yes"),
            model_timeout=_seconds(env, "TRIAGE_MODEL_TIMEOUT") or 60.0,
            model_stall=_seconds(env, "TRIAGE_MODEL_STALL"),
            model_budget=_seconds(env, "TRIAGE_MODEL_BUDGET"),
            game_day=env.get("TRIAGE_DRILL", "").strip().lower() in ("1", "true", "yes"),
            index_uri=env.get("TRIAGE_INDEX_URI") or None,
            s3_endpoint=env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None,
            s3_region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
            s3_access_key_id=env.get("AWS_ACCESS_KEY_ID") or None,
            s3_secret_access_key=_secret(env.get("AWS_SECRET_ACCESS_KEY")),
            s3_session_token=_secret(env.get("AWS_SESSION_TOKEN")),
            s3_allow_http=_flag(env.get("TRIAGE_S3_ALLOW_HTTP")),
            store_timeout=_seconds(env, "TRIAGE_S3_TIMEOUT") or 5.0,
            fixed_now=_moment(env.get("TRIAGE_NOW")),
            listen_token=_secret((env.get("TRIAGE_LISTEN_TOKEN") or "").strip() or None),
        )


def _seconds(env: Mapping[str, str], name: str) -> float | None:
    """A positive number of seconds from ``env[name]`` (None when unset or blank)."""
    value = (env.get(name) or "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"{name}={value[:40]!r} is not a number of seconds above 0 (e.g. 120); "
                         "unset it for the default")
    return seconds


def _ollama_host(value: str | None) -> str | None:
    """OLLAMA_HOST as the ollama client reads it (``host``, ``host:port``, ``http[s]://…``,
    ``[v6]:port``; no scheme means http), refused here when that client could not use it —
    it would raise from deep inside the first request instead. None when unset or blank."""
    if value is None or not value.strip():
        return None
    host = value.strip()
    scheme, _, rest = host.partition("://")
    if not rest:
        scheme, rest = "http", host
    from urllib.parse import urlsplit

    try:
        if scheme not in ("http", "https"):
            raise ValueError(f"scheme {scheme[:20]!r} is not http or https")
        if any(ch.isspace() for ch in rest):
            raise ValueError("it holds a space")
        split = urlsplit(f"{scheme}://{rest}")
        split.port  # noqa: B018 - reading it checks it (a port out of range, not a number)
    except ValueError as exc:
        raise ValueError(f"OLLAMA_HOST={value[:60]!r} is not a host the model client can use "
                         f"({exc}); e.g. http://127.0.0.1:11434 — unset it for the default"
                         ) from None
    return host


def _moment(value: str | None) -> datetime | None:
    """TRIAGE_NOW as an aware datetime (a date or a time without zone is UTC); None unset."""
    if value is None or not value.strip():
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"TRIAGE_NOW={value[:40]!r} is not an ISO date or time (e.g. 2026-03-14 "
                         "or 2026-03-14T02:05:00Z); unset it to use the clock") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _flag(value: str | None) -> bool | None:
    """A yes/no variable; None when unset (the default applies)."""
    if value is None or not value.strip():
        return None
    return value.strip().lower() in ("1", "true", "yes", "on")


def _secret(value: str | None) -> Secret | None:
    return Secret(value) if value else None
