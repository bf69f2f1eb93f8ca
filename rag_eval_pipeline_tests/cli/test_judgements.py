"""`rag-eval pool build`, `rag-eval judgements status|export` on the tiny project, as a user runs them
(`main`), with the hashing embedder in place of the model: the pool written and printed, a new chunk
config offering only text nobody read, judged@k and agreement printed, the judgements exported into
the golden file and read back by the pipeline's loader, re-anchored after a document edit."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.judging.judged_at_k import unjudged_passages
from rag_eval_pipeline.core.judging.store import JudgingStore
from rag_eval_pipeline.core.judging.types import ImportedQuery, Judgement, JudgeName, query_id_for
from rag_eval_pipeline.core.questions.datasets import read_token_level_jsonl
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.core.types import CharacterSpan, DocumentId
from rag_eval_pipeline.runner import judging as runner_judging
from rag_eval_pipeline_tests.conftest import TINY_CHUNK_CONFIGS, TINY_DOCS
from rag_eval_pipeline_tests.fakes import HashingEmbedder

PUMP = "How fast does the main pump run?"
NIGHT = "Who leads the night shift?"
MANUAL = "".join(
    f"## Section {i}\n\nThe {part} of the main pump is checked by the {team} team every {i + 2} weeks; "
    f"its spare is kept in store room {i}.\n\n"
    for i, (part, team) in enumerate(
        [
            (p, t)
            for p in ("seal", "bearing", "impeller", "motor", "coupling")
            for t in ("night", "day", "shift")
        ]
    )
)


@pytest.fixture
def workspace(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    @contextmanager
    def hashing(progress: object = None) -> Iterator[HashingEmbedder]:
        yield HashingEmbedder()

    monkeypatch.setattr(runner_judging, "workspace_embedder", hashing)
    store(project).write_queries(
        [ImportedQuery(query_id_for(PUMP), PUMP, count=5), ImportedQuery(query_id_for(NIGHT), NIGHT, count=2)]
    )
    return project


def store(project: Path) -> JudgingStore:
    return JudgingStore(project / "data" / "judging")


def corpus(project: Path) -> Corpus:
    return Corpus.from_folder(project / "data" / "corpus")


def excerpt(doc: str, text: str, docs: dict[str, str] = TINY_DOCS) -> CharacterSpan:
    start = docs[doc].index(text)
    return CharacterSpan(DocumentId(doc), start, start + len(text), text)


def judge_everything(project: Path, judge: str, answers: dict[str, CharacterSpan]) -> list[Judgement]:
    """A judge reads every pooled passage of every query and selects the answer given for it."""
    documents = corpus(project)
    made = []
    for query_id in dict.fromkeys(p.query_id for p in store(project).read_pool()):
        read = tuple(p.span for p in store(project).read_pool() if p.query_id == query_id)
        spans = (answers[query_id],) if query_id in answers else ()
        made.append(
            Judgement(
                query_id,
                JudgeName(judge),
                "human",
                "answers" if spans else "not-answerable",
                spans,
                read,
                "2026-12-02T10:00:00Z",
                {s.doc_id: documents[s.doc_id].sha256 for s in (*read, *spans)},
            )
        )
    store(project).append_judgements(made)
    return made


def test_pool_build_pools_every_query_and_prints_what_to_read(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pool", "build", "--depth", "3"]) == 0
    out = capsys.readouterr().out
    assert "pooled the top 3 of 4 setups and bm25@windows-500, dense@windows-500 for 2 queries" in out
    pool = store(workspace).read_pool()
    assert {p.query_id for p in pool} == {query_id_for(PUMP), query_id_for(NIGHT)}
    documents = corpus(workspace)
    for passage in pool:
        assert documents[passage.span.doc_id].text[passage.span.start : passage.span.end] == passage.span.text
        assert passage.found_by
    # no character shown twice for a query
    for query_id in {p.query_id for p in pool}:
        spans = sorted((p.span.doc_id, p.span.start, p.span.end) for p in pool if p.query_id == query_id)
        for (doc_a, _, end_a), (doc_b, start_b, _) in itertools.pairwise(spans):
            assert doc_a != doc_b or end_a < start_b
    # the window runs (one window per tiny document) pool every document for each query
    assert all(
        any("bm25@windows-500 #" in f for p in pool for f in p.found_by if p.query_id == q)
        for q in {p.query_id for p in pool}
    )
    total = sum(len(p.span) for p in pool)
    assert f"characters to read in {len(pool)} new passages; 0 characters in 0 passages already judged" in out
    assert f"total: {len(pool)} passages, {total:,} characters" in out
    assert "next: judge them in the browser, `rag-eval annotate`" in out


def test_a_new_chunk_config_pools_only_text_nobody_read(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a manual longer than a window, so the top 2 of each run leave most of it unpooled
    (workspace / "data" / "corpus" / "alpha" / "manual.md").write_text(MANUAL, encoding="utf-8")
    assert main(["pool", "build", "--depth", "2"]) == 0
    first = store(workspace).read_pool()
    judgements = judge_everything(
        workspace, "ann", {query_id_for(PUMP): excerpt("alpha/pumps.md", "The main pump runs at 1,450 rpm")}
    )
    configs = workspace / "data" / "chunk_configs.yaml"
    configs.write_text(
        TINY_CHUNK_CONFIGS
        + "  - name: fixed-25-5\n    chunker: fixed\n    chunk_size: 25\n    chunk_overlap: 5\n",
        encoding="utf-8",
    )
    capsys.readouterr()
    assert main(["pool", "build", "--depth", "2"]) == 0
    out = capsys.readouterr().out
    again = store(workspace).read_pool()
    new = unjudged_passages(again, judgements, corpus(workspace))
    assert new  # the new config's chunks reach past the judged text
    for passage in new:  # and no new passage lies where the text was judged
        for judged in (j for j in judgements if j.query_id == passage.query_id):
            assert not any(passage.span.overlaps(r) for r in judged.read)
    # everything judged is still in the pool (for a second annotator), now marked as judged
    judged_chars = sum(len(p.span) for p in first)
    assert f"; {judged_chars:,} characters in" in out
    assert sum(len(p.span) for p in again) == judged_chars + sum(len(p.span) for p in new)


def test_status_prints_judged_at_k_flags_and_agreement(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pool", "build", "--depth", "1"]) == 0
    answer = {query_id_for(PUMP): excerpt("alpha/pumps.md", "The main pump runs at 1,450 rpm")}
    judge_everything(workspace, "ann", answer)
    judge_everything(workspace, "bob", answer)
    capsys.readouterr()
    assert main(["judgements", "status", "--k", "1,4"]) == 0
    out = capsys.readouterr().out
    assert "queries judged: 2 of 2 imported; 1 with an answer" in out
    assert "fixed-60-0 x top2" in out and "recursive-120-20 x top4" in out
    # pooled at depth 1: the top 4 holds text nobody read, and is flagged with what to do
    assert "flagged" in out and "`rag-eval pool build --depth" in out
    assert (
        "ann / bob: 2 queries both judged, kappa" in out and "span overlap (IoU) 1.00 over 1 queries" in out
    )


def test_a_setup_is_not_flagged_once_its_top_k_is_judged(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pool", "build", "--depth", "4"]) == 0
    judge_everything(
        workspace, "ann", {query_id_for(PUMP): excerpt("alpha/pumps.md", "The main pump runs at 1,450 rpm")}
    )
    capsys.readouterr()
    assert main(["judgements", "status"]) == 0
    out = capsys.readouterr().out
    assert "flagged" not in out and "agreement: no query judged by two judges yet" in out
    assert "recursive-120-20 x top4  4  1.00" in out


def test_export_writes_the_golden_file_and_re_anchors_after_an_edit(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pool", "build"]) == 0
    answer = excerpt("alpha/pumps.md", "The main pump runs at 1,450 rpm")
    judge_everything(workspace, "ann", {query_id_for(PUMP): answer})
    capsys.readouterr()
    assert main(["judgements", "export"]) == 0
    out = capsys.readouterr().out
    golden = workspace / "data" / "datasets" / "golden_token_level.jsonl"
    assert (
        f"1 judged questions written to {golden} (0 rows of an earlier export replaced, 4 other rows kept)"
        in out
    )
    assert "1 judged queries have no answer in the documents" in out
    dataset = read_token_level_jsonl(golden, corpus(workspace))
    assert [e.question_id for e in dataset][:4] == ["tiny-1", "tiny-2", "tiny-3", "tiny-4"]
    judged = dataset.examples[4]
    assert (judged.question_id, judged.query, judged.relevant_spans) == (query_id_for(PUMP), PUMP, (answer,))
    assert judged.metadata["count"] == 5 and judged.metadata["judges"] == ["ann"]
    # the document is edited: the judgement moves with its text, the export replaces its own row
    pumps = workspace / "data" / "corpus" / "alpha" / "pumps.md"
    edited = "Revised in 2026.\n\n" + TINY_DOCS["alpha/pumps.md"]
    pumps.write_text(edited, encoding="utf-8")
    assert main(["judgements", "export"]) == 0
    out = capsys.readouterr().out
    assert "(1 rows of an earlier export replaced, 4 other rows kept)" in out
    assert "2 judgements moved with edited documents (re-anchored)" in out  # both read pumps.md
    rows = golden.read_text(encoding="utf-8").splitlines()
    assert len(rows) == 5
    moved = excerpt("alpha/pumps.md", answer.text, {"alpha/pumps.md": edited})
    assert f'"start": {moved.start}' in rows[4]


def test_a_lost_answer_is_reported_stale_and_not_exported(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pool", "build"]) == 0
    judge_everything(
        workspace, "ann", {query_id_for(PUMP): excerpt("alpha/pumps.md", "The main pump runs at 1,450 rpm")}
    )
    pumps = workspace / "data" / "corpus" / "alpha" / "pumps.md"
    pumps.write_text(TINY_DOCS["alpha/pumps.md"].replace("1,450", "1,500"), encoding="utf-8")
    capsys.readouterr()
    assert main(["judgements", "export"]) == 1
    captured = capsys.readouterr()
    assert "1 stale judgements" in captured.err and "no longer occurs in alpha/pumps.md" in captured.err
    assert "no judged query with an answer yet" in captured.err


def test_without_imported_queries_each_command_says_how_to_import_them(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["pool", "build"], ["judgements", "status"], ["judgements", "export"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "no imported queries in" in err and "rag-eval queries import FILE" in err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["pool", "build", "--depth", "0"], "argument --depth: 0 must be at least 1"),
        (["judgements", "status", "--threshold", "1.5"], "must be a share between 0 and 1"),
        (["judgements", "status", "--k", "a"], "'a' is not a whole number"),
    ],
)
def test_bad_arguments_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2
    assert said in capsys.readouterr().err


def test_export_elsewhere_says_how_to_evaluate_on_it(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pool", "build"]) == 0
    answer = excerpt("alpha/pumps.md", "The main pump runs at 1,450 rpm")
    judge_everything(workspace, "ann", {query_id_for(PUMP): answer})
    (workspace / "data" / "generation.yaml").write_text("evaluate_on: synthetic\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["judgements", "export", "--out", "judged.jsonl"]) == 0
    out = capsys.readouterr().out
    written = workspace / "judged.jsonl"  # relative to where rag-eval ran (the workspace here)
    assert (
        f"1 judged questions written to {written} (0 rows of an earlier export replaced, 0 other rows kept)"
        in out
    )
    assert "next: set evaluate_on: golden (or both) in" in out
    assert f"next: evaluate on them with `RAG_EVAL_GOLDEN_DATASET={written} rag-eval run`" in out
    assert [e.query for e in read_token_level_jsonl(written, corpus(workspace))] == [PUMP]


def test_status_before_any_judgement_says_what_to_do(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["judgements", "status"]) == 0
    out = capsys.readouterr().out
    assert "queries judged: 0 of 2 imported; 0 with an answer" in out
    assert "next: `rag-eval pool build`, then judge the pooled passages with `rag-eval annotate`" in out
    assert main(["pool", "build", "--depth", "2"]) == 0
    capsys.readouterr()
    assert main(["judgements", "status"]) == 0
    assert "next: judge the pooled passages with `rag-eval annotate`" in capsys.readouterr().out


@pytest.mark.slow
def test_judged_queries_are_evaluated_with_their_traffic_from_import_to_leaderboard(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The documented path (docs/real-queries.md): queries (with counts) pooled, judged, exported,
    evaluated by `rag-eval run`; the leaderboard shows the traffic-weighted objective beside the plain one."""
    assert main(["pool", "build", "--depth", "3"]) == 0
    answers = {
        query_id_for(PUMP): excerpt("alpha/pumps.md", "The main pump runs at 1,450 rpm"),
        query_id_for(NIGHT): excerpt("beta/staff.md", "Zoë Mbeki leads the night shift"),
    }
    judge_everything(workspace, "ann", answers)
    assert main(["judgements", "export"]) == 0
    capsys.readouterr()
    assert main(["run", "--chunk-configs", "fixed-60-0", "--profiles", "top2"]) == 0
    out = capsys.readouterr().out
    assert "span_recall_1000t weighted" in out, out
    metrics = Warehouse.in_project(workspace).read_current(
        "retrieval_metrics", {"chunk_config": "fixed-60-0", "profile": "top2"}
    )
    assert metrics is not None
    counts = dict(zip(metrics["question_id"], metrics["query_count"], strict=True))
    assert counts[query_id_for(PUMP)] == 5 and counts[query_id_for(NIGHT)] == 2 and counts["tiny-1"] == 1
