"""The corpus and the evaluation questions: loaded and validated once, shared by every partition."""

from pathlib import Path

import dagster as dg
import pandas as pd

from ...core.corpus.corpus import describe_skipped_links
from ...core.corpus.document_formats import count_by_extension, describe_counts, describe_skipped
from ...core.generation.settings import GenerationSettings
from ...core.generation.sources import question_generators
from ...core.questions.datasets import TokenLevelDataset
from ...core.questions.reanchor import (
    GroundTruthStatus,
    ReanchoredDataset,
    ReanchorResult,
    read_anchors,
    read_reanchored_jsonl,
    write_anchors,
)
from ...core.tables import (
    GROUND_TRUTH_STATUS,
    corpus_from_frame,
    corpus_to_frame,
    questions_from_frame,
    questions_to_frame,
)
from ...lib.freshness import READS_DOCUMENTS, READS_PROJECT_SETTINGS
from ...lib.io_managers import WarehouseResource
from ...lib.langsmith_sync import upload
from ...lib.question_sources import question_sources_for
from ...lib.resources import LangSmithResource, ProjectResource
from ...lib.step_failures import bad_input_failure, input_errors_fail_the_step
from ...lib.step_inputs import step_settings
from ...lib.step_redaction import redacts_secrets


@dg.asset(group_name="ingestion", kinds={"python", "parquet"}, deps=READS_DOCUMENTS)
@redacts_secrets
def corpus(context: dg.AssetExecutionContext, project: ProjectResource) -> dg.MaterializeResult[pd.DataFrame]:
    """Every document of the corpus folder (markdown, text, reST, HTML reduced to its text); doc id =
    path relative to it. Files with another extension, and links that lead to no document (a loop, a
    missing target), are skipped, counted and named in a warning."""
    with input_errors_fail_the_step():
        loaded = project.load_corpus()
    frame = corpus_to_frame(loaded)
    groups = sorted({d.group for d in loaded})
    per_format = loaded.documents_per_format()
    context.log.info(
        f"loaded {len(loaded)} documents ({describe_counts(per_format)}), {loaded.total_characters} "
        f"characters from {loaded.root}"
    )
    if loaded.skipped:
        context.log.warning(describe_skipped(loaded.skipped))
    if loaded.skipped_links:
        context.log.warning(describe_skipped_links(loaded.skipped_links))
    workload = project.workload(corpus=loaded)  # what embedding it will cost: warned of when large
    for warning in workload.warnings():
        context.log.warning(warning)
    return dg.MaterializeResult(
        value=frame,
        metadata={
            "n_documents": len(loaded),
            "documents_per_format": dg.MetadataValue.json(per_format),
            "n_skipped_files": len(loaded.skipped),
            "skipped_extensions": describe_counts(count_by_extension(loaded.skipped)) or "none",
            "n_skipped_links": len(loaded.skipped_links),
            "n_characters": loaded.total_characters,
            "groups": ", ".join(groups),
            "corpus_sha256": loaded.sha256,
            "n_large_documents": len(workload.large_documents),
            "estimated_chunks": workload.n_chunks,
            "estimated_embedding_minutes": round(workload.embed_seconds / 60, 1),
        },
        data_version=dg.DataVersion(loaded.sha256[:16]),
    )


