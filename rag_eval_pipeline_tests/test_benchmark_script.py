"""benchmarks/chroma_general.py on a tiny slice of the real data, with a cheap deterministic embedder."""

from __future__ import annotations

import importlib.util
import io
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.core.embedding.base import Embedder
from rag_eval_pipeline.core.errors import DatasetError
from rag_eval_pipeline.core.metrics.names import TOKEN_LEVEL_METRICS
from rag_eval_pipeline.core.metrics.span_metrics import span_metrics
from rag_eval_pipeline.core.progress import no_progress
from rag_eval_pipeline.core.types import CharacterSpan, ChunkId, DocumentId, PositionAwareChunk, QuestionId
from rag_eval_pipeline_tests.fakes import HashingEmbedder

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "chroma_general.py"

CONFIGS_YAML = """\
chunk_configs:
  - name: recursive-800-100
    chunker: recursive
    chunk_size: 800
    chunk_overlap: 100
  - name: fixed-50-0
    chunker: fixed
    chunk_size: 50
"""
PROFILES_YAML = """\
profiles:
  - name: dense-top5
    top_k: 5
  - name: hybrid-top5
    top_k: 5
    vector_weight: 0.6
    keyword_weight: 0.4
  - name: keyword-top5
    top_k: 5
    vector_weight: 0
    keyword_weight: 1
  - name: reranked-top5
    top_k: 5
    reranker: models/no-such-cross-encoder
"""
PROFILE_NAMES = ("dense-top5", "hybrid-top5", "keyword-top5")
FIGURE = r"(?:[0-9][0-9,]*(?:\.[0-9]+)?|inf)"  # a rate as printed: 1,234 or 56.7


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("chroma_general_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


bench = _load_script()


def _metric_line(report: str, name: str) -> list[tuple[float, float, float]]:
    pattern = rf"^{name}\s+([0-9.]+)\s+\[([0-9.]+), ([0-9.]+)\]$"
    return [tuple(map(float, m.groups())) for m in re.finditer(pattern, report, re.MULTILINE)]  # type: ignore[misc]


def _section(report: str, profile: str) -> str:
    """The per-profile block of the report, from its ``-- name:`` heading to the next blank line."""
    match = re.search(rf"^-- {profile}: .*?(?=^\n|\Z)", report, re.MULTILINE | re.DOTALL)
    assert match is not None, profile
    return match.group(0)


def _table_row(report: str, title: str, config: str, profile: str) -> list[str]:
    """The cells after ``config profile`` in the summary table whose title starts with ``title``."""
    table = report[report.index(f"\n{title}") :].split("\n\n", 1)[0]
    rows = [line.split()[2:] for line in table.splitlines() if line.split()[:2] == [config, profile]]
    assert len(rows) == 1, (title, profile)
    return rows[0]


def _write_configs(tmp_path: Path) -> list[str]:
    configs = tmp_path / "chunk_configs.yaml"
    configs.write_text(CONFIGS_YAML, encoding="utf-8")
    profiles = tmp_path / "retrieval_profiles.yaml"
    profiles.write_text(PROFILES_YAML, encoding="utf-8")
    return ["--chunk-configs", str(configs), "--profiles", str(profiles)]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One run on 10 questions and one chunk config, shared by the tests that read its report and its
    Parquet files."""
    folder = tmp_path_factory.mktemp("bench")
    argv = [*_write_configs(folder), "--limit-questions", "10", "--out", str(folder / "out"), "--only"]
    out = io.StringIO()
    code = bench.main(
        [*argv, "recursive-800-100"], embedder=HashingEmbedder(dimension=128), out=out, progress=no_progress
    )
    assert code == 0
    return out.getvalue(), folder / "out"


@pytest.fixture(scope="module")
def tiny_report(tiny_run: tuple[str, Path]) -> str:
    return tiny_run[0]


def test_tiny_slice_reports_every_metric_per_profile(tiny_report: str) -> None:
    report = tiny_report
    assert "== recursive-800-100" in report
    assert "fixed-50-0" not in report  # --only left it out
    assert "questions: 276 (452 references) from " in report
    assert "; --limit-questions: the first 10 of them; configs: " in report
    for name in bench.REPORTED_METRICS:
        assert len(_metric_line(report, name)) == len(PROFILE_NAMES), name
    for profile in PROFILE_NAMES:
        section = _section(report, profile)
        assert "identical hits in every pass" in section
        for name in ("span_recall", "recall_at_k"):
            ((mean, low, high),) = _metric_line(section, name)
            assert 0.0 <= low <= mean <= high <= 1.0
    for words in ("chunks/s", "passages/s", "warm/cold", "questions/s", "tracemalloc peak", "BM25: "):
        assert words in report
    assert "(0 embedded, " in report  # the warm pass is all cache hits
    assert "same top-5 list as numpy for 10/10 queries" in _section(report, "dense-top5")
    for profile in ("hybrid-top5", "keyword-top5"):  # compared question by question with dense-top5
        cells = _table_row(report, "Paired differences against dense-top5", "recursive-800-100", profile)
        assert len(cells) == 3 * len(bench.PAIRED_METRICS)  # mean, [low, high] per metric
    assert "checks: identical hits in all 3 passes of all 3 (config, profile) runs; knn agrees" in report
    assert "total runtime" in report


def test_both_precision_omegas_are_printed_the_projects_and_chromas(tiny_run: tuple[str, Path]) -> None:
    """The published tables use Chroma's precision omega, which only questions.parquet held."""
    report, out_dir = tiny_run
    header = report[report.index("\nQuality") :].splitlines()[2].split()
    assert header[header.index("prec_omg") + 1] == "omg_chr"
    questions = pd.read_parquet(out_dir / bench.QUESTIONS_PARQUET)
    for profile, group in questions.groupby("profile"):
        cells = dict(
            zip(header[2:], _table_row(report, "Quality", "recursive-800-100", str(profile)), strict=False)
        )
        assert abs(group["precision_omega_chroma"].mean() - float(cells["omg_chr"])) <= 0.0005 + 1e-12
        assert abs(group["precision_omega"].mean() - float(cells["prec_omg"])) <= 0.0005 + 1e-12
    section = _section(report, "dense-top5")
    assert len(_metric_line(section, "precision_omega_chroma")) == 1


def test_the_public_benchmarks_questions_df_csv_is_read_when_there_is_no_questions_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, questions = _two_corpora(tmp_path)
    (data / "questions_df.csv").write_bytes(questions.read_bytes())  # as chunking_evaluation ships it
    loaded = bench.load_benchmark(data)
    assert loaded.questions_file == data / "questions_df.csv" and len(loaded.dataset) == 3
    (data / "questions.csv").write_text(
        "question,references,corpus_id\n" + _question_row("What moves oil?", "pumps", 31, 40, "moves oil"),
        encoding="utf-8",
    )
    assert bench.load_benchmark(data).questions_file == data / "questions.csv"  # this subset's name first

    (data / "questions.csv").unlink()
    (data / "questions_df.csv").unlink()
    argv = ["--data", str(data), "--out", str(tmp_path / "o")]
    assert bench.main(argv, embedder=HashingEmbedder(), out=io.StringIO()) == 2
    assert f"{data} holds no questions file (questions.csv or questions_df.csv)" in capsys.readouterr().err


def test_a_profile_that_needs_a_reranker_is_skipped_with_a_note(tiny_report: str) -> None:
    assert "reranked-top5: skipped, needs a reranker (models/no-such-cross-encoder)" in tiny_report
    assert "-- reranked-top5" not in tiny_report
    assert "reranked-top5" not in tiny_report.split("\nQuality", 1)[1]


def test_hybrid_profile_reports_knn_bm25_and_fusion_rates(tiny_report: str) -> None:
    section = _section(tiny_report, "hybrid-top5")
    for stage in ("knn", "bm25", "fusion"):
        assert re.search(rf"^\s+{stage}\s+[0-9.]+ s: {FIGURE} queries/s", section, re.MULTILINE), stage
    assert "knn hits within numpy's top-20 for 10/10 queries" in section
    found = re.search(r"found by\s+50 final hits: knn only (\d+) .*bm25 only (\d+) .*both (\d+) ", section)
    assert found is not None and sum(map(int, found.groups())) == 50

    e2e, knn, bm25, fuse, numpy_rate, numpy_knn, numpy_bm25, fuse_knn, shares = _table_row(
        tiny_report, "Retrieval speed", "recursive-800-100", "hybrid-top5"
    )
    for cell in (e2e, knn, bm25, fuse, numpy_rate):
        assert re.fullmatch(FIGURE, cell), cell
    for cell in (numpy_knn, numpy_bm25):
        assert re.fullmatch(rf"{FIGURE}x", cell), cell
    assert re.fullmatch(r"[0-9.]+%", fuse_knn)
    assert sum(map(int, shares.split("/"))) in (99, 100, 101)  # rounded percentages

    dense = _table_row(tiny_report, "Retrieval speed", "recursive-800-100", "dense-top5")
    keyword = _table_row(tiny_report, "Retrieval speed", "recursive-800-100", "keyword-top5")
    assert dense[2] == dense[3] == "-"  # no bm25, no fusion
    assert keyword[1] == keyword[3] == "-"  # no knn, no fusion


def test_keyword_and_dense_profiles_give_different_results(tiny_report: str) -> None:
    """Fails when the profiles are ignored and every one runs the same retrieval."""
    quality = {
        profile: _table_row(tiny_report, "Quality", "recursive-800-100", profile) for profile in PROFILE_NAMES
    }
    assert quality["keyword-top5"] != quality["dense-top5"]
    keyword_section = _section(tiny_report, "keyword-top5")
    assert "knn " not in keyword_section  # a keyword-only profile never touches Qdrant
    assert _metric_line(keyword_section, "mrr") != _metric_line(_section(tiny_report, "dense-top5"), "mrr")


def test_every_reference_of_the_real_data_loads() -> None:
    data = bench.load_benchmark(bench.DEFAULT_DATA)
    corpus, dataset = data.corpus, data.dataset
    assert [d.doc_id for d in corpus] == ["chatlogs.md", "state_of_the_union.md", "wikitexts.md"]
    assert len(dataset) == 276 == data.questions_in_file
    assert sum(len(e.relevant_spans) for e in dataset) == 452
    assert dataset.examples[0].question_id == "chroma-001"
    assert dataset.examples[-1].question_id == "chroma-276"
    assert data.dropped == {}


def test_corpora_keeps_those_corpora_and_their_questions_only() -> None:
    data = bench.load_benchmark(bench.DEFAULT_DATA, corpora="state_of_the_union")
    assert [d.doc_id for d in data.corpus] == ["state_of_the_union.md"]
    assert len(data.dataset) == 76
    assert {s.doc_id for e in data.dataset for s in e.relevant_spans} == {"state_of_the_union.md"}
    assert data.dropped == {"wikitexts": 144, "chatlogs": 56}
    header = bench.describe_data(data)
    assert "questions: 76 " in header
    assert (
        "200 of the file's 276 questions dropped, their corpora not selected (wikitexts 144, chatlogs 56)"
        in header
    )


def _question_row(question: str, corpus_id: str, start: int, end: int, content: str) -> str:
    refs = json.dumps([{"content": content, "start_index": start, "end_index": end}])
    return f'"{question}","' + refs.replace('"', '""') + f'",{corpus_id}\n'


def _write_data(root: Path, start: int, end: int, content: str) -> Path:
    (root / "corpora").mkdir(parents=True)
    (root / "corpora" / "notes.md").write_text("The pump runs at 1,450 rpm.\n", encoding="utf-8")
    question = _question_row("How fast does the pump run?", "notes", start, end, content)
    (root / "questions.csv").write_text("question,references,corpus_id\n" + question, encoding="utf-8")
    return root


def test_a_reference_that_does_not_match_its_text_fails_clearly(tmp_path: Path) -> None:
    good = _write_data(tmp_path / "good", 4, 8, "pump")
    dataset = bench.load_benchmark(good).dataset
    assert dataset.examples[0].relevant_spans[0].text == "pump"

    bad = _write_data(tmp_path / "bad", 5, 9, "pump")
    expected = r"data row 1 \(chroma-001\), reference 0: notes.md\[5:9\] is 'ump ' but the CSV says 'pump'"
    with pytest.raises(DatasetError, match=expected):
        bench.load_benchmark(bad)
    assert bench.main(["--data", str(bad)], embedder=HashingEmbedder(), out=io.StringIO()) == 2


def test_unknown_names_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = _write_configs(tmp_path)
    assert bench.main([*argv, "--only", "nope"], embedder=HashingEmbedder(), out=io.StringIO()) == 2
    assert "unknown chunk config(s) nope" in capsys.readouterr().err
    assert bench.main([*argv, "--only-profiles", "nope"], embedder=HashingEmbedder(), out=io.StringIO()) == 2
    assert "--only-profiles: unknown profile(s) nope" in capsys.readouterr().err


def test_only_profiles_that_need_a_reranker_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*_write_configs(tmp_path), "--only-profiles", "reranked-top5"]
    assert bench.main(argv, embedder=HashingEmbedder(), out=io.StringIO()) == 2
    assert "every selected profile needs a reranker or an LLM" in capsys.readouterr().err


