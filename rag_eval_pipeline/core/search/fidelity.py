"""What each round of a race evaluates on: a nested sample of the questions and, with corpus sampling, a
nested sample of the corpus.

Questions: one seeded order of all questions; round r takes the first n_r = first_sample x growth^r of
them (the last round all N), so a larger sample contains the smaller one and a candidate's earlier
answers stay valid.

Corpus: an index must hold every chunk that answers a question, and embedding the chunks is what a grid
pays most for. So, with ``corpus_sampling``, a round indexes only part of the corpus, the same part for
every chunker:

- every chunk that shares a character with a reference of the round's questions (a question can always
  find its answer, and no more of the text around it than the chunk holds);
- distractors: the documents are cut into blocks of ``block_chars`` characters, and the round keeps the
  chunks whose middle character lies in the first ceil(distractors x n_r / N x blocks) of one seeded
  order of all blocks. Each chunk belongs to one block, so a kept share of the blocks keeps that share of
  every chunker's other chunks, whatever their size (a chunk kept for any character it shares with a
  block would keep a large chunk for a sliver of it).

The distractors grow with the sample; ``distractors`` 1 makes the last round the whole corpus, less keeps
fewer distractors (cheaper, and easier than the whole corpus: scores run higher, and the race looks for
differences, not levels). A round that keeps every block indexes the whole corpus. The sets are nested,
so a chunk embedded in an early round is never embedded again. Each question is scored in the round
that first asks it, on that round's corpus; every candidate alive then is scored on the same corpus, so
the paired comparison stays fair. The best survivors are scored again on every question over the whole
corpus before the winning tier is named (race.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from ..corpus.corpus import Corpus
from ..spans import SpanLike
from ..types import DocumentId, QuestionId


@dataclass(frozen=True)
class Block:
    doc_id: DocumentId
    start: int
    end: int


@dataclass(frozen=True)
class Round:
    """One round of a race: the questions scored so far (nested), those it adds, and what of the corpus
    it indexes: the distractor ``blocks`` (None: the whole corpus) and the ``references`` of its
    questions (as blocks of their own)."""

    index: int
    questions: tuple[QuestionId, ...]
    new_questions: tuple[QuestionId, ...]
    blocks: frozenset[Block] | None
    references: frozenset[Block] = frozenset()

    @property
    def full_corpus(self) -> bool:
        return self.blocks is None

    @property
    def number(self) -> int:
        """The round as people count them (1 for the first); ``index`` names its stored scores."""
        return self.index + 1

    def keeps(self, chunk: SpanLike) -> bool:
        """Whether the round indexes ``chunk``: it shares a character with a reference, or its middle
        character lies in a kept block."""
        if self.blocks is None:
            return True
        middle = (chunk.start + max(chunk.end - 1, chunk.start)) // 2
        if any(b.start <= middle < b.end for b in self._by_document[0].get(chunk.doc_id, ())):
            return True
        return any(
            r.start < chunk.end and chunk.start < r.end for r in self._by_document[1].get(chunk.doc_id, ())
        )

    @cached_property
    def _by_document(self) -> tuple[dict[DocumentId, list[Block]], dict[DocumentId, list[Block]]]:
        blocks: dict[DocumentId, list[Block]] = {}
        references: dict[DocumentId, list[Block]] = {}
        for block in self.blocks or ():
            blocks.setdefault(block.doc_id, []).append(block)
        for reference in self.references:
            references.setdefault(reference.doc_id, []).append(reference)
        return blocks, references


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
    distractors: float = 1.0,
    max_sample: int | None = None,
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
    if max_sample is not None and max_sample < len(order):
        sizes = [*(n for n in sizes if n < max_sample), max_sample]
    for index, size in enumerate(sizes):
        asked = tuple(order[:size])
        kept: frozenset[Block] | None = None
        held: frozenset[Block] = frozenset()
        if corpus_sampling:
            kept = frozenset(block_order[: math.ceil(distractors * size / len(order) * len(blocks))])
            held = frozenset(Block(s.doc_id, s.start, s.end) for q in asked for s in references[q])
            if len(kept) == len(blocks):
                kept, held = None, frozenset()
        found.append(Round(index, asked, tuple(order[done:size]), kept, held))
        done = size
    return found