@dg.asset(group_name="ingestion", kinds={"python", "parquet"}, deps=READS_PROJECT_SETTINGS)
@redacts_secrets
def eval_questions(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    langsmith: LangSmithResource,
    warehouse: WarehouseResource,
    corpus: pd.DataFrame,
    synthetic_questions: pd.DataFrame,
) -> dg.MaterializeResult[pd.DataFrame]:
    """The questions every partition is evaluated on: the golden set, the synthetic set or both
    (``evaluate_on`` in data/generation.yaml), every span checked against the corpus as it is now.
    A golden set asked for and missing fails the step as bad input (core/generation/sources.py).

    A golden span in a document edited since the dataset last matched is re-anchored to its excerpt,
    or its question is stale: kept as a row with ``ground_truth_status`` and ``stale_reason``, not
    evaluated (synthetic questions are regenerated from the new corpus instead)."""
    loaded = corpus_from_frame(corpus, root=str(project.corpus_folder()))
    ledger = anchor_ledger_path(project, warehouse)
    reanchored: ReanchoredDataset | None = None
    settings = step_settings(project, GenerationSettings)
    sources = question_sources_for(project, settings)  # golden asked for and missing: bad input
    with input_errors_fail_the_step():
        if sources.golden:
            reanchored = read_reanchored_jsonl(sources.golden_file, loaded, read_anchors(ledger))
    golden = reanchored.dataset if reanchored is not None else None
    synthetic = questions_from_frame(synthetic_questions) if sources.synthetic else None
    if synthetic is not None and synthetic_questions.empty:  # not even a rejected row
        raise bad_input_failure(
            "synthetic_questions holds no question: it was skipped while the evaluation used only the "
            "golden set, or made none from this corpus (its metadata says which): re-materialize it, or "
            "see token_level in data/generation.yaml"
        )
    if synthetic is not None and not len(synthetic):
        raise bad_input_failure(
            "synthetic_questions holds no accepted question: see its rejected rows and their reasons, or "
            "set evaluate_on: golden in data/generation.yaml"
        )
    if synthetic is not None and str(synthetic_questions["corpus_sha256"].iloc[0]) != loaded.sha256:
        raise dg.Failure(
            "synthetic_questions was generated from another version of the corpus: re-materialize "
            "synthetic_questions (or set evaluate_on: golden in data/generation.yaml)"
        )
    examples = (golden.examples if golden else ()) + (synthetic.examples if synthetic else ())
    result = reanchored.result if reanchored is not None else ReanchorResult((), frozenset(), ())
    stale = result.stale
    with input_errors_fail_the_step("golden and synthetic questions cannot be combined: "):
        dataset = TokenLevelDataset(examples, name=sources.name)
        every_row = TokenLevelDataset(examples + tuple(s.example for s in stale), name=sources.name)
    if not len(dataset):
        raise bad_input_failure(
            f"every question is stale, so nothing can be evaluated: update {project.golden_dataset} to "
            f"the edited documents ({'; '.join(f'{s.example.question_id}: {s.reason}' for s in stale)})"
        )
    frame = questions_to_frame(every_row)
    frame["dataset_sha256"] = dataset.sha256  # the questions evaluated, not the stale rows
    frame["answers_sha256"] = dataset.answers_sha256
    # rows: usable golden, synthetic (always valid: regenerated from this corpus), stale golden
    statuses: list[GroundTruthStatus] = [result.status(e.question_id) for e in every_row.examples]
    frame[GROUND_TRUTH_STATUS] = statuses
    frame["stale_reason"] = [""] * len(examples) + [s.reason for s in stale]
    frame["corpus_sha256"] = loaded.sha256
    if result.n_reanchored:
        context.log.info(
            f"{result.n_reanchored} golden question(s) re-anchored to their excerpts in edited documents: "
            + ", ".join(sorted(result.reanchored))
        )
    if stale:
        context.log.warning(
            f"{len(stale)} golden question(s) are stale and not evaluated until {project.golden_dataset} "
            "is updated: " + "; ".join(f"{s.example.question_id} ({s.reason})" for s in stale)
        )
    multi = int((frame["n_documents"] > 1).sum())
    context.log.info(f"{len(dataset)} questions ({multi} need two documents) from the {sources.name} set")
    metadata: dict[str, dg.RawMetadataValue] = {
        "n_questions": len(dataset),
        "n_reanchored": result.n_reanchored,
        "n_stale": len(stale),
        "evaluate_on": sources.name,  # what was evaluated; evaluate_on_configured: what the file says
        "evaluate_on_configured": sources.configured,
        "question_generators": question_generators(e.metadata for e in dataset),
        "n_golden": len(golden) if golden else 0,
        "n_synthetic": len(synthetic) if synthetic else 0,
        "multi_document_questions": multi,
        "n_reference_spans": int(sum(len(e.relevant_spans) for e in dataset)),
        "dataset_sha256": dataset.sha256,
        "evaluation_type": dataset.evaluation_type,
    }
    metadata.update(upload(langsmith, dataset, settings.langsmith.dataset(sources.name), context.log))
    if reanchored is not None:
        write_anchors(ledger, reanchored.anchors)
    return dg.MaterializeResult(value=frame, metadata=metadata, data_version=dg.DataVersion(dataset.sha256))


def anchor_ledger_path(project: ProjectResource, warehouse: WarehouseResource) -> Path:
    """Which document versions the golden dataset's spans were last found valid against: what tells an
    edited document (re-anchor) from a wrong dataset (fail). Kept with the warehouse, per dataset file."""
    return warehouse.layout().anchors_path(Path(project.golden_dataset).stem)
