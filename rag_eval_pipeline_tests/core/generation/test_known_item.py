from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from itertools import combinations, permutations
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.core.chunking import RecursiveCharacterChunker, chunk_corpus
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.generation.base import METADATA_KEYS, GenerationResult
from rag_eval_pipeline.core.generation.known_item import TECHNIQUE, KnownItemGenerator
from rag_eval_pipeline.core.generation.passages import BoilerplateDetector
from rag_eval_pipeline.core.generation.terms import TermStatistics, content_terms
from rag_eval_pipeline.core.questions.datasets import (
    TokenLevelDataset,
    TokenLevelExample,
    read_token_level_jsonl,
    write_jsonl,
)
from rag_eval_pipeline.core.types import Document, DocumentId, PositionAwareChunk

REPO = Path(__file__).resolve().parents[3]
CORPUS_DIR = REPO / "data" / "corpus"


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.from_folder(CORPUS_DIR)


@pytest.fixture(scope="module")
def chunks(corpus: Corpus) -> list[PositionAwareChunk]:
    return chunk_corpus(RecursiveCharacterChunker(400, 50), corpus)


def as_json(result: GenerationResult[Any]) -> list[dict[str, Any]]:
    return [e.to_json() for e in result.examples]


def assert_terms_come_from(text: str, example: TokenLevelExample | Any, gen: KnownItemGenerator) -> None:
    terms = example.metadata["query_terms"]
    noise = example.metadata["noise_terms"]
    source = set(content_terms(text))
    assert example.query == " ".join(terms)
    assert len(set(terms)) == len(terms), "terms are drawn without replacement"
    assert gen.min_terms <= len(terms) - len(noise) <= gen.max_terms
    assert len(noise) <= 1
    for term in terms:
        assert (term in source) != (term in noise), term


def test_token_level_is_deterministic_and_seeded(corpus: Corpus) -> None:
    first = KnownItemGenerator(seed=13).generate_token_level(corpus, 20)
    assert as_json(first) == as_json(KnownItemGenerator(seed=13).generate_token_level(corpus, 20))
    other = KnownItemGenerator(seed=14).generate_token_level(corpus, 20)
    assert as_json(first) != as_json(other)
    # Questions do not depend on how many others are asked.
    assert as_json(KnownItemGenerator(seed=13).generate_token_level(corpus, 8)) == as_json(first)[:8]


_SCRIPT = """
import json, sys
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.chunking import RecursiveCharacterChunker, chunk_corpus
from rag_eval_pipeline.core.generation.known_item import KnownItemGenerator
corpus = Corpus.from_folder(sys.argv[1])
gen = KnownItemGenerator(seed=5, noise=0.5)
tokens = [e.to_json() for e in gen.generate_token_level(corpus, 12).examples]
chunks = chunk_corpus(RecursiveCharacterChunker(400, 50), corpus)
chunk_level = [e.to_json() for e in gen.generate_chunk_level(chunks, 12).examples]
print(json.dumps([tokens, chunk_level]))
"""


def test_same_output_in_processes_with_different_string_hash_seeds(
    corpus: Corpus, chunks: list[PositionAwareChunk]
) -> None:
    gen = KnownItemGenerator(seed=5, noise=0.5)
    expected = [as_json(gen.generate_token_level(corpus, 12)), as_json(gen.generate_chunk_level(chunks, 12))]
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", _SCRIPT, str(CORPUS_DIR)],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        assert json.loads(out.stdout) == expected


def test_token_level_examples_are_valid_ground_truth(corpus: Corpus, tmp_path: Path) -> None:
    gen = KnownItemGenerator(seed=3, noise=0.3)
    result = gen.generate_token_level(corpus, 40)
    assert len(result.examples) == 40
    assert result.rejections == ()
    # The dataset loader checks every span against the corpus.
    path = tmp_path / "known_item.jsonl"
    write_jsonl(TokenLevelDataset(result.examples), path)
    assert read_token_level_jsonl(path, corpus).examples == result.examples
    spans = [e.relevant_spans[0] for e in result.examples]
    for a, b in combinations(spans, 2):
        assert not a.overlaps(b)
    detector = BoilerplateDetector.from_corpus(corpus)
    for example in result.examples:
        (span,) = example.relevant_spans
        assert not detector.is_boilerplate(span.text)
        assert "Escalation contact" not in span.text
        assert_terms_come_from(span.text, example, gen)
        assert example.question_id.startswith("ki-")
        metadata = example.metadata
        assert set(METADATA_KEYS) <= set(metadata)
        assert metadata["generator"] == "known-item-simulation"
        assert metadata["model"] is None and metadata["prompt_version"] is None
        assert metadata["source_doc_ids"] == [span.doc_id]
        assert metadata["question_type"] == "known-item"
        assert metadata["difficulty"] in {"easy", "medium", "hard"}
        assert metadata["technique"] == TECHNIQUE
    assert any(e.metadata["noise_terms"] for e in result.examples), "noise=0.3 over 40 queries"


