"""`rag-eval dataset import|push|pull` against the project's corpus and a local LangSmith server."""

import csv
import json
from pathlib import Path

import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.questions.datasets import read_token_level_jsonl
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
    assert f"2 token-level questions from {source} written to {written}" in capsys.readouterr().out


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


# ---------------------------------------------------------------------------------------------------
# import: paths relative to the current directory, --only-present, the next step


def benchmark_rows(absent: int) -> list[tuple[str, str, str]]:
    """Two questions on documents of the tiny corpus, then ``absent`` on documents it does not have."""
    return [
        ("How fast is the pump?", "alpha/pumps.md", "The main pump runs at 1,450 rpm"),
        ("Who leads nights?", "beta/staff.md", "Zoë Mbeki leads the night shift."),
    ] + [(f"Absent {i}?", f"gamma/doc{i % 12}.md", "") for i in range(absent)]


def benchmark_csv(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    """chroma_csv, with rows on documents the tiny corpus lacks (their references are never read)."""
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["question", "references", "corpus_id"])
        for question, doc_id, excerpt in rows:
            text = TINY_DOCS.get(doc_id, "")
            start = text.index(excerpt) if doc_id in TINY_DOCS else 0
            refs = [{"content": excerpt, "start_index": start, "end_index": start + len(excerpt)}]
            writer.writerow([question, json.dumps(refs), doc_id.removesuffix(".md")])
    return path


