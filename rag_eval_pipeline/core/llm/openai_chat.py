"""Chat completions from any OpenAI-protocol endpoint: OpenAI, Azure-style gateways, vLLM, Ollama, llama.cpp.

The SDK's own retries are switched off: ``LLMClient`` retries, so every retry is counted and the rate
limit applies to retries too. A 200 reply that is not a chat completion (JSON cut short, a gateway's HTML
page, an empty body, JSON of another shape) is a transient fault like a 502, not an AttributeError; the
server's text in every error is redacted (some gateways quote the API key back).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from ..redaction import redact
from .base import ChatMessage, Completion, CompletionParams, PermanentLLMError, TransientLLMError

_PREVIEW_CHARS = 120


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
            raise TransientLLMError(redact(f"connection failed: {exc}")) from None
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code in (408, 409):
                raise TransientLLMError(
                    f"server error {exc.status_code}: {_message(exc)}", _retry_after(exc)
                ) from None
            raise PermanentLLMError(f"request refused with {exc.status_code}: {_message(exc)}") from None
        except json.JSONDecodeError as exc:
            # a gateway cut the body short or sent an empty one: a glitch that a retry usually cures
            raise TransientLLMError(
                f"malformed reply: the body is not valid JSON ({exc.msg} at character {exc.pos}): "
                f"{_preview(exc.doc)}"
            ) from None
        except openai.APIError as exc:  # the SDK could not read the reply (response validation)
            raise TransientLLMError(f"malformed reply: {_message(exc)}") from None
        return self._completion(response)

    def _completion(self, response: Any) -> Completion:
        """The reply's text and usage, checked: the SDK hands back whatever the body held (a string for
        an HTML page, a half-empty object for JSON of another shape), so a malformed reply is told apart
        here as a transient fault rather than surfacing as an AttributeError."""
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list):
            raise TransientLLMError(f"malformed reply: not a chat completion: {_describe(response)}")
        if not choices:
            raise TransientLLMError("the reply holds no choices")
        message = getattr(choices[0], "message", None)
        content = getattr(message, "content", None)
        if message is None or not (content is None or isinstance(content, str)):
            raise TransientLLMError(
                f"malformed reply: the first choice holds no text message: {_describe(choices[0])}"
            )
        usage = getattr(response, "usage", None)
        model = getattr(response, "model", None)
        return Completion(
            text=content or "",
            prompt_tokens=_count(getattr(usage, "prompt_tokens", 0)),
            completion_tokens=_count(getattr(usage, "completion_tokens", 0)),
            model=model if isinstance(model, str) and model else self._model,
        )


def _count(value: Any) -> int:
    """A token count as reported, 0 when the server reported none or nonsense (usage is advisory)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _preview(text: str) -> str:
    """The start of a body the client could not use, on one line and without secrets."""
    flat = " ".join(text.split())
    if not flat:
        return "an empty body"
    return repr(redact(flat if len(flat) <= _PREVIEW_CHARS else flat[:_PREVIEW_CHARS] + "..."))


def _describe(value: Any) -> str:
    """What came back instead of a chat completion: the server's own error if it sent one with 200."""
    if isinstance(value, str):
        return f"a {len(value)}-character text, {_preview(value)}"
    extra = getattr(value, "model_extra", None) or {}
    error = extra.get("error") if isinstance(extra, dict) else None
    if error is not None:
        return f"the server sent an error with status 200: {_preview(str(error))}"
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # the SDK's object built from JSON of another shape: show that JSON
        return f"the JSON {_preview(json.dumps(dump(exclude_none=True, warnings=False), default=str))}"
    return f"the JSON {_preview(json.dumps(value, default=str))}"


def _message(exc: Any) -> str:
    """The server's error message, cut short and redacted (some gateways echo the API key in it)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return redact(str(error["message"])[:300])
    return redact(str(getattr(exc, "message", exc))[:300])


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
