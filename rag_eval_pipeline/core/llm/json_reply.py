"""Getting a JSON object out of a model's reply, and the prompt that asks it to repair a bad one."""

from __future__ import annotations

import json
import re
from typing import Any

from .base import ChatMessage

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class InvalidReply(ValueError):
    """The reply is not the JSON the prompt asked for; the message says what is wrong."""


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text``, tolerating code fences and prose around it."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        start = candidate.find("{")
        end = candidate.rfind("}")
        if start < 0 or end <= start:
            continue
        try:
            value = json.loads(candidate[start : end + 1])
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    snippet = text.strip().replace("\n", " ")
    snippet = snippet if len(snippet) <= 80 else snippet[:77] + "..."
    raise InvalidReply(f"the reply is not a JSON object: {snippet!r}")


def repair_messages(
    messages: list[ChatMessage], reply: str, problem: str, schema_hint: str
) -> list[ChatMessage]:
    """The conversation so far, the bad reply, and a request to answer again correctly."""
    return [
        *messages,
        ChatMessage("assistant", reply),
        ChatMessage(
            "user",
            f"That reply cannot be used: {problem}. Answer again with only a JSON object of this form, "
            f"no other text:\n{schema_hint}",
        ),
    ]
