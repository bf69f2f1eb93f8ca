"""`rag-eval dataset import|push|pull` against the project's corpus and a local LangSmith server."""

import csv
import json
from pathlib import Path

import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.corpus import Corpus
from rag_eval_pipeline.core.datasets import read_token_level_jsonl
from rag_eval_pipeline_tests.conftest import TINY_DOCS
from rag_eval_pipeline_tests.langsmith_server import API_KEY, langsmith_server


def chroma_csv(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    """The public benchmark's format: question, references (JSON), corpus_id (file name without .md)."""
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["question", "references", "corpus_id"])
        for question, doc_id, excerpt in rows:
            start = TINY_DOCS[doc_id].index(excerpt)
            refs = [{"content": excerpt, "start_index": start, "end_index": start + len(excerpt)}]
            writer.writerow([question, json.dumps(refs), doc_id.removesuffix(".md")])
    return path


@pytest.fixture
def project_env(tiny_project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAG_EVAL_PROJECT_DIR", str(tiny_project))
    monkeypatch.delenv("LANGSMITH_API_KEY", raising=False)
    return tiny_project


def test_import_a_chroma_csv_validates_it_and_writes_jsonl(
    project_env: Path, capsys: pytest.CaptureFixture
) -> None:
    source = chroma_csv(
        project_env / "bench.csv",
        [
            ("How fast is the pump?", "alpha/pumps.md", "The main pump runs at 1,450 rpm"),
            ("Who leads nights?", "beta/staff.md", "Zoë Mbeki leads the night shift."),
        ],
    )
    assert main(["dataset", "import", str(source)]) == 0
    written = project_env / "data" / "datasets" / "bench.jsonl"
    dataset = read_token_level_jsonl(written, Corpus.from_folder(project_env / "data" / "corpus"))
    assert [e.query for e in dataset] == ["How fast is the pump?", "Who leads nights?"]
    assert "2 token-level questions written" in capsys.readouterr().out


def test_import_of_a_reference_that_does_not_match_the_corpus_names_the_row(
    project_env: Path, capsys: pytest.CaptureFixture
) -> None:
    source = chroma_csv(
        project_env / "bad.csv", [("Q?", "alpha/pumps.md", "The main pump runs at 1,450 rpm")]
    )
    source.write_text(source.read_text(encoding="utf-8").replace("1,450", "1,500"), encoding="utf-8")
    assert main(["dataset", "import", str(source)]) == 2
    err = capsys.readouterr().err
    assert "bad.csv" in err and "row 1" in err
    assert not (project_env / "data" / "datasets" / "bad.jsonl").exists()


def test_push_then_pull_round_trips_through_langsmith(
    project_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    golden = project_env / "data" / "datasets" / "golden_token_level.jsonl"
    assert main(["dataset", "push", str(golden)]) == 2
    assert "LANGSMITH_API_KEY" in capsys.readouterr().err
    with langsmith_server() as (url, state):
        monkeypatch.setenv("LANGSMITH_API_KEY", API_KEY)
        monkeypatch.setenv("LANGSMITH_ENDPOINT", url)
        assert main(["dataset", "push", str(golden), "--name", "team-golden"]) == 0
        assert main(["dataset", "push", str(golden), "--name", "team-golden"]) == 0
        assert len(state.dataset_examples("team-golden")) == 4
        out = project_env / "pulled.jsonl"
        assert main(["dataset", "pull", "team-golden", "--out", str(out)]) == 0
        printed = capsys.readouterr().out
        # a name is one path component of data/datasets/, whatever LangSmith accepts
        assert main(["dataset", "pull", "../../escape"]) == 2
        assert "must be one path component" in capsys.readouterr().err
        assert not list(project_env.parent.glob("*.jsonl"))
    assert "4 created" in printed and "4 unchanged" in printed
    corpus = Corpus.from_folder(project_env / "data" / "corpus")
    assert read_token_level_jsonl(out, corpus).sha256 == read_token_level_jsonl(golden, corpus).sha256
