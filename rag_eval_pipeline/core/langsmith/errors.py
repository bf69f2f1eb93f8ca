"""One error type for every LangSmith failure, with messages that say what to check and hold no secret.

LangSmith is optional: the Dagster layer catches ``LangSmithError`` and reports "LangSmith down or
misconfigured" in metadata instead of failing an evaluation. The SDK's own messages are not passed on
whole: its connection errors carry a masked API key, so only a scrubbed first line survives.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import DatasetError
from ..redaction import redact

_DETAIL_MAX = 300
_STATUS = re.compile(r"\b([45]\d\d) (?:Client|Server) Error")
_KEY_LIKE = re.compile(r"(?i)(api[ _-]?key\W{0,3})\S+|lsv2_\S+")


class LangSmithError(RuntimeError):
    """LangSmith is unreachable, refused the request, or holds data this project cannot use."""


class LangSmithDatasetError(LangSmithError, DatasetError):
    """A LangSmith dataset whose examples do not fit the corpus or the schema (both error types apply)."""


@contextmanager
def langsmith_errors(action: str, api_url: str, api_key: str | None) -> Iterator[None]:
    """Re-raise whatever the SDK raises during ``action`` as a ``LangSmithError`` without the key."""
    try:
        yield
    except LangSmithError:
        raise
    except Exception as exc:
        raise LangSmithError(describe_failure(action, api_url, api_key, exc)) from None


def describe_failure(action: str, api_url: str, api_key: str | None, exc: BaseException) -> str:
    # redact: every configured secret, including a password inside LANGSMITH_ENDPOINT
    return redact(f"LangSmith: {action} failed: {_advice(exc, api_url)} [{_scrub(exc, api_key)}]")


def _advice(exc: BaseException, api_url: str) -> str:
    import requests
    from langsmith import utils as ls_utils

    if isinstance(exc, ls_utils.LangSmithAuthError):
        return (
            "the API key was refused (HTTP 401): check LANGSMITH_API_KEY, and LANGSMITH_WORKSPACE_ID for an "
            "org-scoped key"
        )
    if isinstance(exc, ls_utils.LangSmithConnectionError | requests.ConnectionError):
        return f"cannot connect to {api_url}: check LANGSMITH_ENDPOINT and the network"
    if isinstance(exc, ls_utils.LangSmithRequestTimeout | requests.Timeout):
        return f"{api_url} did not answer in time: LangSmith may be overloaded, try again later"
    if isinstance(exc, ls_utils.LangSmithAPIError):
        return f"{api_url} answered with a server error: LangSmith may be down, try again later"
    if isinstance(exc, ls_utils.LangSmithRateLimitError):
        return "rate limited by LangSmith (HTTP 429): try again later or log fewer runs at once"
    if isinstance(exc, ls_utils.LangSmithNotFoundError):
        return f"{api_url} does not know this resource (HTTP 404): is LANGSMITH_ENDPOINT a LangSmith API?"
    if isinstance(exc, ls_utils.LangSmithError):
        status = _STATUS.search(str(exc))
        code = int(status.group(1)) if status else 0
        if code == 403:
            return "the API key may not do this (HTTP 403): check LANGSMITH_WORKSPACE_ID and the key's permissions"
        if code >= 500:
            return f"{api_url} answered with a server error (HTTP {code}): LangSmith may be down, try again later"
        return f"{api_url} refused the request" + (f" (HTTP {code})" if code else "")
    return f"unexpected {type(exc).__name__} while talking to {api_url}"


def _scrub(exc: BaseException, api_key: str | None) -> str:
    """The first line of the SDK's message, cut short, with anything key-like removed."""
    lines = str(exc).strip().splitlines()
    detail = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    if api_key:
        detail = detail.replace(api_key, "***")
    detail = _KEY_LIKE.sub(lambda m: (m.group(1) or "") + "***", detail)
    return detail if len(detail) <= _DETAIL_MAX else detail[: _DETAIL_MAX - 3] + "..."
