"""The demo corpus and the hand-made golden dataset that ship in data/ meet what we promise."""

from pathlib import Path

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.questions.datasets import read_token_level_jsonl

DATA = Path(__file__).resolve().parents[2] / "data"


def test_demo_corpus_size_and_shape():
    corpus = Corpus.from_folder(DATA / "corpus")
    assert len(corpus) >= 12
    assert corpus.total_characters >= 25_000
    assert len({d.group for d in corpus}) >= 3
    assert sum("```" in d.text for d in corpus) >= 2
    assert all(d.text.lstrip().startswith("# ") for d in corpus)


def test_golden_dataset_spans_verify_against_the_corpus():
    corpus = Corpus.from_folder(DATA / "corpus")
    dataset = read_token_level_jsonl(
        DATA / "datasets" / "golden_token_level.jsonl", corpus
    )  # validates every span
    assert len(dataset) >= 40
    multi_document = [e for e in dataset if len({s.doc_id for s in e.relevant_spans}) > 1]
    assert len(multi_document) >= 5
    cited = {s.doc_id for e in dataset for s in e.relevant_spans}
    assert cited == {d.doc_id for d in corpus}


def test_the_import_examples_the_readme_shows_import_against_the_demo_corpus():
    from rag_eval_pipeline.core.questions.dataset_import import read_dataset

    corpus = Corpus.from_folder(DATA / "corpus")
    examples = DATA / "datasets" / "import_examples"
    counts = {}
    for path in sorted(examples.iterdir()):
        imported = read_dataset(path, corpus)  # every span located or checked; no offsets taken on trust
        assert imported.trusted_spans == 0 and not imported.dropped
        counts[path.name] = len(imported.dataset)
    assert counts == {"benchmark.csv": 1, "quoted.csv": 2, "quoted.jsonl": 2, "spans.csv": 1}
