"""Where the evaluated questions come from: which sets an evaluation uses, and which generators made them.

The rule for ``evaluate_on`` (data/generation.yaml) and the golden file (``data/datasets/
golden_token_level.jsonl``, or the file ``RAG_EVAL_GOLDEN_DATASET`` names):

| evaluate_on | golden file present        | golden file missing                                        |
|-------------|----------------------------|------------------------------------------------------------|
| golden      | golden only                | synthetic only, with a warning naming the file and the fix |
| both        | golden + synthetic         | synthetic only, saying so                                  |
| synthetic   | synthetic only             | synthetic only                                             |

A project's own documents rarely come with labelled questions, so a missing golden file at the default
location is not an error: the run evaluates on questions from the configured generator and says how to
bring real ones. A golden file named explicitly (``RAG_EVAL_GOLDEN_DATASET``, or the project resource's
``golden_dataset``) that does not exist is an error: a typo must not silently switch the questions. A
golden file that exists but is broken is an error naming its file and line (core/datasets.py).

The synthetic set is computed only when it is used (``QuestionSources.synthetic``): its retrievability
probe embeds the whole corpus, which is hours on a large document.

Known-item questions (core/generation/known_item.py) are bags of a passage's salient terms: they favour
keyword retrieval (BM25), so a board ranked on them says so (core/leaderboard/ranking.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from .known_item import GENERATOR as KNOWN_ITEM_GENERATOR
from .settings import DatasetChoice, GenerationSettings

# The origin of a question without a ``generator`` in its metadata: written or imported by people.
PROVIDED = "provided"


@dataclass(frozen=True)
class QuestionSources:
    """The question sets an evaluation uses, as decided by ``question_sources``."""

    configured: DatasetChoice  # evaluate_on as written
    golden: bool
    synthetic: bool
    golden_file: Path
    note: str = ""  # why the sets differ from ``configured`` ("" when they do not): warned of once

    @property
    def name(self) -> DatasetChoice:
        """The set evaluated: what the dataset, its LangSmith copy and the metadata are named after."""
        if self.golden and self.synthetic:
            return "both"
        return "golden" if self.golden else "synthetic"

    def synthetic_unused(self) -> str:
        """Why ``synthetic_questions`` computes nothing ("" when the evaluation uses it)."""
        if self.synthetic:
            return ""
        return (
            f"not computed: the evaluation uses only the golden set ({self.golden_file}; evaluate_on: "
            f"{self.configured}); set evaluate_on: synthetic or both in data/generation.yaml to use "
            "synthetic questions, or run `rag-eval regenerate-questions` to generate them anyway"
        )


def question_sources(
    settings: GenerationSettings, golden_file: Path, *, golden_file_named: bool = False
) -> QuestionSources:
    """The rule of the module docstring. ``golden_file_named``: the golden file was named explicitly
    (not the default location), so its absence is an error (``DatasetError``)."""
    configured = settings.evaluate_on
    if configured == "synthetic":
        return QuestionSources(configured, golden=False, synthetic=True, golden_file=golden_file)
    if golden_file.exists():
        return QuestionSources(
            configured, golden=True, synthetic=configured == "both", golden_file=golden_file
        )
    if golden_file_named:
        raise DatasetError(
            f"the golden dataset {golden_file} (named by RAG_EVAL_GOLDEN_DATASET or the project's "
            "golden_dataset) does not exist: fix the path, or unset it to use the default location"
        )
    generator = settings.token_level.generator
    instead = "instead of the golden set" if configured == "golden" else "only (evaluate_on: both)"
    note = (
        f"no golden dataset at {golden_file}: evaluating on synthetic questions ({generator} generator, "
        f"token_level in data/generation.yaml) {instead}; to evaluate on your own questions, "
        f"`rag-eval dataset import FILE --out {golden_file}`, or set evaluate_on: synthetic to "
        "silence this"
    )
    return QuestionSources(configured, golden=False, synthetic=True, golden_file=golden_file, note=note)


def question_generators(metadata: Iterable[Mapping[str, Any]]) -> str:
    """The generators that made a set of questions (from each example's metadata), sorted and joined by
    ", "; a question without one is ``provided`` (written or imported by people)."""
    names = {str(m.get("generator") or PROVIDED) for m in metadata}
    return ", ".join(sorted(names))


def known_item_share(generators: str) -> str:
    """``all``, ``some`` or ``none``: how much of a set ``question_generators`` describes is known-item."""
    names = {name.strip() for name in generators.split(",") if name.strip()}
    if KNOWN_ITEM_GENERATOR not in names:
        return "none"
    return "all" if names == {KNOWN_ITEM_GENERATOR} else "some"
