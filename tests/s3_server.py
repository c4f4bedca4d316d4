"""A real S3 protocol server for tests: moto's server mode on 127.0.0.1, a free port, in a
subprocess (stopped after). LanceDB talks to it with its own object-store client, as it would
to S3 or MinIO — nothing is mocked in-process."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

KEY_ID, SECRET, REGION = "testing-key", "testing-secret", "us-east-1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class S3Server:
    """One moto server process; ``endpoint`` is its http:// URL."""

    port: int
    process: subprocess.Popen[bytes] | None = None
    auth: bool = False  # check credentials (moto's IAM): unknown keys get 403 InvalidAccessKeyId

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        binary = Path(sys.executable).with_name("moto_server")
        command = ([str(binary)] if binary.exists() else
                   [sys.executable, "-m", "moto.server"])
        env = {**os.environ, **({"INITIAL_NO_AUTH_ACTION_COUNT": "0"} if self.auth else {})}
        self.process = subprocess.Popen([*command, "-H", "127.0.0.1", "-p", str(self.port)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        env=env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1).close()
                return
            except (urllib.error.URLError, OSError):
                if self.process.poll() is not None:
                    raise RuntimeError("moto_server exited at start") from None
                time.sleep(0.1)
        raise RuntimeError("moto_server did not start within 30 s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def make_bucket(self, name: str) -> None:
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        urllib.request.urlopen(request, timeout=5).close()

    def env(self, bucket: str, prefix: str = "team") -> dict[str, str]:
        """The variables a console or CI job sets to use the shared index here."""
        return {"TRIAGE_INDEX_URI": f"s3://{bucket}/{prefix}", "AWS_ENDPOINT_URL": self.endpoint,
                "AWS_REGION": REGION, "AWS_ACCESS_KEY_ID": KEY_ID,
                "AWS_SECRET_ACCESS_KEY": SECRET, "TRIAGE_S3_TIMEOUT": "3"}


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    if shutil.which("moto_server") is None and not Path(sys.executable).with_name(
            "moto_server").exists():
        pytest.skip("moto[server] is not installed (pip install -e '.[test]')")
    server = S3Server(free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(s3_server: S3Server) -> str:
    """A fresh bucket per test."""
    name = f"b{uuid.uuid4().hex[:12]}"
    s3_server.make_bucket(name)
    return name


@pytest.fixture
def s3_env(s3_server: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch,
           ) -> dict[str, str]:
    """The shared-index variables set in this process's environment (for in-process CLI runs
    and subprocesses alike)."""
    env = s3_server.env(s3_bucket)
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_REGION", "AWS_SESSION_TOKEN",
                 "TRIAGE_S3_ALLOW_HTTP", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return dict(os.environ)
