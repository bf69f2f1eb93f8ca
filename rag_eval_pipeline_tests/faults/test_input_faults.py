"""Bad input is refused before it does harm, and large input is announced before it costs hours:
config names that are not one path component, a corpus link that leads out of the corpus folder,
settings of the wrong type, a 20 MB document. Driven through `rag-eval` subprocesses on the tiny
project, and `dg.materialize` of the corpus asset."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import dagster as dg
import pytest

from rag_eval_pipeline.defs.ingestion.assets import corpus as corpus_asset
from rag_eval_pipeline_tests.conftest import latest_metadata, tiny_resources
from rag_eval_pipeline_tests.faults.entry_points import rag_eval
from rag_eval_pipeline_tests.instances import instance_for_tests

pytestmark = pytest.mark.slow

ONE_PAIR = ("--chunk-configs", "fixed-60-0", "--profiles", "top2")
CHUNK_CONFIGS = Path("data/chunk_configs.yaml")


def tree(folder: Path) -> dict[str, str]:
    """Every file and folder under ``folder`` with its content hash: what must not move or change."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(folder.rglob("*"))
    }


@pytest.mark.parametrize("name", [".", ".."])
def test_dot_names_are_refused_naming_file_and_entry_and_nothing_under_data_moves(
    tiny_project: Path, tmp_path: Path, name: str
):
    # the other configs' BM25 indexes, which `.` used to replace and `..` to move with data/ itself
    for config in ("fixed-60-0", "recursive-120-20"):
        index = tiny_project / "data" / "bm25" / config
        index.mkdir(parents=True)
        (index / "manifest.json").write_text(f'{{"fingerprint": "{config}"}}', encoding="utf-8")
    entry = f"  - {{name: '{name}', chunker: fixed, chunk_size: 50}}\n"
    configs = tiny_project / CHUNK_CONFIGS
    configs.write_text(configs.read_text(encoding="utf-8") + entry, encoding="utf-8")
    before = tree(tiny_project / "data")

    run = rag_eval(tiny_project, "run", "--chunk-configs", name, "--profiles", "top2")
    assert run.returncode == 2, run.stderr
    assert (
        f"{configs}: chunk_configs[2]: chunk config '{name}': the name must start with a letter" in run.stderr
    )
    assert "rename it" in run.stderr and "Traceback" not in run.stderr

    # the same entry merged in by `rag-eval chunk-configs apply` is refused the same way
    merged = tmp_path / "more.yaml"
    merged.write_text(f"chunk_configs:\n{entry}", encoding="utf-8")
    apply = rag_eval(tiny_project, "chunk-configs", "apply", str(merged))
    assert apply.returncode == 2, apply.stderr
    assert f"{merged}: chunk_configs[0]: chunk config '{name}': the name must start with" in apply.stderr
    assert tree(tiny_project / "data") == before


def test_a_corpus_link_leading_outside_is_refused_and_its_content_reaches_nothing(
    tiny_project: Path, tmp_path: Path
):
    secret = tmp_path / "outside" / "notes.md"
    secret.parent.mkdir()
    marker = "PRIVATE-NOTE-3f9c1a"
    secret.write_text(f"# Notes\n\n{marker}: not for the corpus.\n", encoding="utf-8")
    link = tiny_project / "data" / "corpus" / "x.md"
    link.symlink_to(secret)

    run = rag_eval(tiny_project, "run", *ONE_PAIR)
    assert run.returncode == 2, run.stderr
    assert f"{link} is a symbolic link to {secret}, which leads outside the corpus folder" in run.stderr
    assert "remove the link" in run.stderr

    # the corpus asset (materialized from the UI or by the document sensor's runs) refuses it too
    work = tmp_path / "work"
    with instance_for_tests() as instance:
        result = dg.materialize(
            [corpus_asset],
            instance=instance,
            resources=tiny_resources(tiny_project, work),
            raise_on_error=False,
        )
        assert not result.success
        (failure,) = [e for e in result.all_events if e.is_step_failure]
        assert f"{link} is a symbolic link" in str(failure.step_failure_data.error)

    for folder in (tiny_project, work):
        for path in folder.rglob("*"):
            if path.is_file() and not path.is_symlink():
                assert marker.encode() not in path.read_bytes(), path


@pytest.mark.parametrize(
    ("file", "edit", "args", "message"),
    [
        (
            CHUNK_CONFIGS,
            "max_chunk_configs: lots\n{text}",
            ONE_PAIR,
            "max_chunk_configs must be an integer, got 'lots'",
        ),
        (
            CHUNK_CONFIGS,
            "max_chunk_configs: null\n{text}",
            ONE_PAIR,
            "max_chunk_configs must be an integer, got null",
        ),
        (
            CHUNK_CONFIGS,
            "{text}    separators: 'abc'\n",  # under the last entry, recursive-120-20
            ONE_PAIR,
            "chunk_configs[1].separators must be a list of strings, got 'abc'",
        ),
        (
            Path("data/retrieval_profiles.yaml"),
            "{text}    rrf_k: sixty\n",
            ONE_PAIR,
            "profiles[1].rrf_k must be a number, got 'sixty'",
        ),
        (
            Path("data/monitoring.yaml"),
            "quick:\n  sample_size: [5]\n",
            (*ONE_PAIR, "--mode", "quick"),
            "quick.sample_size must be an integer, got [5]",
        ),
        (
            Path("data/monitoring.yaml"),  # the leaderboard's objective: checked before any run
            "leaderboard:\n  context_budget_tokens: -1\n",
            ONE_PAIR,
            "leaderboard.context_budget_tokens must be one of 500, 1000, 2000 (tokens) or null",
        ),
        (
            Path("data/answer_evaluation.yaml"),  # read by answer_calibration, in the ingestion run
            "judge:\n  pass_score: high\n",
            ONE_PAIR,
            "judge.pass_score must be a number, got 'high'",
        ),
    ],
    ids=[
        "max-lots",
        "max-null",
        "separators-string",
        "profiles",
        "monitoring",
        "leaderboard-objective",
        "answer-evaluation",
    ],
)
def test_a_wrong_type_exits_2_naming_the_file_and_key(
    tiny_project: Path, file: Path, edit: str, args: tuple[str, ...], message: str
):
    path = tiny_project / file
    path.write_text(
        edit.format(text=path.read_text(encoding="utf-8") if path.exists() else ""), encoding="utf-8"
    )
    run = rag_eval(tiny_project, "run", *args)
    assert run.returncode == 2, run.stderr
    assert f"{path}: {message}" in run.stderr  # before any run (error: ...) or as the run's failure
    assert "TypeError" not in run.stderr


