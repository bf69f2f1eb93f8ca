"""What a run will cost before it starts: chunks per chunk config and the time to embed them, estimated
from the corpus text lengths and the chunk settings alone (no chunking, no embedding), and the warnings
a user should see before hours of work start on a large document without a word. Besides each chunk
config's chunk_index, synthetic_questions' retrievability probe (when on) embeds a configured chunk
config's chunks, which that chunk_index then finds cached; only without such a config are they its own.

The rate: the guide measured all-MiniLM-L6-v2 (sentence-transformers, batch 64) on 2 CPU cores at ~16-20
passages/s of ~800 characters, i.e. ~13,000-16,000 characters/s; a rerun here while other work shared
the cores gave ~6,000 characters/s on code-heavy text and ~13,000 on 60-character passages. The estimate
uses 10,000 characters/s, counting each passage up to 1,000 characters (MiniLM reads at most 256 word
pieces, about that many characters, and drops the rest). Embeddings already cached are not paid again, so
this is the cost of a first run (or of a changed document); with an OpenAI embedder it is an upper bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..corpus.corpus import Corpus
from ..embedding.cache import CachedEmbedder
from ..generation.quality import PROBE_CONFIG
from ..settings.configs import CHARACTERS_PER_TOKEN, ChunkConfig

EMBED_CHARACTERS_PER_SECOND = 10_000
EMBED_MAX_CHARACTERS = 1_000  # what MiniLM reads of one passage (256 word pieces)
SENTENCE_CHARACTERS = 120  # the semantic chunker embeds every sentence to find topic shifts
LARGE_DOCUMENT_BYTES = 1_000_000  # a document over 1 MB gets its own warning
SLOW_STAGE_SECONDS = 600  # a stage whose embedding would take over 10 minutes gets one too
PROBE_STAGE = "retrievability probe"
# A step whose embedding is expected to take longer than this says so before it starts (issue 34).
ANNOUNCE_SECONDS = 60.0


@dataclass(frozen=True)
class StageEstimate:
    """One stage that embeds the whole corpus: a chunk config's chunk_index (named by the chunk
    config), or synthetic_questions' retrievability probe."""

    stage: str
    n_chunks: int
    embedded_characters: int  # what the embedder reads: passages cut at EMBED_MAX_CHARACTERS

    @property
    def embed_seconds(self) -> float:
        return self.embedded_characters / EMBED_CHARACTERS_PER_SECOND


@dataclass(frozen=True)
class LargeDocument:
    doc_id: str
    n_bytes: int
    n_chunks: int  # over every chunk config of the estimate
    embed_seconds: float


@dataclass(frozen=True)
class Workload:
    corpus_root: str
    n_documents: int
    n_bytes: int
    stages: tuple[StageEstimate, ...]
    large_documents: tuple[LargeDocument, ...]
    left_out: tuple[str, ...] = ()  # stages that could not be estimated, and why

    @property
    def n_chunks(self) -> int:
        return sum(s.n_chunks for s in self.stages)

    @property
    def embed_seconds(self) -> float:
        return sum(s.embed_seconds for s in self.stages)

    @property
    def slow_stages(self) -> tuple[StageEstimate, ...]:
        return tuple(s for s in self.stages if s.embed_seconds > SLOW_STAGE_SECONDS)

    def warnings(self) -> tuple[str, ...]:
        """What was left out of the estimate; then one line per large document and the corpus total
        with the estimate per stage, when a document is large or a stage's embedding takes over 10
        minutes."""
        if not (self.large_documents or self.slow_stages):
            return self.left_out
        names = ", ".join(s.stage for s in self.stages)
        lines = [
            f"large document {d.doc_id} in {self.corpus_root}: {format_bytes(d.n_bytes)} (over "
            f"{format_bytes(LARGE_DOCUMENT_BYTES)})"
            + (
                f"; about {d.n_chunks:,} chunks, ~{format_duration(d.embed_seconds)} to embed ({names})"
                if self.stages
                else ""
            )
            for d in self.large_documents
        ]
        corpus = f"the corpus {self.corpus_root} ({self.n_documents} documents, {format_bytes(self.n_bytes)})"
        if self.stages:
            per_stage = "; ".join(
                f"{s.stage}: about {s.n_chunks:,} chunks, ~{format_duration(s.embed_seconds)}"
                for s in self.stages
            )
            corpus += (
                f" takes ~{format_duration(self.embed_seconds)} to embed on a first run ({per_stage}); "
                f"estimated at {EMBED_CHARACTERS_PER_SECOND:,} characters/s (MiniLM on 2 CPU cores), "
                f"cached embeddings are not paid again"
            )
        lines.append(f"{corpus}; to go faster, split or remove large documents, or use larger chunks")
        return (*self.left_out, *lines)


