"""``data/answer_evaluation.yaml``: how answers are made and judged.

Every key is optional; a project without the file gets the defaults: extractive answers offline (an LLM
when OPENAI_API_KEY is set), semantic threshold 0.75 fitted on the bundled human labels, the LLM judge on
the top 5 pairs only when a remote LLM is configured. The LLM itself (model, retries, budget) is the one
of data/generation.yaml. Errors name the file and the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..errors import ConfigError
from ..metrics.names import SEMANTIC_SIMILARITY, RankBy
from ..settings.settings_file import require_integer, require_unit

AnswererChoice = Literal["auto", "llm", "extractive", "off"]
LLMJudging = Literal["auto", "on", "off"]
ThresholdObjective = Literal["accuracy", "f1"]


@dataclass(frozen=True)
class SemanticSettings:
    threshold: float = 0.75  # semantic_fixed, and semantic_dynamic's fallback
    labels: str = "data/datasets/golden_answer_labels.jsonl"  # question_id, answer, correct 0/1
    objective: ThresholdObjective = "accuracy"
    min_labels: int = 10  # fewer labelled answers: the fixed threshold, with the reason recorded
    folds: int = 5  # cross-validation folds for semantic_dynamic's agreement with the labels


@dataclass(frozen=True)
class JudgeSettings:
    top_n: int = 5  # chunk config x profile pairs the judge sees, best by rank_by
    rank_by: RankBy = SEMANTIC_SIMILARITY
    pass_score: float = 0.6  # a judged score at or above this counts as correct
    repair_attempts: int = 1  # an unparseable judgement is asked for again this many times


@dataclass(frozen=True)
class HybridSettings:
    margin: float = 0.10  # the judge decides where |similarity - threshold| < margin


@dataclass(frozen=True)
class ProductionSettings:
    recall_threshold: float = 0.7  # context_recall_llm runs below this heuristic recall, or on a warning


@dataclass(frozen=True)
class AnswerSettings:
    # auto: the LLM when OPENAI_API_KEY is set, else extractive (offline, deterministic, no LLM) where a
    # question has a reference answer or keywords to score it against, else none; off: never any answer
    answerer: AnswererChoice = "auto"
    max_context_chars: int = 6000
    # The judge, the hybrid's judge and context_recall_llm. auto: only with an OpenAI-protocol LLM (the
    # local 135M model writes questions but is no judge); on: whatever LLM data/generation.yaml gives.
    llm_judging: LLMJudging = "auto"
    semantic: SemanticSettings = field(default_factory=SemanticSettings)
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    hybrid: HybridSettings = field(default_factory=HybridSettings)
    production: ProductionSettings = field(default_factory=ProductionSettings)
    source: str = field(default="(defaults)", compare=False)

    def __post_init__(self) -> None:
        require_integer("max_context_chars", self.max_context_chars, 200)
        s, j = self.semantic, self.judge
        require_unit("semantic.threshold", s.threshold)
        require_integer("semantic.min_labels", s.min_labels, 2)
        require_integer("semantic.folds", s.folds, 2)
        if not s.labels:
            raise ConfigError(f"semantic.labels must be a path relative to the project, got {s.labels!r}")
        require_integer("judge.top_n", j.top_n, 0)
        require_unit("judge.pass_score", j.pass_score)
        require_integer("judge.repair_attempts", j.repair_attempts, 0)
        require_unit("hybrid.margin", self.hybrid.margin)
        require_unit("production.recall_threshold", self.production.recall_threshold)