def test_noise_probability_is_respected(corpus: Corpus) -> None:
    quiet = KnownItemGenerator(seed=2, noise=0.0).generate_token_level(corpus, 16)
    assert all(e.metadata["noise_terms"] == [] for e in quiet.examples)
    noisy = KnownItemGenerator(seed=2, noise=1.0).generate_token_level(corpus, 16)
    vocabulary = set(TermStatistics.from_texts(d.text for d in corpus).vocabulary())
    for example in noisy.examples:
        (noise,) = example.metadata["noise_terms"]
        assert noise in vocabulary
        assert noise not in content_terms(example.relevant_spans[0].text)


def _overlap_rank_first(query: str, source: str, texts: dict[str, set[str]]) -> bool:
    """Plain term overlap (how many query terms a text contains): is the source strictly best?"""
    terms = query.split()
    scores = {key: sum(t in words for t in terms) for key, words in texts.items()}
    return all(scores[source] > score for key, score in scores.items() if key != source)


def test_queries_single_out_their_source_by_plain_term_overlap(corpus: Corpus) -> None:
    """The technique is sensible: tf·idf-drawn terms point back at their document, which the same
    number of terms drawn from another document does not (a control that shows the check can fail)."""
    result = KnownItemGenerator(seed=13).generate_token_level(corpus, 48)
    doc_terms: dict[str, set[str]] = {doc.doc_id: set(content_terms(doc.text)) for doc in corpus}
    hits = [_overlap_rank_first(e.query, e.relevant_spans[0].doc_id, doc_terms) for e in result.examples]
    assert sum(hits) / len(hits) >= 0.8
    rng = random.Random(0)
    control = []
    for example in result.examples:
        source = example.relevant_spans[0].doc_id
        other = rng.choice(sorted(set(doc_terms) - {source}))
        fake = " ".join(rng.sample(sorted(doc_terms[other]), len(example.metadata["query_terms"])))
        control.append(_overlap_rank_first(fake, source, doc_terms))
    assert sum(control) / len(control) <= 0.2


def test_chunk_level_asks_about_one_chunk_each(chunks: list[PositionAwareChunk]) -> None:
    gen = KnownItemGenerator(seed=13)
    result = gen.generate_chunk_level(chunks, 24)
    assert as_json(result) == as_json(gen.generate_chunk_level(chunks, 24))
    assert as_json(result) != as_json(KnownItemGenerator(seed=12).generate_chunk_level(chunks, 24))
    assert len(result.examples) == 24
    by_id = {c.chunk_id: c for c in chunks}
    detector = BoilerplateDetector.from_units((c.doc_id, c.start, c.text) for c in chunks)
    chosen = []
    for example in result.examples:
        (chunk_id,) = example.relevant_chunk_ids
        chunk = by_id[chunk_id]
        chosen.append(chunk)
        assert not detector.is_boilerplate(chunk.text)
        assert_terms_come_from(chunk.text, example, gen)
        metadata = example.metadata
        assert set(METADATA_KEYS) <= set(metadata)
        assert metadata["question_type"] == "FACTUAL"
        assert metadata["source_chunk_ids"] == [chunk_id]
        assert metadata["source_doc_ids"] == [chunk.doc_id]
        assert 3 <= len(metadata["keywords"]) <= 5
        assert set(metadata["keywords"]) <= set(content_terms(chunk.text))
    for a, b in combinations(chosen, 2):
        assert not a.span.overlaps(b.span)
    chunk_terms: dict[str, set[str]] = {c.chunk_id: set(content_terms(c.text)) for c in chunks}
    hits = [_overlap_rank_first(e.query, e.relevant_chunk_ids[0], chunk_terms) for e in result.examples]
    assert sum(hits) / len(hits) >= 0.8


