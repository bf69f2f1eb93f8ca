"""The chunks asset called directly with a corpus frame (no run, no model): it is step 1 of the notebook
API, cut_corpus, plus the provenance columns every later step checks."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from rag_eval_pipeline.core.chunking import build_chunker, cut_corpus
from rag_eval_pipeline.core.settings.configs import load_chunk_configs
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.core.tables import chunks_from_frame, corpus_to_frame
from rag_eval_pipeline.defs.chunking.assets import chunks
from rag_eval_pipeline_tests.conftest import tiny_corpus, tiny_resources


def test_chunks_cuts_the_corpus_frame_as_cut_corpus_does(tiny_project: Path, tmp_path: Path):
    corpus = tiny_corpus()
    resources = tiny_resources(tiny_project, tmp_path)
    context = dg.build_asset_context(
        partition_key="recursive-120-20",
        resources={k: resources[k] for k in ("project", "embedder", "warehouse")},
    )

    result = chunks(context, corpus=corpus_to_frame(corpus))

    config = next(
        c
        for c in load_chunk_configs(tiny_project / "data/chunk_configs.yaml")
        if c.name == "recursive-120-20"
    )
    chunker = build_chunker(config)
    expected = cut_corpus(chunker, corpus.documents, config.name).chunks
    frame = result.value
    assert tuple(chunks_from_frame(frame)) == expected and len(expected) > len(corpus.documents)
    assert set(frame["chunk_config"]) == {"recursive-120-20"}
    assert set(frame["chunk_config_hash"]) == {config.config_hash}
    assert set(frame["chunker_fingerprint"]) == {chunker.fingerprint}
    assert set(frame["corpus_sha256"]) == {corpus.sha256}
    metadata = {k: getattr(v, "value", v) for k, v in (result.metadata or {}).items()}
    assert metadata["n_chunks"] == len(expected)
    assert metadata["max_chunk_chars"] == max(c.end - c.start for c in expected) <= 120
    # the data version changes with the corpus or the config, so downstream shows stale when either does
    assert result.data_version is not None


def test_a_tokenizer_file_is_read_relative_to_the_project_root(
    tiny_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The run's working directory is not the project: the path resolves against the project's root,
    and a file that is not there fails the step with the config, the field and the path."""
    tokenizer = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    (tiny_project / "tokenizers").mkdir()
    tokenizer.save(str(tiny_project / "tokenizers/words.json"))
    configs = tiny_project / "data/chunk_configs.yaml"
    configs.write_text(
        configs.read_text(encoding="utf-8")
        + "  - {name: words-8, chunker: token, chunk_size: 8, tokenizer: tokenizers/words.json}\n"
        + "  - {name: lost-8, chunker: token, chunk_size: 8, tokenizer: tokenizers/lost.json}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    corpus = tiny_corpus()
    resources = {
        "project": tiny_resources(tiny_project, tmp_path)["project"],
        "embedder": None,
        "warehouse": tiny_resources(tiny_project, tmp_path)["warehouse"],
    }

    result = chunks(
        dg.build_asset_context(partition_key="words-8", resources=resources), corpus=corpus_to_frame(corpus)
    )
    cut = chunks_from_frame(result.value)
    assert len(cut) > len(corpus.documents)
    assert all(len(c.text.split()) <= 8 for c in cut)  # 8 whitespace-separated words per chunk at most

    with pytest.raises(
        dg.Failure,
        match=r"chunk config 'lost-8': tokenizer: the tokenizer file .*project/tokenizers/lost.json does not exist",
    ):
        chunks(
            dg.build_asset_context(partition_key="lost-8", resources=resources),
            corpus=corpus_to_frame(corpus),
        )


def test_a_config_applied_to_some_documents_cuts_them_only_and_a_known_document_is_not_cut_again(
    tiny_project: Path, tmp_path: Path
) -> None:
    """The chunk set covers the config's documents; when it is applied to one more, only that one is cut:
    the chunks of the document cut before (same text, same chunker) are kept as they were."""
    configs = tiny_project / "data/chunk_configs.yaml"
    original = configs.read_text(encoding="utf-8")
    resources = tiny_resources(tiny_project, tmp_path)
    warehouse = Warehouse(Path(resources["warehouse"].base_dir))  # type: ignore[attr-defined]
    corpus = tiny_corpus()

    def cut(documents: str, run_id: str) -> tuple[pd.DataFrame, dict[str, object]]:
        configs.write_text(
            original + f"  - {{name: scoped, chunker: fixed, chunk_size: 60, documents: {documents}}}\n",
            encoding="utf-8",
        )
        context = dg.build_asset_context(
            partition_key="scoped", resources={k: resources[k] for k in ("project", "embedder", "warehouse")}
        )
        result = chunks(context, corpus=corpus_to_frame(corpus))
        warehouse.write_table(result.value, "chunks", {"chunk_config": "scoped"}, run_id)  # as the IO manager
        return result.value, {k: getattr(v, "value", v) for k, v in (result.metadata or {}).items()}

    first, metadata = cut("[alpha/pumps.md]", "run-1")
    assert set(first["doc_id"]) == {"alpha/pumps.md"}
    assert (metadata["documents_cut"], metadata["documents_reused"], metadata["n_documents"]) == (1, 0, 1)
    assert metadata["document_scope"] == "1 document (alpha/pumps.md)"

    second, metadata = cut("[alpha/pumps.md, beta/staff.md]", "run-2")
    assert (metadata["documents_cut"], metadata["documents_reused"]) == (1, 1)  # staff.md alone was cut
    assert set(second["doc_id"]) == {"alpha/pumps.md", "beta/staff.md"}
    pumps = second[second["doc_id"] == "alpha/pumps.md"].reset_index(drop=True)
    assert pumps[["chunk_id", "start", "end", "text"]].equals(first[["chunk_id", "start", "end", "text"]])
    # the same chunks as cutting both documents afresh
    config = next(c for c in load_chunk_configs(configs) if c.name == "scoped")
    fresh = cut_corpus(build_chunker(config), [corpus["alpha/pumps.md"], corpus["beta/staff.md"]]).chunks
    assert tuple(chunks_from_frame(second)) == fresh

    configs.write_text(original + "  - {name: gone, chunker: fixed, chunk_size: 60, documents: [x.md]}\n")
    context = dg.build_asset_context(
        partition_key="gone", resources={k: resources[k] for k in ("project", "embedder", "warehouse")}
    )
    with pytest.raises(dg.Failure, match="gone applies to documents none of which is in the corpus"):
        chunks(context, corpus=corpus_to_frame(corpus))
