"""Start and stop tests/realmodel/harness.py (in the cache venv) from the project's Python.

Used by bench/model_check.py and the realmodel tests' session fixture. Stdlib only.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

HARNESS = Path(__file__).resolve().parent / "harness.py"
MODEL_NAME = "qwen2.5-coder:1.5b"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Harness:
    """The harness subprocess on a free port of 127.0.0.1; ``wait_ready`` blocks until the model
    is loaded (it prints READY), ``stop`` ends it (its own pid only)."""

    def __init__(self, python: Path, model: Path, log: Path | None = None, threads: int = 1,
                 name: str = MODEL_NAME) -> None:
        self.port = free_port()
        self.log = log
        self.name = name
        self.stderr_path = (log.with_suffix(".stderr") if log is not None
                            else Path(os.devnull))
        command = [str(python), str(HARNESS), str(self.port), "--model-file", str(model),
                   "--name", name, "--threads", str(threads)]
        if log is not None:
            command += ["--log", str(log)]
        self._stderr = open(self.stderr_path, "w")
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self._stderr,
                                        text=True,
                                        env={**os.environ, "OMP_NUM_THREADS": str(threads)})
        self.host = f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 180.0) -> str:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if line.startswith("READY"):
                return line.strip()
            if not line and self.process.poll() is not None:
                break
        self.stop()
        detail = ""
        if self.stderr_path != Path(os.devnull):
            detail = self.stderr_path.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"the harness did not start (exit {self.process.returncode}) "
                           f"{detail}".strip())

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._stderr.close()

    def __enter__(self) -> Harness:
        self.wait_ready()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
