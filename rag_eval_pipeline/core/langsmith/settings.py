"""Where LangSmith lives and how long we wait for it: LangSmith is optional and must never hang a run.

``LangSmithSettings.from_env()`` reads the SDK's usual variables (``LANGSMITH_API_KEY``,
``LANGSMITH_ENDPOINT``, ``LANGSMITH_WORKSPACE_ID``) and gives None when no key is set, so callers
can skip LangSmith without an error. ``client()`` builds a ``langsmith.Client`` with short timeouts,
few transport retries, no background tracing thread, and every tracing switch pinned, so that
environment variables meant for tracing (sampling, hidden inputs, OTel mode) cannot drop or blank
the runs of an experiment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from .errors import LangSmithError, langsmith_errors

if TYPE_CHECKING:  # langsmith takes about 0.4 s to import: only where LangSmith is used
    import langsmith

DEFAULT_API_URL = "https://api.smith.langchain.com"
# Gateway statuses mean the request never reached LangSmith: safe to resend. A 500 may have half-applied
# (a dataset created, then the reply lost), so it is not retried blindly.
_RETRY_STATUSES = (502, 503, 504)


@dataclass(frozen=True)
class LangSmithSettings:
    api_key: str = field(repr=False)
    api_url: str = DEFAULT_API_URL
    # The web app's base URL for links; None derives it from api_url (see ``resolved_web_url``).
    web_url: str | None = None
    workspace_id: str | None = None
    timeout_s: float = 10.0
    max_retries: int = 2

    def __post_init__(self) -> None:
        key = self.api_key.strip()
        if not key:
            raise LangSmithError("LangSmith: the API key is empty; set LANGSMITH_API_KEY")
        if not key.isascii() or not key.isprintable() or any(c.isspace() for c in key):
            raise LangSmithError(
                "LangSmith: the API key holds spaces or non-ASCII characters; copy LANGSMITH_API_KEY again"
            )
        object.__setattr__(self, "api_key", key)
        for name in ("api_url", "web_url"):
            value = getattr(self, name)
            if value is None:
                continue
            parts = urlsplit(value.strip())
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise LangSmithError(
                    f"LangSmith: {name} {value!r} is not an http(s) URL; fix LANGSMITH_ENDPOINT or {name}"
                )
            object.__setattr__(self, name, value.strip().rstrip("/"))
        if not self.timeout_s > 0:
            raise LangSmithError(f"LangSmith: timeout_s must be > 0, got {self.timeout_s}")
        if self.max_retries < 0:
            raise LangSmithError(f"LangSmith: max_retries must be >= 0, got {self.max_retries}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LangSmithSettings | None:
        """Settings from the environment; None when ``LANGSMITH_API_KEY`` is unset or empty."""
        env = os.environ if env is None else env
        api_key = (env.get("LANGSMITH_API_KEY") or "").strip()
        if not api_key:
            return None
        return cls(
            api_key=api_key,
            api_url=(env.get("LANGSMITH_ENDPOINT") or "").strip() or DEFAULT_API_URL,
            workspace_id=(env.get("LANGSMITH_WORKSPACE_ID") or "").strip() or None,
        )

    @property
    def resolved_web_url(self) -> str:
        """The web app's URL: ``web_url``, else derived from ``api_url``.

        LangChain's cloud drops the ``api`` label (``eu.api.smith.langchain.com`` ->
        ``eu.smith.langchain.com``); a self-hosted API under ``/api`` or ``/api/v1`` serves the app at the
        same host and port without that suffix. The SDK's own guess drops the port of a local server and
        sends any unknown host to the US cloud, hence our own.
        """
        if self.web_url:
            return self.web_url
        parts = urlsplit(self.api_url)
        host = (parts.hostname or "").lower()
        if host == "smith.langchain.com" or host.endswith(".smith.langchain.com"):
            labels = host.split(".")
            if "api" in labels:
                labels.remove("api")
            return f"https://{'.'.join(labels)}"
        path = parts.path.rstrip("/")
        for suffix in ("/api/v1", "/api"):
            if path.endswith(suffix):
                path = path[: -len(suffix)]
                break
        return urlunsplit((parts.scheme, parts.netloc, path, "", ""))

    def client(self) -> langsmith.Client:
        """A client that fails within seconds when LangSmith is down, instead of retrying for minutes."""
        import langsmith
        from urllib3.util.retry import Retry

        retry = Retry(
            total=self.max_retries,
            connect=self.max_retries,
            read=False,  # a request that timed out may have been applied: never send it twice; raise as is
            status=self.max_retries,
            status_forcelist=_RETRY_STATUSES,
            allowed_methods=None,
            backoff_factor=0.25,
            backoff_max=2.0,
            respect_retry_after_header=False,  # a Retry-After of minutes would stall the pipeline
            raise_on_status=False,
            raise_on_redirect=False,
        )
        timeout_ms = max(1, int(self.timeout_s * 1000))
        with langsmith_errors("creating the client", self.api_url, self.api_key):
            return langsmith.Client(
                api_url=self.api_url,
                api_key=self.api_key,
                web_url=self.resolved_web_url,
                workspace_id=self.workspace_id,
                retry_config=retry,
                timeout_ms=(timeout_ms, timeout_ms),
                auto_batch_tracing=False,
                tracing_mode="langsmith",
                tracing_sampling_rate=1.0,
                hide_inputs=False,
                hide_outputs=False,
                hide_metadata=False,
                omit_traced_runtime_info=True,
                disable_prompt_cache=True,
            )
