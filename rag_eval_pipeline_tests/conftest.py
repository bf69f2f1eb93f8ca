from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    import dagster as dg

# No wall-clock limit on a property test's examples: the machine is shared (a loaded CI ran the Pareto
# property 274 ms on one example against Hypothesis' default deadline of 200 ms). Speed is measured in
# benchmarks/, never asserted in a test.
settings.register_profile("rag_eval", deadline=None)
settings.load_profile("rag_eval")


# The files whose tests took longest together (a full run on 2 workers, December 2026: from 1,170 s for
# faults/test_run_faults.py down to about 120 s), longest first: `rag-eval run`s, `dagster dev` servers,
# SmolLM2 and the benchmark smokes. Only their place in the run depends on this list (a file that got
# faster merely starts early); a renamed one is renamed here too, or collection stops.
LONGEST_FILES = (
    "faults/test_run_faults.py",
    "cli/test_runs.py",
    "api/test_http_api.py",
    "faults/test_workspace_faults.py",
    "core/llm/test_local_smollm.py",
    "defs/test_automation.py",
    "cli/test_cli.py",
    "faults/test_board_faults.py",
    "test_ui_backfill_benchmark.py",
    "runner/test_launch.py",
    "faults/test_full_disk_resume.py",
    "cli/test_search.py",
    "cli/test_workspace.py",
    "faults/test_staleness_faults.py",
    "defs/ingestion/test_document_sensor.py",
    "test_end_to_end_benchmark.py",
    "test_distributed.py",
    "test_scale_out_benchmark.py",
)


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as Python handles it by default, whichever shell started the suite. A shell that starts it
    in the background (`make test &`, `nohup`) ignores SIGINT in it and its workers; Dagster's in-process
    execution then points SIGTERM at that, leaving SIGTERM ignored in the worker and in every process a
    later test starts from it (a `dagster dev`, a run's process, a test's child stop no longer)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (`make test`): one worker more than the cores this process may use (``--maxprocesses``
    still caps it). A fifth of the suite's time is tests waiting on the processes and servers they start
    (`dagster dev` coming up, runs queued and launched, Dask workers); a third worker fills those waits:
    on 2 cores 14 min 16 s -> 12 min 54 s, the same tests passing. PYTEST_XDIST_AUTO_NUM_WORKERS, when set,
    is xdist's to read."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    # the affinity mask where the OS has one (Linux), else every core (macOS has no sched_getaffinity)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores + 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first, then the other files with a test marked ``slow``, then the rest, each
    file's tests in their own order. `make test` hands out whole files in this order (``--dist loadfile
    --no-loadscope-reorder``): the long end-to-end files start early and the many fast files fill in at
    the end, so no worker is left alone with a benchmark smoke while the others are done (xdist's own
    order, most tests first, put the one-test files of the benchmarks last)."""
    tests = Path(__file__).parent
    missing = [name for name in LONGEST_FILES if not (tests / name).is_file()]
    assert not missing, f"conftest.py LONGEST_FILES names files that do not exist: {missing}"
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}

    def rank(item: pytest.Item) -> int:
        name = item.path.relative_to(tests).as_posix() if item.path.is_relative_to(tests) else ""
        if name in LONGEST_FILES:
            return LONGEST_FILES.index(name)
        return len(LONGEST_FILES) + (item.path not in slow_files)

    items.sort(key=rank)  # stable: each file's tests stay together, in order


REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _working_directory_kept() -> Iterator[None]:
    """Each test ends in the directory it started in: an in-process `rag-eval` (``main()``) changes to its
    workspace, and a test that forgot ``monkeypatch.chdir`` would leave the next tests of its worker
    there (relative paths, ``python -m`` of the tests' package)."""
    started = os.getcwd()
    yield
    os.chdir(started)


TINY_DOCS = {
    "alpha/pumps.md": (
        "# Pumps\n\nThe main pump runs at 1,450 rpm and is serviced every 90 days.\n\n"
        "## Alarms\n\nA pressure alarm fires when the outlet pressure exceeds 7.5 bar for ten seconds.\n"
    ),
    "alpha/valves.md": (
        "# Valves\n\nEvery relief valve is tested in March. The test takes two technicians.\n\n"
        "Valve V-12 feeds the cooling loop; it was replaced in 2021 after corrosion.\n"
    ),
    "beta/staff.md": (
        "# Staff\n\nZoë Mbeki leads the night shift. Night shift starts at 22:00 and ends at 06:00.\n\n"
        "- Day shift lead: Tomasz Wiśniewski\n- Maintenance lead: Amélie Durand\n"
    ),
}

TINY_QUESTIONS = [
    ("tiny-1", "How fast does the main pump run?", [("alpha/pumps.md", "The main pump runs at 1,450 rpm")]),
    (
        "tiny-2",
        "When does the pressure alarm fire?",
        [
            (
                "alpha/pumps.md",
                "A pressure alarm fires when the outlet pressure exceeds 7.5 bar for ten seconds.",
            )
        ],
    ),
    (
        "tiny-3",
        "Who leads the night shift and when does it start?",
        [("beta/staff.md", "Zoë Mbeki leads the night shift. Night shift starts at 22:00")],
    ),
    (
        "tiny-4",
        "Which valve feeds the cooling loop, and who leads maintenance?",
        [
            ("alpha/valves.md", "Valve V-12 feeds the cooling loop"),
            ("beta/staff.md", "Maintenance lead: Amélie Durand"),
        ],
    ),
]

# Reference answers and the keywords a correct answer must contain.
TINY_ANSWERS = {
    "tiny-1": ("The main pump runs at 1,450 rpm.", ["1,450 rpm"]),
    "tiny-2": ("It fires when the outlet pressure stays above 7.5 bar for ten seconds.", ["7.5 bar"]),
    "tiny-3": ("Zoë Mbeki leads the night shift, which starts at 22:00.", ["Mbeki", "22:00"]),
    "tiny-4": ("Valve V-12 feeds the cooling loop, and Amélie Durand leads maintenance.", ["V-12", "Durand"]),
}

# Human labels: (question id, answer, correct).
TINY_LABELS = [
    ("tiny-1", "The main pump turns at 1,450 revolutions per minute.", 1),
    ("tiny-1", "It runs at 1,450 rpm.", 1),
    ("tiny-1", "The main pump runs at 900 rpm.", 0),
    ("tiny-1", "I don't know.", 0),
    ("tiny-2", "When outlet pressure is above 7.5 bar for ten seconds.", 1),
    ("tiny-2", "The alarm fires when the outlet pressure exceeds 7.5 bar for ten seconds.", 1),
    ("tiny-2", "The alarm fires every 90 days.", 0),
    ("tiny-3", "Zoë Mbeki leads it; the night shift begins at 22:00.", 1),
    ("tiny-3", "Tomasz Wiśniewski leads the night shift.", 0),
    ("tiny-3", "The context does not say.", 0),
    ("tiny-4", "V-12 feeds the cooling loop; maintenance is led by Amélie Durand.", 1),
    ("tiny-4", "Valve V-7 feeds the cooling loop and Zoë Mbeki leads maintenance.", 0),
]

TINY_CHUNK_CONFIGS = """\
chunk_configs:
  - name: fixed-60-0
    chunker: fixed
    chunk_size: 60
  - name: recursive-120-20
    chunker: recursive
    chunk_size: 120
    chunk_overlap: 20
"""

TINY_PROFILES = """\
profiles:
  - name: top2
    top_k: 2
  - name: top4
    top_k: 4
"""


def write_tiny_project(root: Path) -> Path:
    """A small project folder laid out like the real one: data/corpus, config files, golden dataset."""
    corpus = root / "data" / "corpus"
    for rel, text in TINY_DOCS.items():
        path = corpus / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "data" / "chunk_configs.yaml").write_text(TINY_CHUNK_CONFIGS, encoding="utf-8")
    (root / "data" / "retrieval_profiles.yaml").write_text(TINY_PROFILES, encoding="utf-8")
    lines = []
    for qid, query, excerpts in TINY_QUESTIONS:
        spans = []
        for doc_id, excerpt in excerpts:
            start = TINY_DOCS[doc_id].index(excerpt)
            spans.append({"doc_id": doc_id, "start": start, "end": start + len(excerpt), "text": excerpt})
        lines.append(
            json.dumps(
                {
                    "inputs": {"query": query},
                    "outputs": {
                        "relevant_spans": spans,
                        "reference_answer": TINY_ANSWERS[qid][0],
                        "expected_keywords": TINY_ANSWERS[qid][1],
                    },
                    "metadata": {"question_id": qid},
                },
                ensure_ascii=False,
            )
        )
    dataset = root / "data" / "datasets" / "golden_token_level.jsonl"
    dataset.parent.mkdir(parents=True, exist_ok=True)
    dataset.write_text("\n".join(lines) + "\n", encoding="utf-8")
    labels = [
        json.dumps({"question_id": q, "answer": a, "correct": c}, ensure_ascii=False)
        for q, a, c in TINY_LABELS
    ]
    (dataset.parent / "golden_answer_labels.jsonl").write_text("\n".join(labels) + "\n", encoding="utf-8")
    shutil.copy(REPO / "dagster.yaml", root / "dagster.yaml")
    return root