def test_import_paths_are_relative_to_the_directory_rag_eval_runs_in(
    project_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    benchmark_csv(elsewhere / "bench.csv", benchmark_rows(0))
    monkeypatch.chdir(elsewhere)
    assert main(["dataset", "import", "bench.csv", "--out", "out/bench.jsonl"]) == 0
    out = capsys.readouterr().out
    assert (
        f"2 token-level questions from {elsewhere / 'bench.csv'} written to {elsewhere / 'out/bench.jsonl'}"
        in out
    )
    assert (elsewhere / "out" / "bench.jsonl").is_file()
    # without --out: the project's datasets folder, whatever the current directory
    monkeypatch.chdir(elsewhere)  # main() changed to the project root, as a real `rag-eval` does
    assert main(["dataset", "import", "bench.csv"]) == 0
    assert f"written to {project_env / 'data/datasets/bench.jsonl'}" in capsys.readouterr().out
    # a missing file is named as resolved, not as typed
    monkeypatch.chdir(elsewhere)
    assert main(["dataset", "import", "../nothere.csv"]) == 2
    assert f"dataset file {tmp_path / 'nothere.csv'} does not exist" in capsys.readouterr().err


def test_questions_on_absent_documents_are_an_error_unless_only_present_keeps_the_others(
    project_env: Path, capsys: pytest.CaptureFixture
) -> None:
    source = benchmark_csv(project_env / "bench.csv", benchmark_rows(13))
    assert main(["dataset", "import", str(source)]) == 2
    err = capsys.readouterr().err
    assert f"{source}: 13 of 15 questions name documents that are not in the corpus at " in err
    assert "gamma/doc0.md (2 questions)" in err and "gamma/doc11.md (1 question)" in err
    assert "first: data row 3 (q-003): column corpus_id 'gamma/doc0' has no file gamma/doc0.md" in err
    assert "Add those documents to the corpus, or pass --only-present" in err
    assert not (project_env / "data/datasets/bench.jsonl").exists()

    assert main(["dataset", "import", str(source), "--only-present"]) == 0
    lines = capsys.readouterr().out.splitlines()
    corpus_root = project_env / "data" / "corpus"
    assert lines[0] == (
        f"kept 2 of 15 questions; dropped 13 whose documents are not in the corpus at {corpus_root}, "
        "12 absent documents:"
    )
    assert lines[1] == "  gamma/doc0.md (2 questions)"  # most named first, then by name
    assert lines[2:11] == [f"  gamma/doc{i}.md (1 question)" for i in (1, 10, 11, 2, 3, 4, 5, 6, 7)]
    assert lines[11] == "  and 2 more documents"
    written = project_env / "data/datasets/bench.jsonl"
    dataset = read_token_level_jsonl(written, Corpus.from_folder(corpus_root))
    assert [e.question_id for e in dataset] == ["q-001", "q-002"]  # the ids of their rows in the file


def test_after_an_import_the_exact_next_step(project_env: Path, capsys: pytest.CaptureFixture) -> None:
    source = benchmark_csv(project_env / "bench.csv", benchmark_rows(1))
    golden = project_env / "data/datasets/golden_token_level.jsonl"
    written = project_env / "data/datasets/bench.jsonl"
    corpus_root = project_env / "data/corpus"
    assert main(["dataset", "import", str(source), "--only-present"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"kept 2 of 3 questions; dropped 1 whose documents are not in the corpus at {corpus_root}, "
        "1 absent document:",
        "  gamma/doc0.md (1 question)",
        f"2 token-level questions from {source} written to {written}",
        "next, to evaluate on these questions:",
        f"  RAG_EVAL_GOLDEN_DATASET={written} rag-eval run",
        f"or make them the project's golden set, replacing {golden} (then `rag-eval run` and the UI use "
        "them):",
        f"  rag-eval dataset import {source} --only-present --out {golden}",
    ]
    # the command it prints works: the variable names the file `rag-eval run` then evaluates on
    from rag_eval_pipeline.core.project.project_files import ProjectFiles

    files = ProjectFiles.in_project(project_env, {"RAG_EVAL_GOLDEN_DATASET": str(written)})
    assert files.path(files.golden_dataset) == written
    # written where the golden set is: nothing else to do, unless evaluate_on leaves it out
    assert main(["dataset", "import", str(source), "--only-present", "--out", str(golden)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"next: `rag-eval run` evaluates on these questions (the project's golden set, {golden})"
    )
    (project_env / "data/generation.yaml").write_text("evaluate_on: synthetic\n", encoding="utf-8")
    assert main(["dataset", "import", str(source), "--only-present", "--out", str(golden)]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "next, for `rag-eval run` to evaluate on these questions (the project's golden set):",
        f"  set evaluate_on: golden (or both) in {project_env / 'data/generation.yaml'}: it is synthetic now",
    ]


def test_dataset_help_lists_the_commands_and_says_where_paths_are_relative_to(
    capsys: pytest.CaptureFixture,
) -> None:
    with pytest.raises(SystemExit):
        main(["dataset", "--help"])
    shown = capsys.readouterr().out
    assert "rag-eval dataset import FILE [--only-present] [--trust-offsets] [--out JSONL]" in shown
    assert "FILE and --out are relative to the current directory." in shown
    with pytest.raises(SystemExit):
        main(["dataset", "import", "--help"])
    assert "--only-present" in capsys.readouterr().out


def test_quoted_answers_are_located_and_any_not_found_exactly_once_is_listed_and_nothing_written(
    project_env: Path, capsys: pytest.CaptureFixture
) -> None:
    """Issue 31: real questions without offsets; the excerpt is located as the LLM generator's are."""
    written = project_env / "data/datasets/real.jsonl"
    source = project_env / "real.csv"
    source.write_text(
        "question,excerpt,doc_id\n"
        'How fast does the main pump run?,"the main pump runs at 1,450 RPM",\n'  # case differs, no document
        "Who leads the night shift?,Zoë Mbeki leads the night shift.,beta/staff.md\n"
        "When are relief valves tested?,Every relief valve is tested in May.,alpha/valves.md\n",
        encoding="utf-8",
    )
    assert main(["dataset", "import", str(source)]) == 2
    err = capsys.readouterr().err
    assert f"error: {source}: 1 of 3 excerpts are not found exactly once in the corpus" in err
    assert "data row 3 (" in err and "is not in alpha/valves.md" in err and "Traceback" not in err
    assert not written.exists()

    source.write_text(source.read_text(encoding="utf-8").replace("in May", "in March"), encoding="utf-8")
    assert main(["dataset", "import", str(source)]) == 0
    assert f"3 token-level questions from {source} written to {written}" in capsys.readouterr().out
    dataset = read_token_level_jsonl(written, Corpus.from_folder(project_env / "data" / "corpus"))
    assert [(s.doc_id, s.text) for e in dataset for s in e.relevant_spans] == [
        ("alpha/pumps.md", "The main pump runs at 1,450 rpm"),
        ("beta/staff.md", "Zoë Mbeki leads the night shift."),
        ("alpha/valves.md", "Every relief valve is tested in March."),
    ]

    # a copy of the quote elsewhere makes it ambiguous: both places are named
    (project_env / "data/corpus/beta/copy.md").write_text(
        "# Copy\n\nThe main pump runs at 1,450 rpm, as the pump page says.\n", encoding="utf-8"
    )
    written.unlink()
    assert main(["dataset", "import", str(source)]) == 2
    err = capsys.readouterr().err
    pumps = TINY_DOCS["alpha/pumps.md"].index("The main pump")
    assert (
        "data row 1 (" in err
        and f"occurs 2 times: alpha/pumps.md [{pumps}:{pumps + 31}], beta/copy.md [8:39]; quote more of the "
        "passage, or name its document in doc_id"
        in err
    )
    assert not written.exists()


def test_offsets_without_text_need_trust_offsets(project_env: Path, capsys: pytest.CaptureFixture) -> None:
    """Issue 31: a CSV of offsets and no text was imported with nothing to check the offsets against."""
    source = project_env / "offsets.csv"
    source.write_text("question,doc_id,start,end\nHow fast?,alpha/pumps.md,9,40\n", encoding="utf-8")
    written = project_env / "data/datasets/offsets.jsonl"
    assert main(["dataset", "import", str(source)]) == 2
    err = capsys.readouterr().err
    assert f"error: {source}: data row 1 gives start and end but no text" in err
    assert "or pass --trust-offsets to take the offsets as they are" in err
    assert not written.exists()
    assert main(["dataset", "import", str(source), "--trust-offsets"]) == 0
    out = capsys.readouterr().out
    assert (
        "1 span(s) taken on trust from their offsets (--trust-offsets): no text to check them against" in out
    )
    assert f"rag-eval dataset import {source} --trust-offsets --out " in out
    (example,) = read_token_level_jsonl(written, Corpus.from_folder(project_env / "data" / "corpus"))
    assert example.relevant_spans[0].text == TINY_DOCS["alpha/pumps.md"][9:40]
