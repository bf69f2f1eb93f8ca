"""What the pipeline needs from a chat model, and the two kinds of failure it must tell apart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class ChatMessage:
    role: Role
    content: str


@dataclass(frozen=True)
class CompletionParams:
    """Everything besides the messages that changes a reply; part of the response-cache key."""

    temperature: float = 0.0
    max_tokens: int = 512
    json_mode: bool = False
    seed: int | None = 0


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str


@runtime_checkable
class ChatModel(Protocol):
    @property
    def model_id(self) -> str:
        """Identifies the backend and model (``openai:gpt-4o-mini``, ``local:smollm2-135m-instruct``);
        part of every response-cache key and of the metadata of every generated example."""
        ...

    @property
    def model_name(self) -> str:
        """The name the price table knows the model by (``gpt-4o-mini``)."""
        ...

    def complete(self, messages: Sequence[ChatMessage], params: CompletionParams) -> Completion:
        """One reply. Raises ``TransientLLMError`` for faults worth retrying, ``PermanentLLMError`` otherwise."""
        ...


class LLMError(RuntimeError):
    pass


class TransientLLMError(LLMError):
    """Rate limits, 5xx, timeouts, dropped connections: retry with backoff (honouring ``retry_after``)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentLLMError(LLMError):
    """Bad request, bad key, unknown model: retrying cannot help."""
