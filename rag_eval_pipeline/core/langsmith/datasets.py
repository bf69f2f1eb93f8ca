"""Our datasets as LangSmith datasets and back, keyed by ``metadata.question_id``.

The example schema is ``TokenLevelExample.to_json()`` / ``ChunkLevelExample.to_json()``; chunk-level
examples also carry ``metadata.chunker_fingerprint``, and the dataset's own metadata records
``evaluation_type`` (and the chunker fingerprint), so a download knows what it holds.

Uploads are idempotent: a question whose inputs, outputs and metadata already match is left alone, a
changed one is updated in place (same example id, so experiments stay linked), a new one is created.
Examples in LangSmith that the local dataset lacks are left alone and counted, never deleted: someone
may have added them in the web app. Downloads list examples in upload order (the order of the first
upload; later additions come after) so the dataset hash survives a round trip.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..corpus.corpus import Corpus
from ..errors import DatasetError
from ..questions.datasets import (
    ChunkLevelDataset,
    ChunkLevelExample,
    TokenLevelDataset,
    TokenLevelExample,
    chunk_level_example,
    token_level_example,
)
from ..types import EvaluationType, QuestionId
from .errors import LangSmithDatasetError, LangSmithError, langsmith_errors

if TYPE_CHECKING:  # langsmith takes about 0.4 s to import: only where LangSmith is used
    from langsmith import Client
    from langsmith import schemas as ls_schemas

# Metadata keys LangSmith adds to every example by itself: not ours, never a reason to update.
SERVER_METADATA_KEYS = frozenset({"dataset_split"})


@dataclass(frozen=True)
class UploadReport:
    dataset_name: str
    dataset_id: str
    url: str | None
    created: int
    updated: int
    unchanged: int
    remote_only: int = 0  # examples in LangSmith without a local counterpart, left in place


def upload_dataset(
    client: Client, dataset: TokenLevelDataset | ChunkLevelDataset, name: str, description: str = ""
) -> UploadReport:
    """Create or bring up to date the LangSmith dataset ``name`` so it holds exactly ``dataset``'s questions."""
    wanted = _payloads(dataset)
    with langsmith_errors(f"uploading dataset {name!r}", client.api_url, client.api_key):
        remote = _ensure_dataset(client, dataset, name, description)
        by_question, foreign = _examples_by_question(client.list_examples(dataset_id=remote.id), name)
        creates: list[dict[str, Any]] = []
        updates: list[dict[str, Any]] = []
        first_created = dt.datetime.now(dt.UTC)
        for question_id, payload in wanted.items():
            existing = by_question.pop(question_id, None)
            if existing is None:
                # Distinct, increasing timestamps keep the local order for downloads.
                created_at = first_created + dt.timedelta(microseconds=len(creates))
                creates.append(
                    {
                        "inputs": payload["inputs"],
                        "reference_outputs": payload["outputs"],
                        "metadata": payload["metadata"],
                        "created_at": created_at,
                    }
                )
            elif not _same(existing, payload):
                updates.append({"id": existing.id, **payload})
        if creates:
            response = client.create_examples(dataset_id=remote.id, examples=creates)
            _check_count("created", response, len(creates), name)
        if updates:
            response = client.update_examples(dataset_id=remote.id, updates=updates)
            _check_count("updated", response, len(updates), name)
    return UploadReport(
        dataset_name=name,
        dataset_id=str(remote.id),
        url=remote.url,
        created=len(creates),
        updated=len(updates),
        unchanged=len(wanted) - len(creates) - len(updates),
        remote_only=len(by_question) + foreign,
    )


