"""The bundled presets: the published studies' configs in cl100k_base tokens, loadable and usable."""

import tomllib
from itertools import pairwise
from pathlib import Path

from rag_eval_pipeline.core.chunking import build_chunker, chunk_corpus
from rag_eval_pipeline.core.chunking.tokenization import cl100k_tokenizer
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.settings.chunk_config_presets import PRESETS_FILE, load_presets, presets_text

REPO = Path(__file__).resolve().parents[3]
PUBLISHED_SEPARATORS = ("\n\n", "\n", ".", "?", "!", " ", "")


def test_the_presets_are_the_published_configs_in_cl100k_tokens() -> None:
    presets = load_presets()
    assert [(c.name, c.chunker, c.chunk_size, c.chunk_overlap) for c in presets] == [
        (f"cl100k-{kind}-{size}-{overlap}", kind, size, overlap)
        for kind in ("token", "recursive")
        for size, overlap in ((200, 0), (250, 0), (250, 125))
    ]
    assert all(c.tokenizer == "cl100k_base" and c.counts_tokens for c in presets)
    assert all(c.length == "tokens" and c.separators == PUBLISHED_SEPARATORS for c in presets[3:])
    assert presets_text() == PRESETS_FILE.read_text(encoding="utf-8")


def test_each_preset_cuts_the_demo_corpus_within_its_token_budget() -> None:
    documents = list(Corpus.from_folder(REPO / "data" / "corpus"))
    for config in load_presets():
        chunks = chunk_corpus(build_chunker(config), documents)
        counts = cl100k_tokenizer().count_tokens([c.text for c in chunks])
        assert max(counts) <= config.chunk_size, config.name
        assert len(chunks) > len(documents), config.name
        neighbours = [(p, n) for p, n in pairwise(chunks) if p.doc_id == n.doc_id]
        overlapping = sum(n.start < p.end for p, n in neighbours)
        assert (overlapping > len(neighbours) / 2) if config.chunk_overlap else overlapping == 0, config.name


def test_the_presets_file_ships_in_the_package() -> None:
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"
    ]["rag_eval_pipeline"]
    assert PRESETS_FILE.relative_to(REPO / "rag_eval_pipeline").as_posix() in package_data
