"""The stages a reference character can be lost at, in pipeline order, and the answer's stages after.

Retrieval stages (a partition of the reference characters the final top-k missed):
- ``chunking``: no k chunks of the chunk set can hold it (the reference is spread over more than k
  chunks, or no chunk holds it);
- ``dense_candidates``: no chunk holding it reached the dense candidate list (the similarity threshold
  may have removed it: counted apart as ``dense_threshold``, a part of this stage);
- ``keyword_candidates``: the same for the BM25 list, in a profile without a dense side;
- ``fusion``: a candidate that fusion pushed below k (or out of the reranker's pool);
- ``rerank``: in the fused top k, pushed below k by the reranker;
- ``top_k``: in the ranked candidates, but never within the first k.

Answer stages (a partition of the reference characters the top-k returned, where answers exist):
``not_cited`` (no cited chunk holds it), ``answer_wrong`` (cited, the answer judged wrong),
``answer_correct`` (cited, judged right), ``answer_unjudged`` (cited, no verdict).
"""

from __future__ import annotations

from typing import Literal, get_args

RetrievalStage = Literal["chunking", "dense_candidates", "keyword_candidates", "fusion", "rerank", "top_k"]
RETRIEVAL_STAGES: tuple[RetrievalStage, ...] = get_args(RetrievalStage)
AnswerStage = Literal["not_cited", "answer_wrong", "answer_correct", "answer_unjudged"]
ANSWER_STAGES: tuple[AnswerStage, ...] = get_args(AnswerStage)
# the part of dense_candidates the similarity threshold removed
THRESHOLD = "dense_threshold"

LABELS: dict[str, str] = {
    "chunking": "chunking",
    "dense_candidates": "dense candidates",
    "keyword_candidates": "keyword candidates",
    "fusion": "fusion",
    "rerank": "reranking",
    "top_k": "top-k cut",
    "not_cited": "not cited",
    "answer_wrong": "answer wrong",
    "answer_correct": "answer correct",
    "answer_unjudged": "answer not judged",
    THRESHOLD: "similarity threshold",
}


def order(stage: RetrievalStage) -> int:
    """The stage's place in the pipeline, 0 for chunking."""
    return RETRIEVAL_STAGES.index(stage)