def test_a_large_document_is_announced_with_its_size_and_estimate_before_any_embedding(tiny_project: Path):
    big = tiny_project / "data" / "corpus" / "big.md"
    big.write_text(
        "# Pump log\n\n" + "Pump P-7 ran at 1,450 rpm during the night shift. " * 400_000, encoding="utf-8"
    )
    # a generation.yaml of the wrong type stops the run right after the corpus step (synthetic_questions
    # reads it first), so nothing is embedded; it is also the settings-type case for that file
    generation = tiny_project / "data" / "generation.yaml"
    generation.write_text("token_level:\n  n_questions: many\n", encoding="utf-8")

    run = rag_eval(tiny_project, "run", *ONE_PAIR)
    size_mb = big.stat().st_size / 1e6
    assert size_mb > 19
    warnings = [line for line in run.stderr.splitlines() if line.startswith("warning: ")]
    (document,) = [w for w in warnings if w.startswith("warning: large document ")]
    assert (
        f"warning: large document big.md in {tiny_project / 'data' / 'corpus'}: {size_mb:.1f} MB" in document
    )
    assert "chunks, ~" in document and " min to embed (fixed-60-0)" in document
    (corpus,) = [w for w in warnings if w.startswith("warning: the corpus ")]
    assert f"(4 documents, {size_mb:.1f} MB) takes ~" in corpus and "fixed-60-0: about " in corpus
    # the bad generation.yaml: said before the runs (no estimate of its stage) and as the failure
    assert f"no estimate for synthetic_questions, its settings cannot be read: {generation}" in run.stderr
    assert run.returncode == 2, run.stderr
    assert (
        f"{generation}: token_level.n_questions must be an integer or one of auto, got 'many'" in run.stderr
    )
    assert not (tiny_project / "data" / "cache" / "embeddings.sqlite").exists()  # nothing was embedded


def test_the_corpus_asset_logs_the_warning_and_records_the_estimate(tiny_project: Path, tmp_path: Path):
    big = tiny_project / "data" / "corpus" / "beta" / "handbook.md"
    big.write_text("# Manual\n\n" + "Valve V-12 feeds the cooling loop. " * 40_000, encoding="utf-8")
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
    assert any(
        w.startswith("large document beta/handbook.md in ") and ": 1.4 MB (over 1.0 MB)" in w
        for w in warnings
    )
    assert metadata["n_large_documents"] == 1
    assert metadata["estimated_chunks"] > 1_400_000 / 120  # at least the larger chunk config's chunks
    assert metadata["estimated_embedding_minutes"] > 0


@pytest.mark.parametrize("name", [".", "..", "a/../.."])
def test_every_folder_built_from_a_name_stays_under_its_parent(tmp_path: Path, name: str):
    """The second line of defence, for a name that reaches the path builders without the config loader
    (a partition added by an older version, a caller of the core): refused, nothing created. A
    partition folder is `chunk_config=<name>`, one harmless component for `.` and `..`; with a `/` in
    the name it is refused too."""
    from rag_eval_pipeline.core.errors import ConfigError
    from rag_eval_pipeline.core.project.project_files import ProjectFiles
    from rag_eval_pipeline.core.store.warehouse import Warehouse
    from rag_eval_pipeline.core.vector_store.qdrant import QdrantVectorStore
    from rag_eval_pipeline.lib.io_managers import WarehouseResource

    warehouse = tmp_path / "warehouse"
    w = Warehouse(warehouse)
    builders = [
        lambda: ProjectFiles(tmp_path).keyword_index_folder(name),
        lambda: QdrantVectorStore(path=tmp_path / "qdrant").collection_exists(name),
    ]
    if "/" in name:
        builders += [
            lambda: w.history_path("chunks", {"chunk_config": name}, "run-1"),
            lambda: WarehouseResource(base_dir=str(warehouse)).write_dataset(
                None,  # type: ignore[arg-type]  # refused before anything is written
                "chunk_level_questions",
                {"chunk_config": name},
                "run-1",
            ),
        ]
    else:
        path = w.history_path("chunks", {"chunk_config": name}, "run-1")
        assert path.parent == w.history_table_dir("chunks") / f"chunk_config={name}"
    for build in builders:
        with pytest.raises(ConfigError, match="one path component"):
            build()
    assert not any(tmp_path.rglob("*"))
