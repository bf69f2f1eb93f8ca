"""What each round of a race evaluates on: a nested sample of the questions and, with corpus sampling, a
nested sample of the corpus.

Questions: one seeded order of all questions; round r takes the first n_r = first_sample x growth^r of
them (the last round all N), so a larger sample contains the smaller one and a candidate's earlier
answers stay valid.

Corpus: an index must hold every chunk to answer a question exactly, and embedding the chunks is what a
grid pays most for. So, with ``corpus_sampling``, round r indexes only part of the corpus: the documents
are cut into blocks of ``block_chars`` characters (by offsets, the same for every chunker), and the round
keeps every block that holds a reference of its questions (a question can always find its answer) plus
the first ceil(n_r / N x blocks) of one seeded order of all blocks (the distractors grow with the
sample); a round that keeps every block indexes the whole corpus (a small corpus does from the first
round). Every chunk sharing a character with a kept block is indexed. The sets are nested, so a chunk
embedded in an early round is never embedded again, and the last round holds the whole corpus. Each
question is scored in the round that first asks it, on that round's corpus; every candidate alive then
is scored on the same corpus, so the paired comparison stays fair. The survivors are scored again on
every question over the whole corpus before the winning tier is named (race.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..corpus import Corpus
from ..spans import SpanLike
from ..types import DocumentId, QuestionId


@dataclass(frozen=True)
class Block:
    doc_id: DocumentId
    start: int
    end: int


@dataclass(frozen=True)
class Round:
    """One round of a race: the questions scored so far (nested), those it adds, and the corpus blocks it
    indexes (None: the whole corpus)."""

    index: int
    questions: tuple[QuestionId, ...]
    new_questions: tuple[QuestionId, ...]
    blocks: frozenset[Block] | None

    @property
    def full_corpus(self) -> bool:
        return self.blocks is None

    def keeps(self, chunk: SpanLike) -> bool:
        """Whether the round indexes ``chunk``: it shares a character with a kept block."""
        if self.blocks is None:
            return True
        return any(
            b.doc_id == chunk.doc_id and b.start < chunk.end and chunk.start < b.end for b in self.blocks
        )


def corpus_blocks(corpus: Corpus, block_chars: int) -> list[Block]:
    """Each document cut into windows of ``block_chars`` characters (the last one shorter)."""
    return [
        Block(document.doc_id, start, min(start + block_chars, len(document.text)))
        for document in corpus
        for start in range(0, max(len(document.text), 1), block_chars)
    ]


def sample_sizes(n_questions: int, first_sample: int, growth: float) -> list[int]:
    """n_0 = first_sample, n_r = ceil(n_{r-1} x growth), capped at (and always ending with) N."""
    sizes = []
    size = min(first_sample, n_questions)
    while size < n_questions:
        sizes.append(size)
        size = min(n_questions, math.ceil(size * growth))
    return [*sizes, n_questions]


def rounds(
    question_ids: Sequence[QuestionId],
    references: Mapping[QuestionId, Sequence[SpanLike]],
    corpus: Corpus,
    *,
    first_sample: int,
    growth: float,
    seed: int,
    corpus_sampling: bool,
    block_chars: int,
) -> list[Round]:
    """The race's rounds over ``question_ids`` (their order given does not matter: they are sorted, then
    shuffled with ``seed``)."""
    order = sorted(question_ids)
    random.Random(seed).shuffle(order)
    blocks = corpus_blocks(corpus, block_chars)
    block_order = list(blocks)
    random.Random(seed + 1).shuffle(block_order)
    found: list[Round] = []
    done = 0
    sizes = sample_sizes(len(order), first_sample, growth)
    for index, size in enumerate(sizes):
        asked = tuple(order[:size])
        kept: frozenset[Block] | None = None
        if corpus_sampling and size < len(order):
            distractors = block_order[: math.ceil(size / len(order) * len(blocks))]
            kept = frozenset(distractors) | frozenset(
                _holding(blocks, (s for q in asked for s in references[q]))
            )
        found.append(Round(index, asked, tuple(order[done:size]), kept))
        done = size
    return found


def _holding(blocks: Sequence[Block], spans: Iterable[SpanLike]) -> set[Block]:
    """The blocks sharing a character with any of ``spans``."""
    wanted = list(spans)
    return {
        b for b in blocks if any(b.doc_id == s.doc_id and b.start < s.end and s.start < b.end for s in wanted)
    }
