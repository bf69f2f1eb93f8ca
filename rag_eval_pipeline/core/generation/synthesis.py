"""From settings to a finished dataset: generate, check the budget first, de-duplicate, filter, report.

The same settings give the same dataset: generators are seeded, LLM replies come from the response
cache on a re-run, and every rejected question is returned with its reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from ..corpus.corpus import Corpus
from ..embedding.base import Embedder
from ..embedding.prefetch import PrefetchEmbedder
from ..errors import ConfigError
from ..llm.accounting import CostEstimate, check_budget
from ..llm.base import CompletionParams
from ..llm.client import LLMClient
from ..progress import Progress, no_progress
from ..questions.datasets import ChunkLevelDataset, TokenLevelDataset, TokenLevelExample
from ..settings.configs import ChunkConfig
from ..types import PositionAwareChunk, QuestionId, Rejection
from .base import ExampleT, GenerationResult
from .known_item import KnownItemGenerator
from .llm_chunk_level import LLMChunkLevelGenerator
from .llm_excerpt_first import ExcerptFirstGenerator
from .llm_token_level import LLMTokenLevelGenerator
from .paraphrase import ParaphraseGenerator
from .passages import plan_passages
from .quality import (
    deduplicate,
    filter_unretrievable_chunk_level,
    filter_unretrievable_token_level,
    probe_windows,
    quality_texts,
)
from .question_count import llm_question_count
from .quotas import QuestionCount
from .settings import ChunkLevelSettings, LLMSettings, TokenLevelSettings

DatasetT = TypeVar("DatasetT", TokenLevelDataset, ChunkLevelDataset)

NO_LLM = (
    "needs an LLM, and none is configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for another "
    "OpenAI-protocol server), or install the local SmolLM2 model (make local-llm), or use the "
    "deterministic generator 'paraphrase' (or 'known-item')"
)


@dataclass(frozen=True)
class FilterReport:
    """What one step between the generator and the dataset removed, and how it was set: the generator's
    own checks, then each filter; a filter that is off removes nothing and says so."""

    name: str  # "generator", "deduplicate", "retrievability"
    setting: str  # "cosine >= 0.9", "off", ...
    removed: int

    def describe(self) -> str:
        return f"{self.name} ({self.setting}) {self.removed}"


def filter_reports(
    generator: GenerationResult[ExampleT],
    unique: GenerationResult[ExampleT],
    tied: GenerationResult[ExampleT],
    dedup_threshold: float,
    top_n: int,
    embedder: Embedder,
) -> tuple[FilterReport, ...]:
    return (
        FilterReport("generator", "its own checks", len(generator.rejections)),
        FilterReport("deduplicate", f"cosine >= {dedup_threshold:g}", len(unique.rejections)),
        FilterReport(
            "retrievability",
            f"source in the top {top_n} of {embedder.model_id}" if top_n > 0 else "off",
            len(tied.rejections),
        ),
    )


@dataclass(frozen=True)
class Synthesized(Generic[DatasetT]):
    dataset: DatasetT
    rejections: tuple[Rejection, ...]
    generator: str
    estimate: CostEstimate | None = None  # the cost estimate checked against the budget (LLM only)
    # the questions this generation made (all but the kept ones of a per-document regeneration)
    generated: tuple[QuestionId, ...] | None = None
    count: QuestionCount | None = None  # token-level: how many questions were asked for, and why
    filters: tuple[FilterReport, ...] = ()  # what the generator's checks and each filter removed

    @property
    def rejected_by_reason(self) -> dict[str, int]:
        return dict(sorted(Counter(r.reason for r in self.rejections).items()))

    @property
    def removed_by_filter(self) -> dict[str, int]:
        return {f.name: f.removed for f in self.filters}

    def describe_filters(self) -> str:
        """``generator (its own checks) 0, deduplicate (cosine >= 0.9) 2, retrievability (off) 0``."""
        return ", ".join(f.describe() for f in self.filters)


def synthesize_token_level(
    corpus: Corpus,
    settings: TokenLevelSettings,
    embedder: Embedder,
    client: LLMClient | None = None,
    llm: LLMSettings | None = None,
    progress: Progress = no_progress,
    name: str = "synthetic",
    *,
    documents: Collection[str] | None = None,
    kept: Sequence[TokenLevelExample] = (),
    probe_configs: Sequence[ChunkConfig] = (),
    root: Path | None = None,
) -> Synthesized[TokenLevelDataset]:
    """The questions of ``corpus``; with ``documents``, those of these documents only (the generators
    plan over the whole corpus, then ask about them alone), de-duplicated against the ``kept`` questions
    of the other documents, which the dataset holds unchanged (``rag-eval regenerate-questions
    --document``). ``rejections`` and ``generated`` are this generation's. ``probe_configs``: the
    configured chunk configs, whose chunks the retrievability probe (when on) searches
    (``probe_config``); ``root``: the workspace their tokenizer paths are relative to."""
    llm = llm or LLMSettings()
    estimate = None
    plan = None
    if settings.generator != "llm":  # generators that ask about passages: drawn once, for the count too
        plan = plan_passages(
            corpus,
            settings.question_target(),
            settings.seed,
            settings.passage_min_chars,
            settings.passage_max_chars,
        )
    count = plan.count if plan is not None else llm_question_count(corpus, settings)
    if settings.generator == "paraphrase":
        paraphrase = ParaphraseGenerator(
            embedder,
            seed=settings.seed,
            min_chars=settings.passage_min_chars,
            max_chars=settings.passage_max_chars,
        )
        result = paraphrase.generate_token_level(
            corpus, settings.question_target(), documents, passages=plan.passages if plan else None
        )
    elif settings.generator == "known-item":
        known_item = KnownItemGenerator(
            seed=settings.seed, min_chars=settings.passage_min_chars, max_chars=settings.passage_max_chars
        )
        result = known_item.generate_token_level(
            corpus, settings.question_target(), documents, passages=plan.passages if plan else None
        )
    else:
        if client is None:
            raise ConfigError(f"token_level.generator {settings.generator!r} {NO_LLM}")
        generator: LLMTokenLevelGenerator | ExcerptFirstGenerator
        if settings.generator == "llm":
            generator = LLMTokenLevelGenerator(
                client,
                questions_per_document=settings.questions_per_document,
                cross_document_pairs=settings.cross_document_pairs,
                max_document_chars=settings.max_document_chars,
                params=CompletionParams(llm.temperature, llm.max_tokens, json_mode=True, seed=settings.seed),
                repair_attempts=llm.repair_attempts,
                documents=documents,
            )
        else:
            generator = ExcerptFirstGenerator(
                client,
                n_questions=settings.question_target(),
                seed=settings.seed,
                min_chars=settings.passage_min_chars,
                max_chars=settings.passage_max_chars,
                # a question and its answer: enough for both, small enough for a local model
                params=CompletionParams(llm.temperature, min(llm.max_tokens, 160), seed=settings.seed),
                repair_attempts=llm.repair_attempts,
                documents=documents,
                passages=plan.passages if plan else None,
            )
        estimate = client.estimate(generator.planned_requests(corpus))
        check_budget(estimate, llm.budget_usd)
        result = generator.generate(corpus, progress)
    top_n = settings.retrievability_top_n
    # the probe searches a configured chunk config's chunks, which its chunk_index embeds anyway
    windows = probe_windows(corpus, probe_configs, root) if top_n > 0 else []
    # questions and probe passages in one call to the model (de-duplication, then the probe)
    model = PrefetchEmbedder(embedder, quality_texts(result.examples, windows, top_n, kept))
    unique = deduplicate(result.examples, model, settings.dedup_threshold, known=kept)
    tied = filter_unretrievable_token_level(unique.examples, corpus, model, top_n, windows)
    return Synthesized(
        TokenLevelDataset((*kept, *tied.examples), name=name),
        result.rejections + unique.rejections + tied.rejections,
        settings.generator,
        estimate,
        generated=tuple(e.question_id for e in tied.examples),
        count=count,
        filters=filter_reports(result, unique, tied, settings.dedup_threshold, top_n, embedder),
    )


def synthesize_chunk_level(
    chunks: Sequence[PositionAwareChunk],
    chunker_fingerprint: str,
    settings: ChunkLevelSettings,
    embedder: Embedder,
    client: LLMClient | None = None,
    llm: LLMSettings | None = None,
    progress: Progress = no_progress,
    name: str = "chunk-level",
) -> Synthesized[ChunkLevelDataset]:
    llm = llm or LLMSettings()
    estimate = None
    if settings.generator == "known-item":
        result = KnownItemGenerator(seed=settings.seed).generate_chunk_level(chunks, settings.max_chunks)
    else:
        if client is None:
            raise ConfigError(f"chunk_level.generator {settings.generator!r} {NO_LLM}")
        generator = LLMChunkLevelGenerator(
            client,
            max_chunks=settings.max_chunks,
            questions_per_chunk=settings.questions_per_chunk,
            seed=settings.seed,
            params=CompletionParams(llm.temperature, llm.max_tokens, json_mode=True, seed=settings.seed),
            repair_attempts=llm.repair_attempts,
        )
        estimate = client.estimate(generator.planned_requests(chunks))
        check_budget(estimate, llm.budget_usd)
        result = generator.generate(chunks, progress)
    top_n = settings.retrievability_top_n
    model = PrefetchEmbedder(embedder, quality_texts(result.examples, chunks, top_n))
    unique = deduplicate(result.examples, model, settings.dedup_threshold)
    tied = filter_unretrievable_chunk_level(unique.examples, chunks, model, top_n)
    return Synthesized(
        ChunkLevelDataset(tied.examples, chunker_fingerprint, name=name),
        result.rejections + unique.rejections + tied.rejections,
        settings.generator,
        estimate,
        filters=filter_reports(result, unique, tied, settings.dedup_threshold, top_n, embedder),
    )
