"""The best cover at k: exact against brute force over every set of at most k chunks."""

from __future__ import annotations

from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.core.diagnostics.coverage import ReferenceLength, best_cover
from rag_eval_pipeline.core.spans import intersection_length, merge_intervals
from rag_eval_pipeline.core.types import ChunkId, DocumentId, PositionAwareChunk


def chunk(doc: str, start: int, end: int, name: str = "") -> PositionAwareChunk:
    return PositionAwareChunk(
        ChunkId(name or f"{doc}:{start}-{end}"), DocumentId(doc), start, end, "x" * (end - start)
    )


def reference(*spans: tuple[str, int, int]) -> dict:
    return merge_intervals([chunk(d, s, e) for d, s, e in spans])


def brute_force(gt: dict, chunks: list[PositionAwareChunk], k: int) -> int:
    best = 0
    for size in range(1, min(k, len(chunks)) + 1):
        for chosen in combinations(chunks, size):
            best = max(best, intersection_length(merge_intervals(chosen), gt))
    return best


def test_a_reference_split_by_a_chunk_boundary_fits_one_chunk_at_k1():
    gt = reference(("d", 84, 164))
    chunks = [chunk("d", 0, 60), chunk("d", 60, 120), chunk("d", 120, 165)]
    one = best_cover(gt, chunks, 1)
    assert one.characters == 44 and one.chunks == ("d:120-165",)
    assert best_cover(gt, chunks, 2).characters == 80
    assert best_cover(gt, chunks, 0).characters == 0


def test_overlapping_chunks_count_each_character_once_and_contained_ones_add_nothing():
    gt = reference(("d", 0, 100))
    chunks = [chunk("d", 0, 60), chunk("d", 40, 100), chunk("d", 10, 50)]
    assert best_cover(gt, chunks, 1).characters == 60
    two = best_cover(gt, chunks, 2)
    assert two.characters == 100 and set(two.chunks) == {"d:0-60", "d:40-100"}


def test_k_is_split_among_documents():
    gt = reference(("a", 0, 30), ("b", 0, 50), ("b", 60, 70))
    chunks = [chunk("a", 0, 30), chunk("b", 0, 25), chunk("b", 25, 55), chunk("b", 55, 80)]
    assert best_cover(gt, chunks, 1).characters == 30
    assert best_cover(gt, chunks, 2).characters == 55  # a, then b's 25-55 (25 reference characters)
    assert best_cover(gt, chunks, 4).characters == 90


def test_reference_length_counts_the_reference_inside_a_window():
    length = ReferenceLength([(10, 20), (30, 40)])
    assert [length.within(a, b) for a, b in ((0, 10), (0, 15), (15, 35), (0, 100), (35, 35), (40, 50))] == [
        0,
        5,
        10,
        20,
        0,
        0,
    ]


spans = st.tuples(st.sampled_from("ab"), st.integers(0, 60), st.integers(1, 25)).map(
    lambda t: (t[0], t[1], t[1] + t[2])
)


@settings(max_examples=300, deadline=None)
@given(
    gt_spans=st.lists(spans, min_size=1, max_size=3),
    chunk_spans=st.lists(spans, min_size=0, max_size=7),
    k=st.integers(0, 10),  # beyond the chunks too: the tables end where more chunks add nothing
)
def test_the_best_cover_is_the_brute_force_optimum(gt_spans, chunk_spans, k):
    gt = reference(*gt_spans)
    chunks = [chunk(d, s, e, f"c{i}") for i, (d, s, e) in enumerate(chunk_spans)]
    cover = best_cover(gt, chunks, k)
    assert cover.characters == brute_force(gt, chunks, k)
    # the set it names holds that much, and no more than k chunks
    by_id = {c.chunk_id: c for c in chunks}
    assert len(cover.chunks) <= k
    assert intersection_length(merge_intervals([by_id[c] for c in cover.chunks]), gt) == cover.characters


def test_a_k_far_beyond_the_chunks_gives_the_cover_of_every_useful_chunk():
    """top_k 100,000 made the tables 100,001 entries long per document and the combination quadratic
    in k: the diagnostics hung. The cover at such a k is the cover at the number of chunks."""
    gt = reference(("a", 0, 300), ("b", 0, 300), ("c", 100, 200))
    chunks = [chunk(d, s, s + 40) for d in "abc" for s in range(0, 400, 30)]
    enough = best_cover(gt, chunks, len(chunks))
    assert enough.characters == 700
    huge = best_cover(gt, chunks, 10**5)
    assert huge == enough and len(huge.chunks) < len(chunks)
    assert best_cover(gt, chunks, 10).characters < 700 == best_cover(gt, chunks, 10**5 + 1).characters