def estimate_workload(
    corpus: Corpus,
    configs: Sequence[ChunkConfig],
    retrievability_probe: bool = False,
    left_out: Sequence[str] = (),
    probe_chunking: ChunkConfig = PROBE_CONFIG,
) -> Workload:
    """Chunks and embedding time per chunk config (and for the retrievability probe of
    synthetic_questions, when it runs and embeds passages no estimated config does: those of
    ``probe_chunking``), from text lengths and settings alone: cheap. ``left_out`` says which stages
    could not be estimated and why (shown with the warnings)."""
    stages = [(str(c.name), c) for c in configs]
    if retrievability_probe:
        stages.append((PROBE_STAGE, probe_chunking))
    sizes = {d.doc_id: len(d.text.encode("utf-8")) for d in corpus}
    per_document = {  # a config applied to some documents cuts and embeds those only
        d.doc_id: [
            _chunks_and_characters(len(d.text), config)
            if config.documents is None or d.doc_id in config.documents
            else (0, 0)
            for _, config in stages
        ]
        for d in corpus
    }
    estimates = tuple(
        StageEstimate(
            name,
            sum(per_document[d.doc_id][i][0] for d in corpus),
            sum(per_document[d.doc_id][i][1] for d in corpus),
        )
        for i, (name, _) in enumerate(stages)
    )
    large = tuple(
        LargeDocument(
            d.doc_id,
            sizes[d.doc_id],
            sum(n for n, _ in per_document[d.doc_id]),
            sum(chars for _, chars in per_document[d.doc_id]) / EMBED_CHARACTERS_PER_SECOND,
        )
        for d in corpus
        if sizes[d.doc_id] > LARGE_DOCUMENT_BYTES
    )
    return Workload(corpus.root, len(corpus), sum(sizes.values()), estimates, large, tuple(left_out))


def _chunks_and_characters(length: int, config: ChunkConfig) -> tuple[int, int]:
    """(chunks, characters the embedder reads) for one document of ``length`` characters. Windows of
    ``chunk_size`` stepping ``chunk_size - overlap`` (the recursive chunker cuts at separators, so it
    makes somewhat more, smaller chunks: the count is a floor, the characters about right); sizes in
    tokens are converted at CHARACTERS_PER_TOKEN; the semantic chunker also embeds each sentence."""
    scale = CHARACTERS_PER_TOKEN if config.counts_tokens else 1
    size = config.chunk_size * scale
    step = size - config.chunk_overlap * scale
    n_chunks = 1 if length <= size else math.ceil((length - size) / step) + 1
    characters = n_chunks * min(size, length, EMBED_MAX_CHARACTERS)
    if config.chunker == "semantic":
        n_sentences = max(1, math.ceil(length / SENTENCE_CHARACTERS))
        characters += n_sentences * min(SENTENCE_CHARACTERS, length)
    return n_chunks, characters


def embed_seconds(texts: Sequence[str], rate: float = EMBED_CHARACTERS_PER_SECOND) -> float:
    """The estimated time to embed ``texts`` (each read up to EMBED_MAX_CHARACTERS) at ``rate``."""
    return sum(min(len(t), EMBED_MAX_CHARACTERS) for t in texts) / rate


class AnnouncingEmbedder(CachedEmbedder):
    """A ``CachedEmbedder`` that, before a call whose texts missing from the cache are expected to take
    over ``threshold`` seconds, says so through ``announce`` (what is embedded, how many, the estimate):
    a long stage is known before it starts, not after. The estimate is the module's characters per
    second; a test injects a ``rate`` or ``threshold`` rather than timing anything."""

    def __init__(
        self,
        inner: CachedEmbedder,
        announce: Callable[[str], None],
        *,
        threshold: float = ANNOUNCE_SECONDS,
        rate: float = EMBED_CHARACTERS_PER_SECOND,
    ) -> None:
        super().__init__(
            inner.inner, inner.cache, texts_per_call=inner.texts_per_call, progress=inner.progress
        )
        self.announce = announce
        self.threshold = threshold
        self.rate = rate

    def before_embedding(self, missing: Sequence[str]) -> None:
        seconds = embed_seconds(missing, self.rate)
        if seconds > self.threshold:
            self.announce(embedding_announcement(len(missing), seconds, self.model_id, self.rate))
        super().before_embedding(missing)


def embedding_announcement(n_texts: int, seconds: float, model_id: str, rate: float) -> str:
    """``embedding 4,829 texts (all-MiniLM-L6-v2): about 4 min (estimated at ...)``."""
    return (
        f"embedding {n_texts:,} texts ({model_id}): about {format_duration(seconds)} (estimated at "
        f"{rate:,.0f} characters/s, MiniLM on 2 CPU cores; texts already cached are not counted)"
    )


def format_bytes(n_bytes: int) -> str:
    if n_bytes >= 1_000_000:
        return f"{n_bytes / 1_000_000:.1f} MB"
    return f"{n_bytes / 1_000:.0f} kB"


def format_duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{max(seconds, 1):.0f} s"