@pytest.fixture
def tiny_project(tmp_path: Path) -> Path:
    return write_tiny_project(tmp_path / "project")


def tiny_resources(project: Path, work: Path) -> dict[str, object]:
    """Resources that keep every file of a test run under tmp: inputs, cache, Qdrant, warehouse."""
    from rag_eval_pipeline.lib.evaluation_runs import EvaluationModeResource
    from rag_eval_pipeline.lib.io_managers import ParquetIOManagerFactory, WarehouseResource
    from rag_eval_pipeline.lib.resources import (
        EmbedderResource,
        LangSmithResource,
        LLMResource,
        ProjectResource,
        QdrantResource,
    )

    return {
        "project": ProjectResource(root=str(project)),
        "embedder": EmbedderResource(cache_path=str(work / "cache" / "embeddings.sqlite")),
        "qdrant": QdrantResource(local_path=str(work / "qdrant")),
        "io_manager": ParquetIOManagerFactory(base_dir=str(work / "warehouse")),
        "warehouse": WarehouseResource(base_dir=str(work / "warehouse")),
        "llm": LLMResource(cache_path=str(work / "cache" / "llm_responses.sqlite")),
        "langsmith": LangSmithResource(),
        "evaluation": EvaluationModeResource(),
    }


@dataclass(frozen=True)
class TinyRun:
    """The tiny project after one in-process evaluation: its files (``project``), the caches, Qdrant and
    warehouse of ``tiny_resources`` (``work``) and the Dagster instance's folder (``home``)."""

    project: Path
    work: Path
    home: Path

    def resources(self) -> dict[str, object]:
        return tiny_resources(self.project, self.work)

    @contextmanager
    def instance(self) -> Iterator[dg.DagsterInstance]:
        """The instance the evaluation ran on (its runs, events and partitions), opened as
        the tests open theirs (``instances.instance_for_tests``)."""
        from rag_eval_pipeline_tests.instances import instance_for_tests

        with instance_for_tests(temp_dir=str(self.home)) as instance:
            yield instance


