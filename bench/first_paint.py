"""First paint of the console vs a bare Textual app, each in a fresh interpreter.

Prints medians and the ratio (console / bare). Run: .venv/bin/python bench/first_paint.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile

RUNS = 7

BARE = """
import time; t0 = time.perf_counter()
from textual.app import App
from textual.widgets import Static
class Bare(App):
    def compose(self): yield Static("hello")
    def on_mount(self): self.call_after_refresh(self.done)
    def done(self): print(time.perf_counter() - t0); self.exit()
Bare().run(headless=True, size=(120, 40))
"""

CONSOLE = """
import time; t0 = time.perf_counter()
from pathlib import Path
from console.engine.config import Settings
from console.ui.app import TriageApp
from console.ui.screens.main import MainScreen
class Timed(TriageApp):
    def on_mount(self):
        super().on_mount(); self.call_after_refresh(self.done)
    def done(self):
        import sys
        if not isinstance(self.screen, MainScreen) or not self.screen.is_mounted:
            self.call_after_refresh(self.done); return
        print(time.perf_counter() - t0, "lancedb" in sys.modules); self.exit()
Timed(Settings(incidents_path=Path("incidents.yaml"), data_dir=Path({data!r}))).run(
    headless=True, size=(120, 40))
"""


def measure(code: str) -> list[float]:
    times = []
    for _ in range(RUNS):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.split()
        times.append(float(out[0]))
    return times


def main() -> None:
    data = tempfile.mkdtemp()
    bare = statistics.median(measure(BARE))
    console = statistics.median(measure(CONSOLE.format(data=data)))
    print(f"first paint, median of {RUNS}: bare Textual {bare * 1000:.0f} ms, "
          f"console {console * 1000:.0f} ms, ratio {console / bare:.2f}x")


if __name__ == "__main__":
    main()