def download_dataset(client: Client, name: str, corpus: Corpus) -> TokenLevelDataset | ChunkLevelDataset:
    """The LangSmith dataset ``name`` as our dataset, every span checked against ``corpus``."""
    with langsmith_errors(f"downloading dataset {name!r}", client.api_url, client.api_key):
        remote = _read_dataset(client, name)
        examples = sorted(client.list_examples(dataset_id=remote.id), key=lambda e: (e.created_at, str(e.id)))
    if not examples:
        raise LangSmithDatasetError(f"LangSmith dataset {name!r} holds no examples: upload questions first")
    dataset_metadata = remote.metadata or {}
    kind = dataset_metadata.get("evaluation_type") or _kind_from_outputs(examples[0], name)
    try:
        if kind == "token-level":
            return TokenLevelDataset(tuple(_token_examples(examples, name, corpus)), name=name)
        if kind == "chunk-level":
            chunk_examples = tuple(_chunk_examples(examples, name))
            return ChunkLevelDataset(
                chunk_examples, _fingerprint(chunk_examples, dataset_metadata, name), name=name
            )
    except LangSmithDatasetError:
        raise
    except DatasetError as exc:  # the same checks as the JSONL reader, reported as a LangSmith problem too
        raise LangSmithDatasetError(str(exc)) from None
    raise LangSmithDatasetError(
        f"LangSmith dataset {name!r}: metadata evaluation_type is {kind!r}; expected token-level or chunk-level"
    )


