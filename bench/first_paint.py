"""First paint of the console vs a bare Textual app, each in a fresh interpreter.

Prints medians and the ratio (console / bare). Bare and console runs alternate, so a noisy
moment on the machine hits both alike. Run: .venv/bin/python bench/first_paint.py [RUNS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile

RUNS = 15

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
    def on_mount(self):  # Textual runs TriageApp.on_mount as well: no super() call here
        self.call_after_refresh(self.done)
    def done(self):
        import sys
        if not isinstance(self.screen, MainScreen) or not self.screen.is_mounted:
            self.call_after_refresh(self.done); return
        assert sum(isinstance(s, MainScreen) for s in self.screen_stack) == 1
        print(time.perf_counter() - t0, "lancedb" in sys.modules); self.exit()
Timed(Settings(incidents_path=Path("incidents.yaml"), data_dir=Path({data!r}))).run(
    headless=True, size=(120, 40))
"""


def measure(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0])


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else RUNS
    data = tempfile.mkdtemp()
    bare: list[float] = []
    console: list[float] = []
    for _ in range(runs):  # interleaved: bare, console, bare, console…
        bare.append(measure(BARE))
        console.append(measure(CONSOLE.format(data=data)))
    bare_ms = statistics.median(bare) * 1000
    console_ms = statistics.median(console) * 1000
    print(f"first paint, median of {runs}: bare Textual {bare_ms:.0f} ms, "
          f"console {console_ms:.0f} ms, ratio {console_ms / bare_ms:.2f}x")


if __name__ == "__main__":
    main()
