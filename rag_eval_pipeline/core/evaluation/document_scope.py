"""Which documents a chunk config covers, and what that means for its evaluation.

A chunk config applied to some documents only (``documents:`` in data/chunk_configs.yaml, `rag-eval
chunk-configs apply NAME --document DOC`) cuts those documents and no other: its chunk set, its indexes
and its retrieval know nothing else. So it is evaluated on the questions it can answer: those whose
every reference span lies in its documents. A question about another document would score 0 for a
reason that has nothing to do with chunking. Its metrics therefore describe another question set than
a whole-corpus setup's, and the leaderboard does not rank the two together (``key`` is what it
compares: core/leaderboard/ranking.py).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from ..corpus.corpus import Corpus
from ..errors import ConfigError
from ..questions.datasets import TokenLevelDataset
from ..settings.configs import ChunkConfig
from ..types import sha256_hex

# The ``document_scope`` of a whole-corpus setup: every metrics row written before scopes existed too.
WHOLE_CORPUS = ""
_GLOB_CHARACTERS = frozenset("*?[")


@dataclass(frozen=True)
class DocumentScope:
    """The documents a chunk set covers (None: every document of the corpus)."""

    documents: frozenset[str] | None = None

    @staticmethod
    def of(config: ChunkConfig) -> DocumentScope:
        return DocumentScope(None if config.documents is None else frozenset(config.documents))

    @property
    def is_whole_corpus(self) -> bool:
        return self.documents is None

    def covers(self, doc_id: str) -> bool:
        return self.documents is None or doc_id in self.documents

    def corpus(self, corpus: Corpus) -> Corpus:
        """The documents of ``corpus`` in the scope, in the corpus's order."""
        if self.documents is None:
            return corpus
        return Corpus(tuple(d for d in corpus if d.doc_id in self.documents), root=corpus.root)

    def missing(self, corpus: Corpus) -> list[str]:
        """Documents of the scope that the corpus does not hold (deleted or renamed since)."""
        return sorted(d for d in self.documents or () if d not in corpus)

    def questions(self, dataset: TokenLevelDataset) -> TokenLevelDataset:
        """The questions whose every reference span lies in the scope's documents."""
        if self.documents is None:
            return dataset
        kept = tuple(e for e in dataset.examples if all(self.covers(s.doc_id) for s in e.relevant_spans))
        return TokenLevelDataset(kept, name=dataset.name)

    @property
    def key(self) -> str:
        """What rows are compared by: "" for the whole corpus, else the number of documents and a hash of
        their ids (two configs over the same documents share it)."""
        if self.documents is None:
            return WHOLE_CORPUS
        n = len(self.documents)
        return f"{n} document{'s' * (n != 1)} {sha256_hex(chr(10).join(sorted(self.documents)))[:8]}"

    def describe(self, limit: int = 3) -> str:
        if self.documents is None:
            return "every document"
        names = sorted(self.documents)
        shown = ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")
        return f"{len(names)} document{'s' * (len(names) != 1)} ({shown})"


def resolve_documents(patterns: Sequence[str], corpus_ids: Collection[str], where: str) -> list[str]:
    """The document ids ``patterns`` name: exact ids, or globs (``ops/*.md``) matched against the corpus;
    a pattern that names no document of the corpus is an error naming it (``where``: the option)."""
    found: list[str] = []
    for pattern in patterns:
        if not pattern.strip():
            raise ConfigError(
                f"{where}: an empty document id; give a path in the corpus folder, e.g. ops/on_call.md"
            )
        if _GLOB_CHARACTERS & set(pattern):
            matches = sorted(d for d in corpus_ids if fnmatchcase(d, pattern))
        else:
            matches = [pattern] if pattern in corpus_ids else []
        if not matches:
            raise ConfigError(f"{where}: {pattern!r} names no document of the corpus; {_known(corpus_ids)}")
        found += [m for m in matches if m not in found]
    return found


def _known(corpus_ids: Iterable[str], limit: int = 8) -> str:
    ids = sorted(corpus_ids)
    shown = ", ".join(ids[:limit]) + (", ..." if len(ids) > limit else "")
    return f"its {len(ids)} documents are: {shown} (ids are paths relative to the corpus folder; globs such as 'ops/*.md' work)"
