"""Chat completions from any OpenAI-protocol endpoint: OpenAI, Azure-style gateways, vLLM, Ollama, llama.cpp.

The SDK's own retries are switched off: ``LLMClient`` retries, so every retry is counted and the rate
limit applies to retries too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from .base import ChatMessage, Completion, CompletionParams, PermanentLLMError, TransientLLMError


class OpenAIChatModel:
    def __init__(
        self,
        model: str = "gpt-4o-mini",
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        client: Any = None,
    ) -> None:
        if client is None:
            from openai import OpenAI

            client = OpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)
        self._client = client
        self._model = model
        # Another server may answer differently under the same model name: its host is part of the id.
        host = urlsplit(base_url).netloc if base_url else ""
        self._model_id = f"openai:{model}" if host in ("", "api.openai.com") else f"openai:{model}@{host}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def model_name(self) -> str:
        return self._model

    def complete(self, messages: Sequence[ChatMessage], params: CompletionParams) -> Completion:
        import openai

        extra: dict[str, Any] = {}
        if params.json_mode:
            extra["response_format"] = {"type": "json_object"}
        if params.seed is not None:
            extra["seed"] = params.seed
        try:
            response = self._client.chat.completions.create(
                model=self._model,
                messages=[{"role": m.role, "content": m.content} for m in messages],
                temperature=params.temperature,
                max_tokens=params.max_tokens,
                **extra,
            )
        except openai.RateLimitError as exc:
            raise TransientLLMError(f"rate limited (429): {_message(exc)}", _retry_after(exc)) from None
        except openai.APITimeoutError:
            raise TransientLLMError("the request timed out") from None
        except openai.APIConnectionError as exc:
            raise TransientLLMError(f"connection failed: {exc}") from None
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code in (408, 409):
                raise TransientLLMError(
                    f"server error {exc.status_code}: {_message(exc)}", _retry_after(exc)
                ) from None
            raise PermanentLLMError(f"request refused with {exc.status_code}: {_message(exc)}") from None
        if not response.choices:
            raise TransientLLMError("the reply holds no choices")
        usage = response.usage
        return Completion(
            text=response.choices[0].message.content or "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            model=response.model or self._model,
        )


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])[:300]
    return str(getattr(exc, "message", exc))[:300]


def _retry_after(exc: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (OpenAI sends both on 429)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(key)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            continue
    return None
