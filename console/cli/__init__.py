"""The `triage` CLI: the headless subcommands, each returning an exit code (see __main__).

One module a command — ``brief`` (with ``--verify``), ``index`` (with the shared index's
``--publish``, ``--pull``, ``--prune``), ``check``, ``add``, ``replay`` (``drill`` and
``eval``: replaying the memory to measure it), ``doctor`` — each reaching the memory, recall,
briefings, verification and replays through the engine's front door
(console/engine/engine.py, TriageEngine); ``errors`` is the one way an error is shown,
``progress`` the progress lines on stderr.

Importing them all is cheap: what only one command uses (the briefing pipeline, the model
client, LanceDB, the embedder) is imported where it is used, so `triage index` and `triage
doctor` on a fresh index load none of it (tests/test_headless_imports.py).
"""

from console.cli.add import add
from console.cli.brief import brief
from console.cli.check import check
from console.cli.doctor import doctor
from console.cli.errors import Command, report_error
from console.cli.index import index
from console.cli.replay import drill, eval_text, evaluate, replay_text

# `triage <name>` → its command (console/__main__.py parses the arguments and dispatches).
COMMANDS: dict[str, Command] = {"brief": brief, "index": index, "check": check, "add": add,
                                "eval": evaluate, "drill": drill, "doctor": doctor}

__all__ = ["COMMANDS", "add", "brief", "check", "doctor", "drill", "replay_text", "eval_text",
           "evaluate", "index", "report_error"]
