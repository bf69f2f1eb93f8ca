"""The corpus and the evaluation questions: loaded and validated once, shared by every partition."""

import dagster as dg
import pandas as pd

from ..core.datasets import TokenLevelDataset
from ..core.tables import corpus_from_frame, corpus_to_frame, questions_from_frame, questions_to_frame
from ..langsmith_sync import upload
from ..resources import LangSmithResource, ProjectResource
from .common import input_errors_fail_the_step


@dg.asset(group_name="ingestion", kinds={"python", "parquet"})
def corpus(context: dg.AssetExecutionContext, project: ProjectResource) -> dg.Output[pd.DataFrame]:
    """Every markdown document of the corpus folder; doc id = path relative to it."""
    with input_errors_fail_the_step():
        loaded = project.load_corpus()
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
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    langsmith: LangSmithResource,
    corpus: pd.DataFrame,
    synthetic_questions: pd.DataFrame,
) -> dg.Output[pd.DataFrame]:
    """The questions every partition is evaluated on: the golden set, the synthetic set or both
    (``evaluate_on`` in data/generation.yaml), every span checked against the corpus as it is now."""
    loaded = corpus_from_frame(corpus, root=str(project.path(project.corpus_dir)))
    with input_errors_fail_the_step():
        settings = project.load_generation_settings()
        golden = project.load_golden_dataset(loaded) if settings.evaluate_on != "synthetic" else None
    synthetic = questions_from_frame(synthetic_questions) if settings.evaluate_on != "golden" else None
    if synthetic is not None and not len(synthetic):
        raise dg.Failure(
            "synthetic_questions holds no accepted question: see its rejected rows and their reasons, or "
            "set evaluate_on: golden in data/generation.yaml"
        )
    if synthetic is not None and str(synthetic_questions["corpus_sha256"].iloc[0]) != loaded.sha256:
        raise dg.Failure(
            "synthetic_questions was generated from another version of the corpus: re-materialize "
            "synthetic_questions (or set evaluate_on: golden in data/generation.yaml)"
        )
    examples = (golden.examples if golden else ()) + (synthetic.examples if synthetic else ())
    with input_errors_fail_the_step("golden and synthetic questions cannot be combined: "):
        dataset = TokenLevelDataset(examples, name=settings.evaluate_on)
    frame = questions_to_frame(dataset)
    frame["corpus_sha256"] = loaded.sha256
    multi = int((frame["n_documents"] > 1).sum())
    context.log.info(
        f"{len(dataset)} questions ({multi} need two documents) from the {settings.evaluate_on} set"
    )
    metadata: dict[str, dg.RawMetadataValue] = {
        "n_questions": len(dataset),
        "evaluate_on": settings.evaluate_on,
        "n_golden": len(golden) if golden else 0,
        "n_synthetic": len(synthetic) if synthetic else 0,
        "multi_document_questions": multi,
        "n_reference_spans": int(sum(len(e.relevant_spans) for e in dataset)),
        "dataset_sha256": dataset.sha256,
        "evaluation_type": dataset.evaluation_type,
    }
    metadata.update(upload(langsmith, dataset, settings.langsmith.dataset(settings.evaluate_on), context.log))
    return dg.Output(frame, metadata=metadata, data_version=dg.DataVersion(dataset.sha256))
