"""The briefing: from an alert and what recall found to the Briefing every screen shows.

- ``alert``         reading an alert (text, JSON, Alertmanager, multi-alert payloads)
- ``request``       one briefing request with its id and cancel token
- ``models``        the Briefing and its parts (the `triage brief --json` contract)
- ``applicability`` which recalled incidents are the same failure, here or elsewhere
- ``verdict``       the memory's verdict: state, lead fix, warnings, conflicts
- ``confidence``    every confidence figure and the rule it came from
- ``deterministic`` the briefing written from memory alone (no model)
- ``batch``         a payload of several alerts, recalled group by group
- ``fixes``, ``worsened``, ``tripwire``, ``instructions``, ``audit``: the rules they share
"""

from console.engine.briefing.alert import Alert, AlertError, parse_alert
from console.engine.briefing.models import Briefing, RecalledRecord, Recommendation, State
from console.engine.briefing.request import BriefingCancelled, BriefingRequest, CancelToken
from console.engine.briefing.verdict import Verdict, verdict

__all__ = ["Alert", "AlertError", "Briefing", "BriefingCancelled", "BriefingRequest",
           "CancelToken", "RecalledRecord", "Recommendation", "State", "Verdict", "parse_alert",
           "verdict"]
