"""The corpus and the evaluation questions: loaded and validated once, shared by every partition."""

import dagster as dg
import pandas as pd

from ..core.errors import InputError
from ..core.tables import corpus_from_frame, corpus_to_frame, questions_to_frame
from ..resources import ProjectResource


@dg.asset(group_name="ingestion", kinds={"python", "parquet"})
def corpus(context: dg.AssetExecutionContext, project: ProjectResource) -> dg.Output[pd.DataFrame]:
    """Every markdown document of the corpus folder; doc id = path relative to it."""
    try:
        loaded = project.load_corpus()
    except InputError as exc:
        raise dg.Failure(str(exc)) from exc
    frame = corpus_to_frame(loaded)
    groups = sorted({d.group for d in loaded})
    context.log.info(
        f"loaded {len(loaded)} documents, {loaded.total_characters} characters from {loaded.root}"
    )
    return dg.Output(
        frame,
        metadata={
            "n_documents": len(loaded),
            "n_characters": loaded.total_characters,
            "groups": ", ".join(groups),
            "corpus_sha256": loaded.sha256,
        },
        data_version=dg.DataVersion(loaded.sha256[:16]),
    )


@dg.asset(group_name="ingestion", kinds={"python", "parquet"})
def eval_questions(
    context: dg.AssetExecutionContext, project: ProjectResource, corpus: pd.DataFrame
) -> dg.Output[pd.DataFrame]:
    """The token-level golden dataset, every span checked against the corpus as it is now."""
    loaded = corpus_from_frame(corpus, root=str(project.path(project.corpus_dir)))
    try:
        dataset = project.load_golden_dataset(loaded)
    except InputError as exc:
        raise dg.Failure(str(exc)) from exc
    frame = questions_to_frame(dataset)
    frame["corpus_sha256"] = loaded.sha256
    multi = int((frame["n_documents"] > 1).sum())
    context.log.info(
        f"loaded {len(dataset)} questions ({multi} need two documents) from {project.golden_dataset}"
    )
    return dg.Output(
        frame,
        metadata={
            "n_questions": len(dataset),
            "multi_document_questions": multi,
            "n_reference_spans": int(sum(len(e.relevant_spans) for e in dataset)),
            "dataset_sha256": dataset.sha256,
            "evaluation_type": dataset.evaluation_type,
        },
        data_version=dg.DataVersion(dataset.sha256),
    )