def _payloads(dataset: TokenLevelDataset | ChunkLevelDataset) -> dict[QuestionId, dict[str, Any]]:
    """What each example should look like in LangSmith, as JSON would give it back (lists, not tuples)."""
    payloads: dict[QuestionId, dict[str, Any]] = {}
    for example in dataset.examples:
        obj = example.to_json()
        if isinstance(dataset, ChunkLevelDataset):
            obj["metadata"]["chunker_fingerprint"] = dataset.chunker_fingerprint
        try:
            payloads[example.question_id] = json.loads(json.dumps(obj, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise LangSmithDatasetError(
                f"dataset {dataset.name}, question {example.question_id!r}: metadata is not plain JSON ({exc}); "
                f"keep metadata to strings, numbers, lists and objects"
            ) from None
    return payloads


def _dataset_metadata(dataset: TokenLevelDataset | ChunkLevelDataset) -> dict[str, Any]:
    metadata: dict[str, Any] = {"evaluation_type": dataset.evaluation_type, "source": "rag_eval_pipeline"}
    if isinstance(dataset, ChunkLevelDataset):
        metadata["chunker_fingerprint"] = dataset.chunker_fingerprint
    return metadata


def _read_dataset(client: Client, name: str) -> ls_schemas.Dataset:
    from langsmith import utils as ls_utils

    try:
        return client.read_dataset(dataset_name=name)
    except ls_utils.LangSmithNotFoundError:
        raise LangSmithError(
            f"LangSmith: no dataset named {name!r} at {client.api_url}: check the name, or upload it first"
        ) from None


def _ensure_dataset(
    client: Client, dataset: TokenLevelDataset | ChunkLevelDataset, name: str, description: str
) -> ls_schemas.Dataset:
    from langsmith import utils as ls_utils

    try:
        remote = client.read_dataset(dataset_name=name)
    except ls_utils.LangSmithNotFoundError:
        try:
            return client.create_dataset(name, description=description, metadata=_dataset_metadata(dataset))
        except ls_utils.LangSmithConflictError:  # created by someone else in between
            remote = client.read_dataset(dataset_name=name)
    _check_compatible(remote, dataset, name)
    return remote


def _check_compatible(
    remote: ls_schemas.Dataset, dataset: TokenLevelDataset | ChunkLevelDataset, name: str
) -> None:
    """Refuse to mix evaluation types or chunkers in one LangSmith dataset: its scores would mean nothing."""
    metadata = remote.metadata or {}
    remote_type = metadata.get("evaluation_type")
    if remote_type and remote_type != dataset.evaluation_type:
        raise LangSmithError(
            f"LangSmith: dataset {name!r} holds {remote_type} ground truth; this upload is "
            f"{dataset.evaluation_type}: upload it under another name"
        )
    remote_chunker = metadata.get("chunker_fingerprint")
    if (
        isinstance(dataset, ChunkLevelDataset)
        and remote_chunker
        and remote_chunker != dataset.chunker_fingerprint
    ):
        raise LangSmithError(
            f"LangSmith: dataset {name!r} holds chunk ids of chunker {remote_chunker}; this upload is for "
            f"chunker {dataset.chunker_fingerprint}: chunk ids of two chunkers do not mix, upload it under "
            f"another name"
        )


def _examples_by_question(
    examples: Iterable[ls_schemas.Example], name: str
) -> tuple[dict[QuestionId, ls_schemas.Example], int]:
    """Remote examples by ``metadata.question_id``, and how many have none (made outside this project)."""
    by_question: dict[QuestionId, ls_schemas.Example] = {}
    foreign = 0
    for example in examples:
        question_id = (example.metadata or {}).get("question_id")
        if not question_id:
            foreign += 1
            continue
        if question_id in by_question:
            raise LangSmithError(
                f"LangSmith: dataset {name!r} holds question {question_id!r} twice (examples "
                f"{by_question[question_id].id} and {example.id}): delete one in the LangSmith app, then upload "
                f"again"
            )
        by_question[QuestionId(str(question_id))] = example
    return by_question, foreign


def _same(remote: ls_schemas.Example, payload: Mapping[str, Any]) -> bool:
    return (
        (remote.inputs or {}) == payload["inputs"]
        and (remote.outputs or {}) == payload["outputs"]
        and _own_metadata(remote.metadata) == payload["metadata"]
    )


def _own_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (metadata or {}).items() if k not in SERVER_METADATA_KEYS}


def _check_count(what: str, response: Mapping[str, Any], expected: int, name: str) -> None:
    count = response.get("count")
    if count != expected:
        raise LangSmithError(
            f"LangSmith: dataset {name!r}: {expected} examples should have been {what}, LangSmith reports "
            f"{count}; upload again (unchanged examples are skipped)"
        )


def _kind_from_outputs(example: ls_schemas.Example, name: str) -> EvaluationType:
    outputs = example.outputs or {}
    if "relevant_spans" in outputs:
        return "token-level"
    if "relevant_chunk_ids" in outputs:
        return "chunk-level"
    raise LangSmithDatasetError(
        f"LangSmith dataset {name!r}, example {example.id}: outputs hold {sorted(outputs)}; expected "
        f"relevant_spans (token-level) or relevant_chunk_ids (chunk-level)"
    )


def _as_object(example: ls_schemas.Example) -> dict[str, Any]:
    return {
        "inputs": example.inputs,
        "outputs": example.outputs,
        "metadata": _own_metadata(example.metadata),
    }


def _where(example: ls_schemas.Example, name: str) -> str:
    question_id = (example.metadata or {}).get("question_id")
    suffix = f" (question {question_id!r})" if question_id else ""
    return f"LangSmith dataset {name!r}, example {example.id}{suffix}"


def _token_examples(
    examples: Iterable[ls_schemas.Example], name: str, corpus: Corpus
) -> Iterable[TokenLevelExample]:
    seen: dict[str, str] = {}
    for example in examples:
        yield token_level_example(
            _as_object(example), corpus, _where(example, name), seen, f"example {example.id}"
        )


def _chunk_examples(examples: Iterable[ls_schemas.Example], name: str) -> Iterable[ChunkLevelExample]:
    seen: dict[str, str] = {}
    for example in examples:
        yield chunk_level_example(_as_object(example), _where(example, name), seen, f"example {example.id}")


def _fingerprint(
    examples: Iterable[ChunkLevelExample], dataset_metadata: Mapping[str, Any], name: str
) -> str:
    found = {str(e.metadata["chunker_fingerprint"]) for e in examples if "chunker_fingerprint" in e.metadata}
    if not found and dataset_metadata.get("chunker_fingerprint"):
        found = {str(dataset_metadata["chunker_fingerprint"])}
    if len(found) != 1:
        raise LangSmithDatasetError(
            f"LangSmith dataset {name!r}: chunk-level ground truth must record the chunker it was made with "
            f"(metadata.chunker_fingerprint, one value for the whole dataset); found {sorted(found)}"
        )
    return found.pop()
