"""Bad input about the workspace itself, refused with exit 2 and a message naming the file and the key
before anything is computed, or listed where it used to vanish: a golden set asked for and missing, SQL
that writes or reads outside the history, settings files edited by several commands at once, a
workspace inside its own corpus folder, a glob that leaves the corpus folder, a chunk config setting its
chunker ignores, links in the corpus that lead to no document. Driven through `rag-eval` subprocesses on
the tiny project, and `dg.materialize` of the corpus asset (what the UI runs)."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import dagster as dg
import pytest

from rag_eval_pipeline.core.settings.configs import load_profiles
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.defs.ingestion.assets import corpus as corpus_asset
from rag_eval_pipeline_tests.conftest import TINY_DOCS, latest_metadata, tiny_resources
from rag_eval_pipeline_tests.faults.entry_points import rag_eval, rag_eval_command, rag_eval_env
from rag_eval_pipeline_tests.history_files import at, retrieval_rows, write_run
from rag_eval_pipeline_tests.instances import instance_for_tests

pytestmark = pytest.mark.slow

ONE_PAIR = ("--chunk-configs", "fixed-60-0", "--profiles", "top2")
GOLDEN = Path("data/datasets/golden_token_level.jsonl")
CHUNK_CONFIGS = Path("data/chunk_configs.yaml")


@pytest.mark.parametrize("evaluate_on", ["golden", "both"])
def test_a_golden_set_asked_for_and_missing_stops_before_any_run(tiny_project: Path, evaluate_on: str):
    golden = tiny_project / GOLDEN
    golden.unlink()
    generation = tiny_project / "data" / "generation.yaml"
    if evaluate_on == "both":
        generation.write_text("evaluate_on: both\n", encoding="utf-8")
    where = f"in {generation}" if evaluate_on == "both" else "the default, as there is no data/generation"

    run = rag_eval(tiny_project, "run", *ONE_PAIR)
    assert run.returncode == 2, run.stderr
    assert (
        f"error: evaluate_on: {evaluate_on} ({where}" in run.stderr
        and f"asks for the golden dataset {golden}, which does not exist" in run.stderr
    )
    assert f"`rag-eval dataset import FILE --out {golden}`" in run.stderr
    assert "set evaluate_on: synthetic in " in run.stderr and "to silence this" not in run.stderr
    assert "Traceback" not in run.stderr
    assert "evaluation " not in run.stdout  # no plan announced, no run made
    assert not (tiny_project / "data" / "warehouse").exists()


def test_query_reads_the_history_and_nothing_else(tiny_project: Path, tmp_path: Path):
    warehouse = tiny_project / "data" / "warehouse"
    values = {"span_iou": {"q1": 0.25, "q2": 0.75}, "span_recall": {"q1": 0.5, "q2": 1.0}}
    frame = retrieval_rows("run-1", "fixed-60-0", "top2", values, at(1), evaluation_id="eval-1", mode="full")
    history_file = write_run(warehouse, frame)
    current = Warehouse(warehouse).write_table(
        frame, "retrieval_metrics", {"chunk_config": "fixed-60-0", "profile": "top2"}, "run-1"
    )
    before = {path: path.read_bytes() for path in (history_file, current)}
    secret = tmp_path / "outside" / "notes.txt"
    secret.parent.mkdir()
    secret.write_text("PRIVATE-NOTE-8d2e\n", encoding="utf-8")

    # the documented examples (docs/history.md) still run
    iou = rag_eval(
        tiny_project,
        "query",
        "select chunk_config, profile, round(avg(span_iou), 3) as iou from retrieval_metrics group by all "
        "order by iou desc",
    )
    assert iou.returncode == 0, iou.stderr
    assert "fixed-60-0    top2     0.5" in iou.stdout
    summary = rag_eval(tiny_project, "query", "select * from retrieval_metrics_summary", "--format", "csv")
    assert summary.returncode == 0, summary.stderr
    assert summary.stdout.startswith("run_id,") and ",fixed-60-0," in summary.stdout
    by_path = rag_eval(
        tiny_project, "query", "select count(*) as n from read_parquet('data/warehouse/history/**/*.parquet')"
    )
    assert by_path.returncode == 0, by_path.stderr

    writes = [
        f"COPY (SELECT 1 AS x) TO '{current.relative_to(tiny_project)}' (FORMAT PARQUET)",  # the issue's
        f"COPY (SELECT 1 AS x) TO '{history_file}' (FORMAT PARQUET)",
        f"COPY (SELECT 1 AS x) TO '{tmp_path / 'outside' / 'written.csv'}'",
        "select 1; COPY (SELECT 1 AS x) TO 'x.csv'",
        "SET enable_external_access = true",
        f"ATTACH '{tmp_path / 'outside' / 'new.duckdb'}'",
    ]
    for sql in writes:
        refused = rag_eval(tiny_project, "query", sql)
        assert refused.returncode == 2, (sql, refused.stderr)
        assert "error: `rag-eval query` only reads the history: " in refused.stderr, sql
        assert "statements are refused" in refused.stderr and "Traceback" not in refused.stderr
    reads = [f"select * from read_text('{secret}')", "select * from read_csv('/etc/passwd')"]
    for sql in reads:
        refused = rag_eval(tiny_project, "query", sql)
        assert refused.returncode == 2, (sql, refused.stderr)
        assert (
            f"error: `rag-eval query` reads only the history under {Warehouse(warehouse).history_dir}"
            in refused.stderr
        )
        assert "PRIVATE-NOTE" not in refused.stdout + refused.stderr
    assert {path: path.read_bytes() for path in (history_file, current)} == before
    assert sorted(p.name for p in secret.parent.iterdir()) == ["notes.txt"]
    assert not (tiny_project / "x.csv").exists()


def test_profiles_created_at_once_are_all_kept_and_each_reported(tiny_project: Path):
    names = [f"fresh-{i}" for i in range(5)]
    processes = [
        subprocess.Popen(
            rag_eval_command("profiles", "create", name, "--set", f"top_k={i + 1}"),
            env=rag_eval_env(tiny_project),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, name in enumerate(names)
    ]
    results = [(p, *p.communicate(timeout=600)) for p in processes]
    for name, (process, out, err) in zip(names, results, strict=True):
        assert process.returncode == 0, err
        assert f"created profile {name} v1" in out and "Traceback" not in err
    profiles = {p.name: p.top_k for p in load_profiles(tiny_project / "data" / "retrieval_profiles.yaml")}
    assert profiles == {"top2": 2, "top4": 4, **{name: i + 1 for i, name in enumerate(names)}}


def write_docs(folder: Path) -> Path:
    for rel, text in TINY_DOCS.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    return folder


def test_a_workspace_inside_its_corpus_folder_is_refused_at_init_and_after_an_edit(tmp_path: Path):
    site = tmp_path / "site"
    docs = write_docs(site / "docs")

    inside = rag_eval(tmp_path, "init", str(docs / "eval"), "--corpus", str(docs))
    assert inside.returncode == 2, inside.stderr
    assert f"the corpus folder {docs} holds the workspace {docs / 'eval'}" in inside.stderr
    assert "own reports and tables as documents" in inside.stderr and "Traceback" not in inside.stderr
    assert not (docs / "eval").exists()  # nothing written
    same = rag_eval(tmp_path, "init", str(docs), "--corpus", str(docs))
    assert same.returncode == 2 and f"holds the workspace {docs}" in same.stderr
    hidden = rag_eval(tmp_path, "init", str(docs / ".rag-eval"), "--corpus", str(docs))
    assert hidden.returncode == 0, hidden.stderr  # the corpus never looks into hidden folders

    # a workspace beside the documents, then rag-eval.yaml pointed at the folder that holds both
    assert rag_eval(tmp_path, "init", str(site / "eval"), "--corpus", str(docs)).returncode == 0
    workspace = site / "eval"
    settings = workspace / "rag-eval.yaml"
    settings.write_text('corpus: ".."\nglob: null\n', encoding="utf-8")
    run = rag_eval(workspace, "run")
    assert run.returncode == 2, run.stderr
    assert (
        f"error: {settings}: corpus: the corpus folder {site} holds the workspace {workspace}" in run.stderr
    )
    assert "evaluation " not in run.stdout and "Traceback" not in run.stderr
    assert not (workspace / "data" / "warehouse").exists()
    # the corpus asset (the UI, the document sensor's runs) refuses it the same way
    with instance_for_tests() as instance:
        result = dg.materialize(
            [corpus_asset],
            instance=instance,
            resources=tiny_resources(workspace, tmp_path / "work"),
            raise_on_error=False,
        )
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert f"the corpus folder {site} holds the workspace {workspace}" in str(failure.step_failure_data.error)


@pytest.mark.parametrize(("glob", "problem"), [("/etc/*.conf", "is absolute"), ("../*.md", "climbs out")])
def test_a_glob_that_leaves_the_corpus_folder_exits_2_naming_the_file_and_key(
    tiny_project: Path, tmp_path: Path, glob: str, problem: str
):
    settings = tiny_project / "rag-eval.yaml"
    settings.write_text(f'corpus: data/corpus\nglob: "{glob}"\n', encoding="utf-8")
    run = rag_eval(tiny_project, "run", *ONE_PAIR)
    assert run.returncode == 2, run.stderr
    assert f"error: {settings}: glob {glob!r} {problem}" in run.stderr
    assert "the glob is relative to the corpus folder" in run.stderr
    assert "Traceback" not in run.stderr and "NotImplementedError" not in run.stderr

    init = rag_eval(
        tmp_path,
        "init",
        str(tmp_path / "ws"),
        "--corpus",
        str(tiny_project / "data" / "corpus"),
        "--glob",
        glob,
    )
    assert init.returncode == 2, init.stderr
    assert f"the glob {glob!r} {problem}" in init.stderr and "Traceback" not in init.stderr
    assert not (tmp_path / "ws").exists()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "  - {name: fixed-lines, chunker: fixed, chunk_size: 50, separators: ['\\n']}\n",
            "separators is used by the recursive and semantic chunkers only, so it would change nothing "
            "for fixed; remove separators",
        ),
        (
            "  - {name: token-lines, chunker: token, chunk_size: 50, separators: ['\\n']}\n",
            "separators is used by the recursive and semantic chunkers only, so it would change nothing "
            "for token",
        ),
        (
            "  - {name: recursive-pct, chunker: recursive, chunk_size: 50, breakpoint_percentile: 80}\n",
            "breakpoint_percentile is used by the semantic chunker only, so it would change nothing for "
            "recursive; remove breakpoint_percentile",
        ),
    ],
    ids=["separators-fixed", "separators-token", "percentile-recursive"],
)
def test_a_setting_the_chunker_ignores_is_refused_naming_file_config_and_field(
    tiny_project: Path, entry: str, message: str
):
    configs = tiny_project / CHUNK_CONFIGS
    configs.write_text(configs.read_text(encoding="utf-8") + entry, encoding="utf-8")
    name = entry.split("name: ")[1].split(",")[0]
    run = rag_eval(tiny_project, "run", *ONE_PAIR)
    assert run.returncode == 2, run.stderr
    assert f"error: {configs}: chunk_configs[2]: chunk config '{name}': {message}" in run.stderr
    assert "evaluation " not in run.stdout and "Traceback" not in run.stderr


def test_links_that_lead_to_no_document_are_listed_with_their_reasons(tiny_project: Path, tmp_path: Path):
    corpus = tiny_project / "data" / "corpus"
    (corpus / "a.md").symlink_to("b.md")
    (corpus / "b.md").symlink_to("a.md")
    (corpus / "self").symlink_to(".")
    (corpus / "gone.md").symlink_to("missing.md")
    listed = (
        "skipped 4 symbolic links that lead to no document: a.md (a loop of symbolic links), b.md (a loop "
        "of symbolic links), gone.md (a broken link: its target missing.md does not exist), self (a link "
        "to a folder that holds it: a loop); fix or remove them"
    )

    init = rag_eval(tmp_path, "init", str(tmp_path / "ws"), "--corpus", str(corpus))
    assert init.returncode == 0, init.stderr
    assert f"workspace {tmp_path / 'ws'}: 3 documents" in init.stdout and listed in init.stdout

    with instance_for_tests() as instance:
        result = dg.materialize(
            [corpus_asset], instance=instance, resources=tiny_resources(tiny_project, tmp_path / "work")
        )
        warnings = [
            e.user_message
            for e in instance.all_logs(result.run_id)
            if e.level == logging.WARNING and "corpus" in (e.step_key or "")
        ]
        metadata = latest_metadata(instance, "corpus")
    assert listed in warnings
    assert metadata["n_skipped_links"] == 4 and metadata["n_documents"] == 3
