"""The Dagster side of core/redaction.py: what an asset, check or op hands to Dagster holds no secret.

``redacts_secrets`` goes under every ``@dg.asset`` / ``@dg.asset_check`` / ``@dg.op`` of the project
(test_definitions fails when one lacks it). It redacts the metadata of the returned ``Output``,
``MaterializeResult`` or ``AssetCheckResult`` (and a check's description), and the message of any
exception the step raises, so the step-failure event, its ``Failure`` description and metadata, and the
exceptions chained to it are clean before Dagster stores them. Log lines are covered separately, by the
log record factory that ``install_log_redaction`` installs (also from here, on a step's first call).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import dagster as dg

from ..core.redaction import install_log_redaction, redact, redact_exception, redact_value

F = TypeVar("F", bound=Callable[..., Any])

_TEXT_VALUES: dict[type, Callable[[Any], dg.MetadataValue]] = {
    dg.TextMetadataValue: dg.MetadataValue.text,
    dg.MarkdownMetadataValue: dg.MetadataValue.md,
    dg.UrlMetadataValue: dg.MetadataValue.url,
    dg.PathMetadataValue: dg.MetadataValue.path,
    dg.JsonMetadataValue: dg.MetadataValue.json,
}


def redacted_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Every text, Markdown, URL, path and JSON value redacted; numbers and the rest as they are."""
    clean: dict[str, Any] = {}
    for key, value in metadata.items():
        rebuild = _TEXT_VALUES.get(type(value))
        if rebuild is not None:
            raw = value.value
            new = redact_value(raw)
            clean[key] = value if new is raw else rebuild(new)
        elif isinstance(value, dg.MetadataValue):  # numbers, timestamps, tables, asset keys: no free text
            clean[key] = value
        else:
            clean[key] = redact_value(value)  # raw str/dict/list before Dagster normalizes them
    return clean


def redacted_result(result: Any) -> Any:
    """An ``Output``, ``MaterializeResult`` or ``AssetCheckResult`` with its metadata (and a check's
    description) redacted; anything else unchanged."""
    if isinstance(result, dg.Output | dg.AssetCheckResult) and result.metadata:
        result = result.with_metadata(redacted_metadata(result.metadata))
    elif isinstance(result, dg.MaterializeResult) and (result.metadata or result.check_results):
        result = dg.MaterializeResult(
            asset_key=result.asset_key,
            metadata=redacted_metadata(result.metadata or {}),
            check_results=[redacted_result(check) for check in result.check_results or ()],
            data_version=result.data_version,
            tags=result.tags,
            value=result.value,
        )
    if isinstance(result, dg.AssetCheckResult) and result.description:
        result = result._replace(description=redact(result.description))
    return result


def redacted_failure(exc: BaseException) -> BaseException:
    """``exc`` (or a stand-in, see ``redact_exception``) with no secret in its message or chain; a
    ``Failure`` also loses them from its description and metadata."""
    clean = redact_exception(exc)
    if isinstance(clean, dg.Failure):
        if clean.description:
            clean.description = redact(clean.description)
        if clean.metadata:
            clean.metadata = redacted_metadata(clean.metadata)
    return clean


def redacts_secrets(fn: F) -> F:
    """Wrap an asset/check/op body (under its decorator) so nothing it hands to Dagster holds a secret:
    what it returns, or each result it yields (a multi-asset or an observation yields them)."""
    if inspect.iscoroutinefunction(fn):
        raise TypeError(f"redacts_secrets wraps plain functions and generators, not coroutine {fn.__name__}")
    if inspect.isgeneratorfunction(fn):
        return _redacts_yielded(fn)

    @functools.wraps(fn)
    def step(*args: Any, **kwargs: Any) -> Any:
        install_log_redaction()  # idempotent; covers processes that never loaded the definitions
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            failure = redacted_failure(exc)
            if failure is exc:
                raise
        else:
            return redacted_result(result)
        # raised outside the except block, so the unredacted original is not chained as its context
        raise failure

    step.redacts_secrets = True  # type: ignore[attr-defined]
    return step  # type: ignore[return-value]


def _redacts_yielded(fn: F) -> F:
    @functools.wraps(fn)
    def step(*args: Any, **kwargs: Any) -> Any:
        install_log_redaction()
        results = fn(*args, **kwargs)
        while True:
            try:
                result = next(results)
            except StopIteration:
                return
            except Exception as exc:
                failure = redacted_failure(exc)
                if failure is exc:
                    raise
            else:
                yield redacted_result(result)
                continue
            raise failure  # outside the except block, as above

    step.redacts_secrets = True  # type: ignore[attr-defined]
    return step  # type: ignore[return-value]


def step_redacts_secrets(
    definition: dg.AssetsDefinition | dg.AssetChecksDefinition | dg.OpDefinition,
) -> bool:
    """Whether the definition's body is wrapped by ``redacts_secrets`` (for the test that guards it)."""
    node = definition if isinstance(definition, dg.OpDefinition) else definition.node_def
    compute = getattr(node, "compute_fn", None)
    body = getattr(compute, "decorated_fn", compute)
    return bool(getattr(body, "redacts_secrets", False))