def _evaluate_tiny(
    root: Path, chunk_configs: Sequence[str] | None, profiles: Sequence[str] | None
) -> TinyRun:
    from rag_eval_pipeline_tests.evaluations import evaluate_board

    run = TinyRun(write_tiny_project(root / "project"), root / "work", root / "home")
    run.home.mkdir()
    with run.instance() as instance:
        board, failures = evaluate_board(instance, chunk_configs, profiles, False, run.resources())
    assert failures == [] and board is not None
    return run


TinyRunFactory = Callable[..., TinyRun]


@pytest.fixture(scope="session")
def _evaluated_tiny(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., TinyRun]:
    built: dict[tuple[tuple[str, ...] | None, tuple[str, ...] | None], TinyRun] = {}

    def get(chunk_configs: Sequence[str] | None, profiles: Sequence[str] | None) -> TinyRun:
        key = (tuple(chunk_configs) if chunk_configs else None, tuple(profiles) if profiles else None)
        if key not in built:
            built[key] = _evaluate_tiny(tmp_path_factory.mktemp("tiny_run"), chunk_configs, profiles)
        return built[key]

    return get


@pytest.fixture
def tiny_run(_evaluated_tiny: Callable[..., TinyRun], tmp_path: Path) -> TinyRunFactory:
    """``tiny_run(chunk_configs=None, profiles=None)``: a copy (in this test's tmp_path, to change at will)
    of the tiny project evaluated (`evaluate`, the users' path) with that selection (every partition by default),
    with no failure. Each selection is evaluated once per test process (an xdist worker) and copied:
    tests that start from an evaluated project pay for a copy, not for an evaluation."""

    def copy(chunk_configs: Sequence[str] | None = None, profiles: Sequence[str] | None = None) -> TinyRun:
        built = _evaluated_tiny(chunk_configs, profiles)
        root = Path(shutil.copytree(built.project.parent, tmp_path / "tiny_run", symlinks=True))
        return TinyRun(root / "project", root / "work", root / "home")

    return copy


