"""The model layer: one call path for every backend.

``await get_model(spec).generate(request) -> Call``. Backends register their spec prefix where they are
defined (``toolkit.llm.registry``); this package imports nothing from the rest of the toolkit.
"""

from toolkit.llm import local, offline, openai_backend  # noqa: F401  (each registers its specs)
from toolkit.llm.model import Attempt, Call, Model, ModelConfig, cost_usd, get_model, mask_url
from toolkit.llm.registry import PROVIDERS, Backend, known_specs, parse_spec, register
from toolkit.llm.request import Completion, LLMError, Request, Sampling, TransientError

__all__ = ["PROVIDERS", "Attempt", "Backend", "Call", "Completion", "LLMError", "Model", "ModelConfig", "Request",
           "Sampling",
           "TransientError", "cost_usd", "get_model", "known_specs", "mask_url", "parse_spec", "register"]
