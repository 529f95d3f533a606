"""The model layer: one call path for every backend.

``await get_model(spec).generate(request) -> Call``. Every built-in backend is listed in
``toolkit.llm.providers`` (imported only when a spec names it); players defined above this layer come in
through entry points (``toolkit.llm.registry``). This package imports nothing from the rest of the toolkit.
See docs/models.md.
"""

from toolkit.llm.backend import Backend
from toolkit.llm.model import Attempt, Call, Model, ModelConfig, cost_usd, mask_url
from toolkit.llm.registry import PROVIDERS, get_model, known_specs, register
from toolkit.llm.spec import Provider, parse_spec
from toolkit.llm.request import Completion, LLMError, Request, Sampling, TransientError

__all__ = ["PROVIDERS", "Attempt", "Backend", "Call", "Completion", "LLMError", "Model", "ModelConfig", "Provider",
           "Request", "Sampling", "TransientError", "cost_usd", "get_model", "known_specs", "mask_url", "parse_spec",
           "register"]