@dataclass(frozen=True)
class CliRun:
    """The tiny project after a `rag-eval run` subprocess on its own instance (everything under the project
    folder: .dagster, warehouse, Qdrant, caches), and what that run printed and returned."""

    project: Path
    ran: subprocess.CompletedProcess[str]


CliRunFactory = Callable[..., CliRun]


@pytest.fixture(scope="session")
def _cli_runs(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., CliRun]:
    from rag_eval_pipeline_tests.faults.entry_points import rag_eval

    built: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...]], CliRun] = {}

    def get(args: Sequence[str], files: Mapping[str, str]) -> CliRun:
        key = (tuple(args), tuple(sorted(files.items())))
        if key not in built:
            project = write_tiny_project(tmp_path_factory.mktemp("cli_run") / "project")
            for name, text in files.items():
                (project / name).write_text(text, encoding="utf-8")
            built[key] = CliRun(project, rag_eval(project, "run", *args))
        return built[key]

    return get


@pytest.fixture
def cli_run(_cli_runs: Callable[..., CliRun], tmp_path: Path) -> CliRunFactory:
    """``cli_run(*args, files={})``: a copy (in this test's tmp_path, to change at will) of the tiny project
    with ``files`` (path in the project: text) written, after `rag-eval run ARGS` as a user runs it (a
    subprocess, the project's own instance), with what that run printed and returned. Each (args, files)
    runs once per test process (an xdist worker) and is copied: a test whose starting state is a
    `rag-eval run` pays for a copy, and tests that check a first run can still share it."""

    def copy(*args: str, files: Mapping[str, str] | None = None) -> CliRun:
        built = _cli_runs(args, files or {})
        project = Path(shutil.copytree(built.project, tmp_path / "cli_run" / "project", symlinks=True))
        return CliRun(project, built.ran)

    return copy


@pytest.fixture(scope="session")
def onnx_dir() -> Path:
    """MiniLM's ONNX export as `make setup` installs it (core/embedding/onnx_export.py), made here when it
    is missing: the install is idempotent and atomic, so parallel workers are safe."""
    from rag_eval_pipeline.core.embedding.onnx_export import install

    return install().onnx_file.parent


@pytest.fixture(scope="session")
def minilm() -> object:
    """The real MiniLM embedder as the pipeline runs it (core/embedding/local.py: the ONNX export when
    installed), loaded once per test session."""
    from rag_eval_pipeline.core.embedding.local import local_embedder

    return local_embedder()


def tiny_corpus() -> object:
    from rag_eval_pipeline.core.corpus.corpus import Corpus
    from rag_eval_pipeline.core.types import Document, DocumentId

    return Corpus(tuple(Document(DocumentId(k), v, k.split("/")[0]) for k, v in TINY_DOCS.items()))


def latest_metadata(instance: object, asset: str, partition: str | None = None) -> dict:
    """The metadata values of an asset's (partition's) latest materialization on ``instance``."""
    import dagster as dg

    assert isinstance(instance, dg.DagsterInstance)
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None
        ),
        limit=1,
    ).records
    assert records and records[0].asset_materialization is not None
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}
