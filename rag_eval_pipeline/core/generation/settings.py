"""``data/generation.yaml``: which questions the evaluation uses, how synthetic ones are made, which LLM.

Every key is optional; a project without the file gets the defaults (evaluate on the golden set; the
deterministic paraphrase generator, which needs no LLM). Errors name the file and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError
from ..llm.accounting import Price
from ..settings.settings_file import Converter, check_value
from .quotas import CountRule, QuestionTarget

DatasetChoice = Literal["golden", "synthetic", "both"]
# The generators that need no LLM (deterministic, free); the others need one.
OfflineGenerator = Literal["paraphrase", "known-item"]
TokenLevelGenerator = Literal[OfflineGenerator, "llm", "excerpt-first"]
# The token-level generators that need an LLM; every other one runs offline (no key, nothing downloaded).
LLM_TOKEN_LEVEL_GENERATORS = frozenset({"llm", "excerpt-first"})
ChunkLevelGenerator = Literal["known-item", "llm"]
LLMProvider = Literal["auto", "openai", "local"]


@dataclass(frozen=True)
class TokenLevelSettings:
    """``synthetic_questions``: chunker-independent questions with character-span ground truth."""

    # paraphrase: questions written from a passage's sentence (its answer left out, related document
    # terms substituted), deterministic, no LLM, ranking setups as natural questions do (paraphrase.py);
    # known-item: simulated keyword queries from a passage's rarest terms (they favour BM25);
    # llm: the LLM writes questions and quotes their excerpts; excerpt-first: passages are chosen
    # first, the LLM writes one question each (suits small local models).
    generator: TokenLevelGenerator = "paraphrase"
    # paraphrase, known-item and excerpt-first: auto follows the corpus (core/generation/quotas.py), or a number
    n_questions: int | Literal["auto"] = "auto"
    min_questions: int = 100  # auto: at least this many, when the documents hold the passages
    max_questions: int = 500  # auto: at most this many (retrieval work, an LLM generator's bill)
    prose_unit_chars: int = 10_000  # auto: a document is asked ceil(sqrt(its prose / this)) questions
    questions_per_document: int = 2  # llm
    cross_document_pairs: int = 3  # llm: pairs of related documents asked for two-document questions
    max_document_chars: int = 12_000  # llm: longer documents are sent in sections of this size
    passage_min_chars: int = 200  # all but llm: the passages questions are made from
    passage_max_chars: int = 600
    seed: int = 13
    dedup_threshold: float = 0.9  # cosine similarity at or above which a question repeats an earlier one
    # >0 keeps only questions whose source a local dense retriever finds in its top n (of a configured
    # chunk config's chunks, quality.py probe_config): a selection that favours that retriever over the
    # others being compared, so it is off (0) by default
    retrievability_top_n: int = 0

    def __post_init__(self) -> None:
        n = self.n_questions
        if n != "auto" and (not isinstance(n, int) or isinstance(n, bool) or n < 1):
            raise ConfigError(f"token_level.n_questions must be auto or an integer >= 1, got {n!r}")
        for name in (
            "questions_per_document",
            "max_document_chars",
            "passage_min_chars",
            "min_questions",
            "prose_unit_chars",
        ):
            _check_int(self, name, minimum=1)
        _check_int(self, "max_questions", minimum=self.min_questions)
        _check_int(self, "passage_max_chars", minimum=self.passage_min_chars)
        for name in ("cross_document_pairs", "retrievability_top_n", "seed"):
            _check_int(self, name, minimum=0)
        _check_unit(self, "dedup_threshold")

    def question_target(self) -> QuestionTarget:
        """What ``n_questions`` asks for: a number, or the rule that follows the corpus."""
        if self.n_questions == "auto":
            return CountRule(self.min_questions, self.max_questions, self.prose_unit_chars)
        return self.n_questions


@dataclass(frozen=True)
class ChunkLevelSettings:
    """``chunk_level_questions[chunk_config]``: questions whose ground truth is chunk ids."""

    generator: ChunkLevelGenerator = "known-item"
    max_chunks: int = 30  # chunks sampled (seeded) per chunk config
    questions_per_chunk: int = 2  # DENSE chunks; MODERATE ones get one
    seed: int = 13
    dedup_threshold: float = 0.9
    retrievability_top_n: int = 0  # as token_level's: off, it favours the dense retriever

    def __post_init__(self) -> None:
        _check_int(self, "max_chunks", minimum=1)
        _check_int(self, "questions_per_chunk", minimum=1)
        _check_int(self, "seed", minimum=0)
        _check_int(self, "retrievability_top_n", minimum=0)
        _check_unit(self, "dedup_threshold")


@dataclass(frozen=True)
class LLMSettings:
    # auto: OpenAI (or OPENAI_BASE_URL's server) when OPENAI_API_KEY is set, else the local SmolLM2.
    provider: LLMProvider = "auto"
    model: str = "gpt-4o-mini"  # RAG_EVAL_LLM_MODEL overrides
    temperature: float = 0.0
    max_tokens: int = 1024
    requests_per_minute: float | None = 60.0
    max_concurrency: int = 4
    timeout_s: float = 60.0
    max_attempts: int = 6
    repair_attempts: int = 1
    budget_usd: float | None = 2.0  # a run whose estimate exceeds it refuses to start; null: no cap
    prices: Mapping[str, Price] = field(default_factory=dict)  # $ per million tokens, over the defaults

    def __post_init__(self) -> None:
        for name in ("max_tokens", "max_concurrency", "max_attempts"):
            _check_int(self, name, minimum=1)
        _check_int(self, "repair_attempts", minimum=0)
        for name in ("requests_per_minute", "budget_usd"):
            value = getattr(self, name)
            if value is not None and (not _is_number(value) or value < 0):
                raise ConfigError(f"llm.{name} must be a number >= 0 or null, got {value!r}")
        for name in ("temperature", "timeout_s"):
            if not _is_number(getattr(self, name)) or getattr(self, name) < 0:
                raise ConfigError(f"llm.{name} must be a number >= 0, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class LangSmithNames:
    """Dataset names in LangSmith: ``<prefix>-golden``, ``<prefix>-synthetic``, ``<prefix>-both`` and
    ``<prefix>-chunk-level-<chunk config>``."""

    dataset_prefix: str = "rag-eval"

    def __post_init__(self) -> None:
        if not self.dataset_prefix.strip():
            raise ConfigError("langsmith.dataset_prefix must be a non-empty string")

    def dataset(self, kind: str) -> str:
        return f"{self.dataset_prefix}-{kind}"


@dataclass(frozen=True)
class GenerationSettings:
    evaluate_on: DatasetChoice = "golden"
    token_level: TokenLevelSettings = field(default_factory=TokenLevelSettings)
    chunk_level: ChunkLevelSettings = field(default_factory=ChunkLevelSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    langsmith: LangSmithNames = field(default_factory=LangSmithNames)
    source: str = field(default="(defaults)", compare=False)

    @staticmethod
    def file_converters(path: Path) -> Mapping[str, Converter]:
        """The keys whose file form differs from their field, for ``load_settings``: ``llm.prices`` as
        written ({model: {input: $, output: $}}) read into Price objects, errors naming ``path``."""
        return {"llm.prices": _prices(path)}


def _prices(path: Path) -> Converter:
    """``llm.prices`` as written ({model: {input: $, output: $}}) read into Price objects."""

    def read(raw: Any, key: str) -> dict[str, Price]:
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: {key} must map model names to {{input: ..., output: ...}}")
        prices = {}
        for model, price in raw.items():
            where = f"{key}.{model}"
            if not isinstance(price, dict) or set(price) != {"input", "output"}:
                raise ConfigError(
                    f"{path}: {where} must be {{input: <$ per million>, output: <$ per million>}}"
                )
            cost = {side: check_value(float, price[side], path, f"{where}.{side}") for side in price}
            if min(cost.values()) < 0:
                raise ConfigError(f"{path}: {where}: prices must be numbers >= 0")
            prices[str(model)] = Price(cost["input"], cost["output"])
        return prices

    return read


def _section_name(obj: object) -> str:
    return {
        TokenLevelSettings: "token_level.",
        ChunkLevelSettings: "chunk_level.",
        LLMSettings: "llm.",
    }.get(type(obj), "")


def _check_int(obj: object, name: str, minimum: int) -> None:
    value = getattr(obj, name)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{_section_name(obj)}{name} must be an integer >= {minimum}, got {value!r}")


def _check_unit(obj: object, name: str) -> None:
    value = getattr(obj, name)
    if not _is_number(value) or not 0 < value <= 1:
        raise ConfigError(f"{_section_name(obj)}{name} must be a number in (0, 1], got {value!r}")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
