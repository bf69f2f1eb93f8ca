"""Where the evaluated questions come from: which sets an evaluation uses, and which generators made them.

The rule for ``evaluate_on`` (data/generation.yaml) and the golden file (``data/datasets/
golden_token_level.jsonl``, or the file ``RAG_EVAL_GOLDEN_DATASET`` names):

| evaluate_on | golden file present        | golden file missing                                        |
|-------------|----------------------------|------------------------------------------------------------|
| golden      | golden only                | bad input (``DatasetError``): the file and the import      |
| both        | golden + synthetic         | bad input (``DatasetError``): the file and the import      |
| synthetic   | synthetic only             | synthetic only                                             |

Asking for the golden set (``golden``, the default, or ``both``) and not having it is bad input, said
before any run: evaluating on other questions than the ones asked for would give a board that looks
like an answer to the wrong question. A workspace made by `rag-eval init` starts with ``evaluate_on:
synthetic`` (no golden questions yet), and the error names the command that brings them. A golden
file that exists but is broken is an error naming its file and line (core/questions/datasets.py).

The synthetic set is computed only when it is used (``QuestionSources.synthetic``): its generator embeds
the documents' terms and sentences, and its retrievability probe (when on) a chunk config's chunks.

Known-item questions (core/generation/known_item.py) are bags of a passage's salient terms: they favour
keyword retrieval (BM25), so a board ranked on them says so (core/leaderboard/view.py).
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
    """The rule of the module docstring: a ``DatasetError`` naming the golden file, how it was chosen
    (``golden_file_named``: by RAG_EVAL_GOLDEN_DATASET or the project's golden_dataset, not the
    default location) and the import that makes it, when evaluate_on asks for it and it is missing."""
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
    written = settings.source != GenerationSettings().source  # read from a file, not the defaults
    generation = settings.source if written else "data/generation.yaml"
    where = f"in {generation}" if written else f"the default, as there is no {generation}"
    raise DatasetError(
        f"evaluate_on: {configured} ({where}) asks for the golden dataset {golden_file}, which does not "
        f"exist: import your questions with `rag-eval dataset import FILE --out {golden_file}` (JSONL or "
        f"CSV, checked against the corpus), or set evaluate_on: synthetic in {generation} to evaluate on "
        f"generated questions ({settings.token_level.generator} generator)"
    )


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
