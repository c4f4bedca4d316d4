"""Verification (F6): doubting a briefing's lead before anyone acts on it.

- ``method``    the method: doubts, questions, probes of the memory, the disposition
- ``passes``    one pass end to end (plan → answers → conclude → artifact), CLI and console
- ``assist``    the model's optional help: wording the questions, picking probes
- ``probes``    the team's declared probes (probes.yaml)
- ``probe_run`` running one declared probe, bounded and sandboxed
"""

from console.engine.verification.passes import Plan, conclude, needed, plan, run_pass
from console.engine.verification.probes import ProbeFileError, load_probes, probes_path

__all__ = ["Plan", "ProbeFileError", "conclude", "load_probes", "needed", "plan",
           "probes_path", "run_pass"]
