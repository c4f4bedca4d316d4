"""The model's part: asking a local Ollama model, and keeping only what the memory backs.

- ``client``    the Ollama HTTP client (streaming, timeouts, "not pulled")
- ``prompts``   the system prompt and the fenced memory the model reads
- ``draft``     parsing the model's JSON draft
- ``steer``     one model run: prompt → stream → draft → guards, retried once
- ``guards``    every claim of a draft checked against the cited records
- ``grounding`` commands and sentences the cited records do not back
- ``citations`` which incident and action ids a text mentions
- ``merge``     the model's draft laid over the memory's verdict (it may only lower it)
"""

from console.engine.model.client import ModelClient, ModelUnavailable, Progress
from console.engine.model.merge import model_briefing
from console.engine.model.steer import SteerResult, run_model

__all__ = ["ModelClient", "ModelUnavailable", "Progress", "SteerResult", "model_briefing",
           "run_model"]
