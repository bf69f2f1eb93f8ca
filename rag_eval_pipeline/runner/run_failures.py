"""Why a run failed, in words a user can act on, wherever the run is read from (an in-process result,
the instance's event log, the webserver's GraphQL API): the root cause of its first failed step, not
only Dagster's wrapper ("Error occurred while executing op ..."), and whether it was bad input, which
`rag-eval` reports with exit code 2."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import dagster as dg

from ..core.errors import InputError
from ..lib.step_failures import BAD_INPUT_METADATA

UNKNOWN_CAUSE = "the run failed without an error message (see its log in the Dagster UI)"
# "module.path.ClassName: message" as traceback.format_exception_only writes it
_CLASS_PREFIX = re.compile(r"^(?P<path>(?:[A-Za-z_]\w*\.)*)(?P<name>[A-Za-z_]\w*): ", re.DOTALL)
# Dagster's boundary errors: they say where the error happened, their cause says what happened
_WRAPPER = re.compile(r"^Error occurred while (?P<where>.*?):*\s*$", re.DOTALL)


@dataclass(frozen=True)
class RunFailure:
    message: str
    bad_input: bool = False
    step_key: str | None = None

    def __str__(self) -> str:
        return f"{self.step_key}: {self.message}" if self.step_key else self.message


@dataclass(frozen=True)
class ErrorLink:
    """One exception of a chain: its class name and ``format_exception_only`` text."""

    class_name: str
    message: str


def cause_text(chain: Sequence[ErrorLink]) -> str:
    """The chain as one line, outermost first: a Dagster wrapper becomes "while <where>: ", a
    `dg.Failure` and this project's own errors give their message alone (it names the file, key and
    remedy), other exceptions keep their class name ("FileNotFoundError: [Errno 2] ..."), and a cause
    whose text is already said is left out."""
    parts: list[str] = []
    where = ""
    for index, link in enumerate(chain):
        text = link.message.strip()
        match = _CLASS_PREFIX.match(text)
        path, name = (match["path"], match["name"]) if match else ("", link.class_name)
        body = text[match.end() :].strip() if match else text
        wrapper = _WRAPPER.match(body)
        if path.startswith("dagster.") and wrapper and index + 1 < len(chain):
            if name != "DagsterExecutionStepExecutionError":  # "executing op X": the step says it
                where = where or f"while {wrapper['where']}: "
            continue
        if name == "DagsterExecutionInterruptedError":
            body = "interrupted (Ctrl-C, or a termination signal to the process executing it)"
        elif name != "Failure" and not path.startswith("rag_eval_pipeline.") and body not in ("", name):
            body = f"{name}: {body}"
        if not body:
            continue
        if not any(body in said for said in parts):
            parts.append(body)
    return where + "; caused by ".join(parts) if parts else ""


class ErrorInfo(Protocol):
    """The error a step failure carries (Dagster's serialized exception), as far as it is read here."""

    @property
    def cls_name(self) -> str | None: ...
    @property
    def message(self) -> str: ...
    @property
    def cause(self) -> ErrorInfo | None: ...
    @property
    def context(self) -> ErrorInfo | None: ...


def chain_of(error: ErrorInfo | None) -> list[ErrorLink]:
    """The error and its causes (explicit ``from``, else the implicit context)."""
    links: list[ErrorLink] = []
    while error is not None and len(links) < 20:
        links.append(ErrorLink(error.cls_name or "", error.message))
        error = error.cause or error.context
    return links


def failure_of_events(events: Iterable[dg.DagsterEvent]) -> RunFailure:
    """The first failed step's cause, else the run failure's error (or message)."""
    run_message = ""
    for event in events:
        if event.is_step_failure and event.step_failure_data is not None:
            data = event.step_failure_data
            metadata = data.user_failure_data.metadata if data.user_failure_data else {}
            chain = chain_of(data.error)
            message = cause_text(chain) or (
                data.user_failure_data.description if data.user_failure_data else None
            )
            bad_input = _is_bad_input(metadata) or _holds_input_error(chain)
            return RunFailure(message or UNKNOWN_CAUSE, bad_input, event.step_key)
        if event.event_type == dg.DagsterEventType.RUN_FAILURE and not run_message:
            # an error the executor raised (a Dask worker that died) is the cause; Dagster's own
            # message only says an exception was thrown
            error = getattr(event.event_specific_data, "error", None)
            run_message = (cause_text(chain_of(error)) if error is not None else "") or event.message or ""
    return RunFailure(run_message or UNKNOWN_CAUSE)


def failure_of_result(result: dg.ExecuteInProcessResult) -> RunFailure:
    return failure_of_events(result.all_events)


def failure_of_run(instance: dg.DagsterInstance, run_id: str) -> RunFailure:
    entries = instance.all_logs(
        run_id, of_type={dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.RUN_FAILURE}
    )
    return failure_of_events(e.dagster_event for e in entries if e.dagster_event is not None)


# The fields `failure_of_graphql_event` reads, for a query on logsForRun events.
GRAPHQL_STEP_FAILURE_FIELDS = """
... on ExecutionStepFailureEvent {
  stepKey
  error { message className errorChain { error { message className } } }
  failureMetadata { metadataEntries { label ... on BoolMetadataEntry { boolValue } } }
}
"""


def failure_of_graphql_event(event: Mapping[str, Any]) -> RunFailure:
    """An ExecutionStepFailureEvent as GRAPHQL_STEP_FAILURE_FIELDS returns it."""
    error = event.get("error") or {}
    chain = [ErrorLink(error.get("className") or "", error.get("message") or "")]
    chain += [
        ErrorLink(link["error"].get("className") or "", link["error"].get("message") or "")
        for link in error.get("errorChain") or []
    ]
    entries = (event.get("failureMetadata") or {}).get("metadataEntries") or []
    bad_input = any(e.get("label") == BAD_INPUT_METADATA and e.get("boolValue") for e in entries)
    bad_input = bad_input or _holds_input_error(chain)
    return RunFailure(cause_text(chain) or UNKNOWN_CAUSE, bad_input, event.get("stepKey"))


def _is_bad_input(metadata: Mapping[str, Any]) -> bool:
    value = metadata.get(BAD_INPUT_METADATA)
    return bool(getattr(value, "value", value))


def _input_error_names(cls: type[BaseException] = InputError) -> frozenset[str]:
    return frozenset({cls.__name__}).union(*(_input_error_names(sub) for sub in cls.__subclasses__()))


def _holds_input_error(chain: Sequence[ErrorLink]) -> bool:
    """An ``InputError`` (ConfigError, CorpusError, DatasetError, ...) anywhere in the chain: bad input,
    also where a step or a resource let it escape without ``input_errors_fail_the_step``."""
    names = _input_error_names()
    return any(link.class_name in names for link in chain)
