"""Hypothesis profiles: a small one for `make test`, ≥10,000 examples for `make fuzz`.

The default profile is derandomised, so `make test` is repeatable; `make fuzz` draws fresh
examples each run (HYPOTHESIS_PROFILE=fuzz, TRIAGE_FUZZ_EXAMPLES to change the count).
Neither has a deadline: these machines are shared, and speed is not what is tested here.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile("default", max_examples=150, deadline=None, derandomize=True,
                          suppress_health_check=_SLOW_OK, database=None)
settings.register_profile("fuzz", max_examples=int(os.environ.get("TRIAGE_FUZZ_EXAMPLES",
                                                                  "10000")),
                          deadline=None, suppress_health_check=_SLOW_OK, database=None,
                          print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
