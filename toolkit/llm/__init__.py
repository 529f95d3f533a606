"""One async interface to any model: ``await get_backend(spec).complete(request) -> Completion``."""

from toolkit.llm.base import Backend, Completion, LLMError, Request, TransientError
from toolkit.llm.spec import get_backend, is_llm_spec, parse_spec


async def complete(spec_or_backend, request: Request) -> Completion:
    backend = get_backend(spec_or_backend) if isinstance(spec_or_backend, str) else spec_or_backend
    return await backend.complete(request)


__all__ = ["Backend", "Completion", "LLMError", "Request", "TransientError", "complete", "get_backend",
           "is_llm_spec", "parse_spec"]