def test_terms_are_drawn_in_proportion_to_tf_idf() -> None:
    """idf(common) = 1 and idf(rare) = ln(11/2) + 1 ≈ 2.70 over these ten texts."""
    stats = TermStatistics.from_texts(["common rare"] + ["common"] * 9)
    gen = KnownItemGenerator(min_terms=1, max_terms=1, noise=0.0)
    rng = random.Random(0)

    def share_of_rare(text: str) -> float:
        draws = [gen.simulate_query(text, stats, rng).terms for _ in range(2000)]
        return sum(terms == ("rare",) for terms in draws) / len(draws)

    assert share_of_rare("common rare") == pytest.approx(2.70 / 3.70, abs=0.04)
    assert share_of_rare("common common common rare") == pytest.approx(2.70 / 5.70, abs=0.04)


def test_boilerplate_chunks_are_never_asked_about(corpus: Corpus) -> None:
    chunks = chunk_corpus(RecursiveCharacterChunker(300, 0), corpus)
    detector = BoilerplateDetector.from_units((c.doc_id, c.start, c.text) for c in chunks)
    boilerplate = {c.chunk_id for c in chunks if detector.is_boilerplate(c.text)}
    assert boilerplate, "the bundled corpus repeats its escalation paragraph"
    # Asking for more questions than there are chunks takes every eligible one.
    result = KnownItemGenerator(seed=1).generate_chunk_level(chunks, len(chunks))
    asked = {e.relevant_chunk_ids[0] for e in result.examples}
    assert len(asked) > len(chunks) // 2
    assert not asked & boilerplate


def test_a_source_too_poor_for_a_query_is_rejected_not_dropped() -> None:
    # Unique sentences (so nothing is boilerplate) of stopwords, and one with three content terms.
    filler = [" ".join(p).capitalize() + "." for p in permutations(["it", "is", "the", "of", "and"])][:16]
    text = "Alpha beta gamma. " + " ".join(filler) + "\n"
    corpus = Corpus((Document(DocumentId("poor.md"), text),))
    result = KnownItemGenerator(min_terms=5, max_terms=6).generate_token_level(corpus, 3)
    assert result.examples == ()
    assert [r.reason for r in result.rejections] == ["too_few_terms"]
    assert result.rejections[0].source_doc_ids == ("poor.md",)


def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="min_terms"):
        KnownItemGenerator(min_terms=4, max_terms=3)
    with pytest.raises(ValueError, match="probability"):
        KnownItemGenerator(noise=1.5)


words = st.sampled_from(
    ["pump", "valve", "alarm", "Heron", "rotation", "broker", "disk", "quota", "the", "is", "at", "of"]
)


@st.composite
def small_corpora(draw: st.DrawFn) -> Corpus:
    docs = []
    for d in range(draw(st.integers(1, 4))):
        sentences = []
        for _ in range(draw(st.integers(4, 14))):
            body = draw(st.lists(words, min_size=3, max_size=9))
            sentences.append(" ".join(body).capitalize() + f" {draw(st.integers(1, 9999))}.")
        docs.append(Document(DocumentId(f"d{d}.md"), " ".join(sentences) + "\n"))
    return Corpus(tuple(docs))


@settings(max_examples=25, deadline=None)
@given(corpus=small_corpora(), seed=st.integers(0, 10**6), noise=st.sampled_from([0.0, 0.5, 1.0]))
def test_random_corpora_give_valid_known_item_queries(corpus: Corpus, seed: int, noise: float) -> None:
    gen = KnownItemGenerator(seed=seed, noise=noise, min_chars=60, max_chars=300)
    result = gen.generate_token_level(corpus, 6)
    spans = []
    for example in result.examples:
        (span,) = example.relevant_spans
        assert corpus[span.doc_id].text[span.start : span.end] == span.text
        assert_terms_come_from(span.text, example, gen)
        spans.append(span)
    for a, b in combinations(spans, 2):
        assert not a.overlaps(b)
    assert len({e.question_id for e in result.examples}) == len(result.examples)
    assert len(result.examples) + len(result.rejections) <= 6


def test_generating_for_some_documents_asks_what_a_whole_generation_asks_about_them(corpus: Corpus) -> None:
    """`regenerate-questions --document`: the passages are chosen over the whole corpus, then only the
    chosen documents' are asked about, so their questions are the whole generation's questions."""
    generator = KnownItemGenerator(seed=13)
    whole = generator.generate_token_level(corpus, 40)
    chosen = {"operations/on_call.md", "architecture/platform_overview.md"}
    some = generator.generate_token_level(corpus, 40, documents=chosen)
    expected = [e for e in whole.examples if e.relevant_spans[0].doc_id in chosen]
    assert 0 < len(some.examples) < len(whole.examples)
    assert list(some.examples) == expected
