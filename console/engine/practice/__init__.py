"""Practice: measuring the memory's claims and rehearsing with the console.

- ``replay``   the leave-one-out replay (`triage drill`, F7): each incident as an alert with
               itself hidden; the track record the console shows
- ``evaluate`` `triage eval`: recall and states over known alerts, the figures
- ``gameday``  a game day (`triage --drill`): practice notes, the end-of-drill report
"""

from console.engine.practice.evaluate import EvalReport, eval_index, run_eval
from console.engine.practice.replay import ReplayReport, run_replays, save_replays

__all__ = ["ReplayReport", "EvalReport", "eval_index", "run_replays", "run_eval",
           "save_replays"]
