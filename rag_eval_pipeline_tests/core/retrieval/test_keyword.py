import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from rag_eval_pipeline.core.retrieval.keyword import KeywordIndex, _tokenize, chunk_set_fingerprint
from rag_eval_pipeline.core.types import ChunkId, DocumentId, PositionAwareChunk

TEXTS = {
    "c-a": "The main pump runs at 1,450 rpm and is serviced every 90 days.",
    "c-b": "A pressure alarm fires when the outlet pressure exceeds 7.5 bar.",
    "c-c": "Every relief valve is tested in March by two technicians.",
    "c-d": "Pumps and valves: the pump room holds three pumps.",
    "c-e": "Zoë Mbeki leads the night shift, which starts at 22:00.",
}


def chunks(texts: dict[str, str] = TEXTS) -> list[PositionAwareChunk]:
    return [PositionAwareChunk(ChunkId(cid), DocumentId("doc"), 0, len(t), t) for cid, t in texts.items()]


def lucene_bm25(query: str, texts: dict[str, str], k1: float = 1.5, b: float = 0.75) -> dict[str, float]:
    """BM25 as Lucene scores it (its idf; no (k1 + 1) factor, which changes no ranking), written out by
    hand over the same tokens, to check the library's scores."""
    docs = {cid: _tokenize([t])[0] for cid, t in texts.items()}
    n = len(docs)
    avg = sum(len(d) for d in docs.values()) / n
    terms = _tokenize([query])[0]
    scores = {}
    for cid, tokens in docs.items():
        counts = Counter(tokens)
        score = 0.0
        for term in terms:
            df = sum(1 for d in docs.values() if term in d)
            if not counts[term]:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = counts[term]
            score += idf * tf / (tf + k1 * (1 - b + b * len(tokens) / avg))
        scores[cid] = score
    return scores


def test_scores_match_bm25_by_hand_and_only_matching_chunks_are_hits():
    index = KeywordIndex.build(chunks())
    (hits,) = index.search(["How fast do the pumps run?"], k=5)
    expected = {cid: s for cid, s in lucene_bm25("How fast do the pumps run?", TEXTS).items() if s > 0}
    assert {h.chunk_id for h in hits} == set(expected) == {"c-a", "c-d"}
    for h in hits:
        assert h.score == pytest.approx(expected[h.chunk_id], rel=1e-5)
    assert hits[0].chunk_id == max(expected, key=expected.__getitem__)
    assert (hits[0].start, hits[0].end, hits[0].text) == (
        0,
        len(TEXTS[hits[0].chunk_id]),
        TEXTS[hits[0].chunk_id],
    )


def test_ties_go_in_document_order_and_k_cuts():
    twins = ["relief valve test", "cooling loop", "relief valve test", "relief valve test"]
    ids = ["z", "q", "m", "a"]  # chunk ids that sort against the copies' places
    placed = [
        PositionAwareChunk(ChunkId(cid), DocumentId("doc"), 100 * i, 100 * i + len(t), t)
        for i, (cid, t) in enumerate(zip(ids, twins, strict=True))
    ]
    index = KeywordIndex.build(placed[::-1])
    (hits,) = index.search(["relief valve"], k=2)
    assert [h.chunk_id for h in hits] == ["z", "m"]
    (all_hits,) = index.search(["relief valve"], k=10)
    assert [h.chunk_id for h in all_hits] == ["z", "m", "a"]


def test_queries_without_known_terms_find_nothing():
    index = KeywordIndex.build(chunks())
    assert index.search(["the of and", "zebra quokka", ""], k=3) == [[], [], []]
    assert KeywordIndex.build([]).search(["pump"], k=3) == [[]]
    with pytest.raises(ValueError, match="k must be >= 1"):
        index.search(["pump"], k=0)


def test_saved_index_is_reused_until_the_chunks_change(tmp_path: Path):
    folder = tmp_path / "bm25" / "fixed-60"
    built, rebuilt = KeywordIndex.load_or_build(folder, chunks())
    assert rebuilt and (folder / "manifest.json").exists()
    loaded, rebuilt_again = KeywordIndex.load_or_build(folder, chunks())
    assert not rebuilt_again
    queries = ["pressure alarm bar", "night shift lead", "valve technicians March"]
    assert loaded.search(queries, 3) == built.search(queries, 3)
    changed = {**TEXTS, "c-f": "The cooling loop is fed by valve V-12."}
    updated, rebuilt_after_change = KeywordIndex.load_or_build(folder, chunks(changed))
    assert rebuilt_after_change
    assert updated.search(["cooling loop"], 1)[0][0].chunk_id == "c-f"
    assert not list(tmp_path.glob("bm25/.*"))  # no staging or retired folders left behind