def test_numpy_top_k_is_exact_and_best_first() -> None:
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((50, 8)).astype(np.float32)
    query = rng.standard_normal(8).astype(np.float32)
    expected = np.argsort(-(matrix @ query))[:5]
    assert bench.numpy_top_k(matrix, query, 5).tolist() == expected.tolist()
    assert len(bench.numpy_top_k(matrix, query, 80)) == 50


def test_numpy_top_k_breaks_ties_in_document_order_as_the_engines_do() -> None:
    """Six copies of one vector straddle the cut at k = 3: the earliest copies in the document win,
    whichever rows hold them (the chunk set's rows are given here in reverse document order)."""
    rng = np.random.default_rng(1)
    matrix = rng.standard_normal((40, 8)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    copies = [3, 11, 17, 25, 30, 38]
    matrix[copies] = matrix[3]
    chunks = [
        PositionAwareChunk(ChunkId(f"c{i:02d}"), DocumentId("d.md"), 10 * (40 - i), 10 * (40 - i) + 1, "x")
        for i in range(40)
    ]
    positions = bench.document_positions(chunks)
    assert bench.numpy_top_k(matrix, matrix[3], 3, positions).tolist() == [38, 30, 25]
    assert bench.numpy_top_k(matrix, matrix[3], 3).tolist() == [3, 11, 17]  # rows in document order


def _two_corpora(root: Path) -> tuple[Path, Path]:
    """A data folder with corpora notes and pumps, and a questions file kept outside it."""
    (root / "data" / "corpora").mkdir(parents=True)
    (root / "data" / "corpora" / "notes.md").write_text(
        "The pump runs at 1,450 rpm.\nIts seal is checked every week.\n", encoding="utf-8"
    )
    (root / "data" / "corpora" / "pumps.md").write_text(
        "Pump P-7 moves water.\nPump P-9 moves oil.\n", encoding="utf-8"
    )
    questions = root / "elsewhere" / "my_questions.csv"
    questions.parent.mkdir()
    questions.write_text(
        "question,references,corpus_id\n"
        + _question_row("How fast does the pump run?", "notes", 17, 26, "1,450 rpm")
        + _question_row("What does P-9 move?", "pumps", 31, 40, "moves oil")
        + _question_row("How often is the seal checked?", "notes", 48, 58, "every week"),
        encoding="utf-8",
    )
    return root / "data", questions


def test_any_questions_file_and_a_subset_of_corpora_run_end_to_end(tmp_path: Path) -> None:
    data, questions = _two_corpora(tmp_path)
    argv = [*_write_configs(tmp_path), "--data", str(data), "--questions", str(questions), "--only"]
    argv += [
        "fixed-50-0",
        "--only-profiles",
        "dense-top5",
        "--corpora",
        "notes",
        "--out",
        str(tmp_path / "o"),
    ]
    out = io.StringIO()
    assert bench.main(argv, embedder=HashingEmbedder(), out=out, progress=no_progress) == 0
    report = out.getvalue()
    assert (
        f"corpora: notes (1 documents, 60 characters); questions: 2 (2 references) from {questions}" in report
    )
    assert "1 of the file's 3 questions dropped, their corpora not selected (pumps 1)" in report
    frame = pd.read_parquet(tmp_path / "o" / bench.QUESTIONS_PARQUET)
    assert frame["question_id"].tolist() == ["chroma-001", "chroma-003"]  # row numbers of the file
    assert set(frame["corpus"]) == {"notes"}
    hits = pd.read_parquet(tmp_path / "o" / bench.RETRIEVED_PARQUET)
    assert set(hits["doc_id"]) == {"notes.md"}  # pumps.md was not indexed


def test_bad_corpora_and_questions_are_refused_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, questions = _two_corpora(tmp_path)
    argv = ["--data", str(data), "--questions", str(questions), "--out", str(tmp_path / "o")]
    assert (
        bench.main([*argv, "--corpora", "notes,valves"], embedder=HashingEmbedder(), out=io.StringIO()) == 2
    )
    assert re.search(
        r"--corpora: unknown corpus name\(s\) \(files of .*\) valves; known: notes, pumps",
        capsys.readouterr().err,
    )

    missing = tmp_path / "missing.csv"
    assert (
        bench.main(
            ["--data", str(data), "--questions", str(missing)], embedder=HashingEmbedder(), out=io.StringIO()
        )
        == 2
    )
    assert f"question file {missing} does not exist" in capsys.readouterr().err

    valves = tmp_path / "valves.csv"
    valves.write_text(
        "question,references,corpus_id\n" + _question_row("Which valve?", "valves", 0, 4, "Pump"),
        encoding="utf-8",
    )
    assert (
        bench.main(
            ["--data", str(data), "--questions", str(valves)], embedder=HashingEmbedder(), out=io.StringIO()
        )
        == 2
    )
    err = capsys.readouterr().err
    assert f"{valves}, data row 1 (chroma-001): column corpus_id 'valves' has no file valves.md" in err

    (data / "corpora" / "valves.md").write_text("Valve V-1 is shut.\n", encoding="utf-8")
    expected = (
        r"none of its 3 questions asks about valves \(--corpora\); they ask about notes \(2\), pumps \(1\)"
    )
    with pytest.raises(DatasetError, match=expected):
        bench.load_benchmark(data, questions, corpora="valves")


def test_questions_parquet_has_every_metric_per_question_and_the_printed_means(
    tiny_run: tuple[str, Path],
) -> None:
    report, out_dir = tiny_run
    assert f"per-question results in {out_dir}: questions.parquet (30 rows" in report
    questions = pd.read_parquet(out_dir / bench.QUESTIONS_PARQUET)
    assert len(questions) == 10 * len(PROFILE_NAMES)
    assert set(TOKEN_LEVEL_METRICS) <= set(questions.columns)
    assert not questions.duplicated(["chunk_config", "profile", "question_id"]).any()
    assert questions.loc[0, "question_id"] == "chroma-001"
    assert str(questions.loc[0, "query"]).endswith("?")
    assert set(questions["chunk_config"]) == {"recursive-800-100"}
    assert set(questions["profile"]) == set(PROFILE_NAMES)
    for profile, group in questions.groupby("profile"):
        assert group["corpus"].tolist() == ["state_of_the_union"] * 10  # the first 10 rows of the file
        cells = _table_row(report, "Quality", "recursive-800-100", str(profile))
        assert cells[0] == "5" == str(group["k"].iloc[0])
        section = _section(report, str(profile))
        for name, cell in zip(bench.REPORTED_METRICS, cells[1:], strict=False):
            assert abs(group[name].mean() - float(cell)) <= 0.0005 + 1e-12, (profile, name)
            ((printed, _, _),) = _metric_line(section, name)
            assert abs(group[name].mean() - printed) <= 0.0005 + 1e-12, (profile, name)


def test_retrieved_parquet_holds_the_ranked_spans_the_metrics_come_from(tiny_run: tuple[str, Path]) -> None:
    _, out_dir = tiny_run
    questions = pd.read_parquet(out_dir / bench.QUESTIONS_PARQUET)
    hits = pd.read_parquet(out_dir / bench.RETRIEVED_PARQUET)
    for column in (
        "rank",
        "doc_id",
        "start",
        "end",
        "chunk_id",
        "score",
        "found_by",
        "knn_rank",
        "bm25_rank",
    ):
        assert column in hits.columns, column
    data = bench.load_benchmark(bench.DEFAULT_DATA)
    examples = {e.question_id: e for e in data.dataset}
    keys = ["chunk_config", "profile", "question_id"]
    rows = {(r["chunk_config"], r["profile"], r["question_id"]): r for r in questions.to_dict("records")}
    assert len(rows) == len(questions)
    seen = set()
    for (config, profile, question_id), group in hits.groupby(keys):
        key = (str(config), str(profile), str(question_id))
        seen.add(key)
        row = rows[key]
        assert group["rank"].tolist() == list(range(1, row["n_retrieved"] + 1))
        assert row["n_retrieved"] == row["k"] == 5
        spans = [
            CharacterSpan(DocumentId(doc), int(start), int(end), data.corpus[doc].text[int(start) : int(end)])
            for doc, start, end in zip(group["doc_id"], group["start"], group["end"], strict=True)
        ]
        scores = span_metrics(examples[QuestionId(key[2])].relevant_spans, spans)
        assert scores.span_recall == pytest.approx(row["span_recall"]), key
        assert scores.precision_chroma == pytest.approx(row["precision_chroma"]), key
    assert seen == set(rows)
    keyword = hits[hits["profile"] == "keyword-top5"]
    assert keyword["knn_rank"].isna().all() and keyword["bm25_rank"].notna().all()


def test_published_figures_agree_only_to_the_published_digits() -> None:
    recall, precision, _ = bench.PUBLISHED
    assert bench.MeasuredFigure(recall, 91.44, 24.549).agrees
    assert not bench.MeasuredFigure(recall, 91.46, 24.5).agrees
    assert not bench.MeasuredFigure(recall, 91.4, 24.56).agrees
    assert bench.MeasuredFigure(precision, 3.834, 2.7351).agrees
    assert not bench.MeasuredFigure(precision, 3.836, 2.74).agrees


def test_published_mode_refuses_options_that_would_change_its_setup(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        bench.main(
            ["--published-sotu", "--corpora", "wikitexts"], embedder=HashingEmbedder(), out=io.StringIO()
        )
    assert exit_info.value.code == 2
    assert "--published-sotu runs Chroma's fixed setup" in capsys.readouterr().err


def test_published_mode_runs_chromas_setup_and_writes_its_questions(tmp_path: Path) -> None:
    """The plumbing of --published-sotu with a cheap embedder (its figures then differ from Chroma's):
    one corpus, its 76 questions, cl100k windows of 200 tokens, top 5 from the exact default store."""
    out = io.StringIO()
    argv = ["--published-sotu", "--out", str(tmp_path / "o")]
    assert bench.main(argv, embedder=HashingEmbedder(dimension=128), out=out) == 0
    report = out.getvalue()
    assert "corpora: state_of_the_union (1 documents, 48,051 characters); questions: 76 " in report
    assert "200 of the file's 276 questions dropped" in report
    assert "chroma-cl100k-200-0: token, cl100k_base tokens, size 200, overlap 0: " in report
    assert "knn only, top 5, cosine, vector store edge (exact search)" in report
    assert "(NOT the published sentence-transformers/all-MiniLM-L6-v2)" in report
    table = report[report.index("Chroma's published figure and ours") :].split("\n\n", 1)[0]
    for label, column, published in (
        ("recall", "span_recall", "91.4 ± 24.5"),
        ("precision", "precision_chroma", "3.83 ± 2.74"),
        ("IoU", "iou_chroma", "3.83 ± 2.73"),
    ):
        assert re.search(rf"^{label}\s+{column}\s+{published}\s+[0-9.]+ ± [0-9.]+\s+", table, re.MULTILINE)
    questions = pd.read_parquet(tmp_path / "o" / bench.QUESTIONS_PARQUET)
    assert len(questions) == 76
    assert set(questions["chunk_config"]) == {"chroma-cl100k-200-0"}
    assert set(questions["corpus"]) == {"state_of_the_union"}
    ours = re.search(r"^recall\s+span_recall\s+\S+ ± \S+\s+([0-9.]+) ± ([0-9.]+)", table, re.MULTILINE)
    assert ours is not None
    recall = questions["span_recall"]
    assert float(ours.group(1)) == pytest.approx(100 * recall.mean(), abs=0.0005)
    assert float(ours.group(2)) == pytest.approx(100 * recall.std(ddof=0), abs=0.0005)  # population std


@pytest.mark.slow
def test_published_mode_reproduces_chromas_state_of_the_union_figure(minilm: Embedder) -> None:
    """Correctness oracle for the chunker, the embedder, exact retrieval and the Chroma-style metrics
    together: Chroma's published figure, to the digits it was published with."""
    run = bench.run_published(bench.DEFAULT_DATA, minilm)
    assert len(run.evaluation.raw_results) == 76
    assert run.vector_store == "edge (exact search)"
    assert all(m.agrees for m in run.figures), bench.format_published(run)


def test_an_out_folder_that_cannot_be_made_fails_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, questions = _two_corpora(tmp_path)
    taken = tmp_path / "a-file"
    taken.write_text("not a folder", encoding="utf-8")
    out = io.StringIO()
    argv = [
        *_write_configs(tmp_path),
        "--data",
        str(data),
        "--questions",
        str(questions),
        "--out",
        str(taken),
    ]
    assert bench.main(argv, embedder=HashingEmbedder(), out=out, progress=no_progress) == 2
    assert f"cannot create folder {taken}" in capsys.readouterr().err
    assert out.getvalue() == ""  # nothing ran