def test_fingerprint_covers_offsets_not_just_ids():
    moved = [PositionAwareChunk(c.chunk_id, c.doc_id, c.start + 1, c.end + 1, c.text) for c in chunks()]
    assert chunk_set_fingerprint(moved) != chunk_set_fingerprint(chunks())
    with pytest.raises(LookupError, match="build it first"):
        KeywordIndex.load(Path("/nonexistent/bm25"))


def test_a_text_outside_the_index_is_scored_as_the_index_scores_its_chunks(tmp_path: Path):
    """score_texts gives an indexed chunk's text the index's own score (so a text not in the index is
    scored under the same statistics), counts a repeated query term again as bm25s does, and gives a
    text sharing no term 0."""
    index = KeywordIndex.build(chunks())
    for query in ("main pump pump serviced", "pressure alarm outlet", "night shift Mbeki"):
        hits = {h.chunk_id: h.score for h in index.search([query], 5)[0]}
        scored = index.score_texts(query, list(TEXTS.values()))
        for cid, score in zip(TEXTS, scored, strict=True):
            assert score == pytest.approx(hits.get(ChunkId(cid), 0.0), rel=1e-5, abs=1e-6)
    # the loaded index scores alike (its statistics come from its chunks)
    index.save(tmp_path / "bm25")
    loaded = KeywordIndex.load(tmp_path / "bm25")
    assert loaded.score_texts("pump room pumps", ["three pumps in the pump room"]) == pytest.approx(
        index.score_texts("pump room pumps", ["three pumps in the pump room"])
    )
    assert index.score_texts("pump", ["nothing relevant here"]) == [0.0]
    assert index.score_texts("unknownword", ["unknownword twice unknownword"]) == [0.0]
    assert index.score_texts("pump", []) == []


def test_a_text_is_tokenized_once_a_process_and_as_bm25s_tokenizes_it(monkeypatch: pytest.MonkeyPatch):
    """A question is tokenized by its retrieval and by each diagnostics run: bm25s sees it once."""
    import bm25s
    import Stemmer

    from rag_eval_pipeline.core.retrieval import keyword

    calls: list[list[str]] = []
    tokenize = bm25s.tokenize

    def counted(texts: list[str], **kwargs: object) -> object:
        calls.append(list(texts))
        return tokenize(texts, **kwargs)

    monkeypatch.setattr(bm25s, "tokenize", counted)
    monkeypatch.setattr(keyword, "_tokenized", {})
    texts = [*TEXTS.values(), "What does the pump room hold?", "the and of", ""]
    first = _tokenize(texts[:3])
    again = _tokenize([*texts, texts[0]])
    assert calls == [texts[:3], texts[3:]]  # the new ones only, each once
    by_hand = [
        list(t)
        for t in tokenize(
            texts,
            lower=True,
            stopwords="en",
            stemmer=Stemmer.Stemmer("english"),
            return_ids=False,
            show_progress=False,
        )
    ]
    assert first == by_hand[:3] and again == [*by_hand, by_hand[0]]
    monkeypatch.setattr(keyword, "TOKENIZED_TEXTS", 4)  # past the bound the kept tokens start again
    _tokenize(["pumps", "valves"])
    assert len(keyword._tokenized) == 2 and _tokenize(["pumps"]) == [["pump"]]


# A fresh interpreter builds, saves, loads and searches an index, then imports what bm25s was kept from.
WITHOUT_UNUSED_BACKENDS = """
import sys, tempfile
from rag_eval_pipeline.core.retrieval.keyword import KeywordIndex
from rag_eval_pipeline.core.types import ChunkId, DocumentId, PositionAwareChunk

texts = ["the cat sat on the mat", "dogs chase cats", "a mat of straw"]
chunks = [PositionAwareChunk(ChunkId(f"c{i}"), DocumentId("d"), 0, len(t), t) for i, t in enumerate(texts)]
index = KeywordIndex.build(chunks)
with tempfile.TemporaryDirectory() as folder:
    index.save(folder)
    found = KeywordIndex.load(folder).search(["cat on a mat"], 3)
print(sorted(m for m in ("numba", "scipy", "scipy.sparse") if m in sys.modules))
print([h.chunk_id for h in found[0]])
import numba, scipy.sparse  # still importable by the rest of the process
print("imported")
"""


def test_bm25s_is_imported_without_the_backends_it_does_not_use() -> None:
    """numba and scipy (installed with the test dependencies) were half a CPU second of every process that
    touched a keyword index; bm25s's numpy backends, the ones used, need neither."""
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_UNUSED_BACKENDS], capture_output=True, text=True, check=True
    )
    unused, found, imported = done.stdout.splitlines()
    assert unused == "[]"
    assert found == "['c0', 'c2', 'c1']"
    assert imported == "imported"
