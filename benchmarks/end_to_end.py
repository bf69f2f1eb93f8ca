"""Benchmark: where a `rag-eval run` spends its CPU, against the embedding it cannot avoid (issues 16, 34).

Every run is a real `python -m rag_eval_pipeline --workspace DIR run` in a child process, in a scratch
workspace under /tmp (a copy of the repository's data/ settings and corpus, with its own warehouse,
caches, Qdrant folder and Dagster instance; the repository's own are never touched). Sections:

- scenarios (issue 16), in sequence on one workspace, ``--repeats`` times:
  1. cold: empty caches and warehouse
  2. warm: nothing changed, run again
  3. edited: one sentence appended to one corpus document
  4. profile: one retrieval profile appended to data/retrieval_profiles.yaml
- axis (issue 34): the corpus at ``--sizes`` times the demo's (default 1, 4, 16; --quick 1, 2), cold then
  warm, with one chunk config x 2 profiles (recursive-400-50 x dense-top5, hybrid-top5, the --quick
  selection; another --data's first config x first two profiles). Copy k of each document lives under
  copy-kk/ with " [copy k]" before every sentence's end (and at the end of every other line outside code
  fences), so every chunk text is new to the embedding cache; the row says how many chunk texts are distinct.
- corpus: ``--corpus FOLDER`` (its .md and .txt files) cold then warm, with --data's settings (all chunk
  configs x profiles, or the axis selection with ``--corpus-grid axis``), questions synthesised from it
  (``evaluate_on: synthetic``: the golden set is about the demo's documents).
- overhead: one evaluation partition's assets called directly (Dagster's direct invocation, inputs read
  from the warehouse, outputs written to it) against one ``evaluation_job`` run of it, interleaved, warm.

How the figures are measured: a run's CPU is its child process's user + system time (the getrusage
RUSAGE_CHILDREN difference around it: interpreter, imports, model load, the runs). The child wraps the
embedder the project's resource makes (``EmbedderResource.model()``: every text the model embeds, i.e.
every embedding-cache miss) and the vector store's ``replace_collection``, and counts the Dagster runs
and events it added. The pure embedding CPU of a run is a fresh child process that makes the same
embedder (``default_resources()["embedder"].model()``), embeds one text (the model load) then all the
run's texts in one call: load + embedding CPU, without importing the project's Dagster layer, which it
reports apart. The model load figure is that process's load (import of the embedding library, load,
one text), median over every such process.

    python benchmarks/end_to_end.py [--repeats N] [--overhead-repeats N] [--sizes 1,4,16] [--quick]
        [--corpus FOLDER [--corpus-grid full|axis]] [--sections scenarios,axis,...] [--json FILE] [--keep]
        [--data DIR]

``--data DIR`` takes the settings, corpus and datasets from another folder laid out like data/ (the
tests' smoke run uses a tiny one); the edited document is then its first one unless it has the demo's.
The last line printed is ``summary json: {...}``, every figure (``--json FILE`` writes it to a file too).
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import json
import logging
import os
import platform
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = ("cold", "warm", "edited", "profile")
SECTIONS = ("scenarios", "axis", "corpus", "overhead")
# Settings and inputs copied from the repository's data/ (never its warehouse, caches or indexes).
COPIED = (
    "chunk_configs.yaml",
    "retrieval_profiles.yaml",
    "generation.yaml",
    "answer_evaluation.yaml",
    "monitoring.yaml",
    "profile_versions.json",
    "corpus",
    "datasets",
)
# What could point a run at other storage, a server or a paid API: removed from the child's environment.
ISOLATED_ENV = ("DAGSTER_HOME", "QDRANT_URL", "QDRANT_API_KEY", "OPENAI_API_KEY", "LANGSMITH_API_KEY")
QUICK_CHUNK_CONFIGS = ("recursive-400-50",)
QUICK_PROFILES = ("dense-top5", "hybrid-top5")
DEFAULT_SIZES = (1, 4, 16)
QUICK_SIZES = (1, 2)
ADDED_PROFILE = "bench-added-top3"
APPENDED_SENTENCE = "This closing sentence was appended by the end-to-end benchmark to edit one document."
EDITED_DOCUMENT = "architecture/ingestion_gateway.md"
EMBEDDING_CACHE = "data/cache/embeddings.sqlite"
PROBE_TEXT = "How long are events kept in the partitioned log?"
REAL_DOCUMENT_SUFFIXES = (".md", ".txt")


@dataclass(frozen=True)
class Goal:
    """A target of issue 34: ``value <= limit`` (``at_most``) or ``value >= limit``."""

    text: str
    limit: float
    at_most: bool = True

    def verdict(self, value: float | None) -> str:
        if value is None:
            return "n/a"
        return "PASS" if (value <= self.limit if self.at_most else value >= self.limit) else "MISS"

    def describe(self, value: float | None, why_not: str = "") -> str:
        if value is None:
            return f"({self.text}: n/a{', ' + why_not if why_not else ''})"
        return f"({self.text}: {self.verdict(value)})"


GOALS = {
    "cold_vs_embedding_demo": Goal("goal at the demo size, full grid: <= 1.6x", 1.6),
    "cold_vs_embedding_16x": Goal("goal at 16x: <= 1.15x", 1.15),
    "cold_vs_warm": Goal("goal >= 20x", 20.0, at_most=False),
    "overhead": Goal("goal <= +0.5 CPU s a partition run", 0.5),
    "model_load": Goal("goal <= 1 CPU s", 1.0),
}
EDIT_GOAL = "goal: only the edited document's changed chunks"
PROFILE_GOAL = "goal: no chunk embedded, 0 vectors uploaded"


def children_cpu() -> float:
    """User + system CPU seconds of this process's finished (waited for) children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# ---------------------------------------------------------------------------------------------------
# the children: one `rag-eval run`, instrumented; one pure embedding


class CountingEmbedder:
    """The embedder a run's resource makes, counting every text that reaches the model (each is an
    embedding-cache miss: the resource wraps it in its CachedEmbedder) and the model's time."""

    def __init__(self, inner: Any, counts: dict[str, Any]) -> None:
        self.inner = inner
        self.counts = counts

    @property
    def model_id(self) -> str:
        return str(self.inner.model_id)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def __getattr__(self, name: str) -> Any:  # anything else the pipeline asks of the embedder
        return getattr(self.inner, name)

    def embed(self, texts: Sequence[str]) -> Any:
        if not texts:
            return self.inner.embed(texts)
        if isinstance(getattr(type(self.inner), "model", None), property):
            loading = time.perf_counter()
            _ = self.inner.model  # loaded once per process: timed apart from the embedding
            self.counts["model_load_seconds"] += time.perf_counter() - loading
        start = time.perf_counter()
        vectors = self.inner.embed(texts)
        self.counts["embed_seconds"] += time.perf_counter() - start
        self.counts["embed_calls"] += 1
        self.counts["texts"].extend(texts)
        return vectors


def child_run(workspace: Path, report: Path, cli_args: Sequence[str]) -> int:
    """`rag-eval --workspace WORKSPACE run ARGS` in this process, with counting wrappers; writes the
    counts to ``report`` (JSON)."""
    started = time.perf_counter()
    from rag_eval_pipeline.cli import main
    from rag_eval_pipeline.core.vector_store.edge import EdgeVectorStore  # the default engine
    from rag_eval_pipeline.lib.resources import EmbedderResource
    from rag_eval_pipeline.runner.instance import project_instance

    counts: dict[str, Any] = {
        "texts": [],
        "embed_calls": 0,
        "embed_seconds": 0.0,
        "model_load_seconds": 0.0,
        "vectors_uploaded": 0,
        "collections_replaced": 0,
        "upload_seconds": 0.0,
    }
    make_model, replace = EmbedderResource.model, EdgeVectorStore.replace_collection

    def counting_model(self: EmbedderResource) -> Any:
        return CountingEmbedder(make_model(self), counts)

    def counting_replace(self: EdgeVectorStore, name: str, chunks: Sequence[Any], *args: Any) -> int:
        start = time.perf_counter()
        written = replace(self, name, chunks, *args)
        counts["upload_seconds"] += time.perf_counter() - start
        counts["vectors_uploaded"] += written  # points actually written (an update writes only changes)
        counts["collections_replaced"] += 1
        return written

    EmbedderResource.model = counting_model  # type: ignore[method-assign]
    EdgeVectorStore.replace_collection = counting_replace  # type: ignore[method-assign]
    os.chdir(workspace)
    with project_instance(workspace) as instance:
        before = {r.run_id for r in instance.get_runs()}
    imported = time.perf_counter()
    exit_code = main(["--workspace", str(workspace), "run", *cli_args])
    finished = time.perf_counter()
    with project_instance(workspace) as instance:
        new_runs = [r for r in instance.get_runs() if r.run_id not in before]
        counts["runs"] = len(new_runs)
        counts["runs_by_job"] = dict(Counter(r.job_name for r in new_runs))
        counts["events"] = sum(len(instance.all_logs(r.run_id)) for r in new_runs)
    counts.update(
        exit_code=exit_code,
        import_seconds=imported - started,
        run_seconds=finished - imported,
    )
    report.write_text(json.dumps(counts), encoding="utf-8")
    return exit_code


def child_embed(workspace: Path, texts_file: Path, report: Path) -> int:
    """The pure embedding: the embedder a run of ``workspace`` makes (its default resources), one text
    embedded (the model load), then each list of texts of ``texts_file`` in one call; CPU seconds of
    each part."""
    started = time.process_time()
    os.chdir(workspace)
    from rag_eval_pipeline.lib.resources import default_resources

    resource_module_imported = time.process_time()
    preloaded = sorted(m for m in ("torch", "transformers", "onnxruntime") if m in sys.modules)
    lists = json.loads(texts_file.read_text(encoding="utf-8"))
    embedder = default_resources()["embedder"].model()  # type: ignore[attr-defined]
    embedder.embed([PROBE_TEXT])
    loaded = time.process_time()
    embed_cpu = []
    for texts in lists:
        start = time.process_time()
        if texts:
            embedder.embed(list(texts))
        embed_cpu.append(time.process_time() - start)
    facts = {
        "package_import_cpu": resource_module_imported - started,
        "load_cpu": loaded - resource_module_imported,
        "embed_cpu": embed_cpu,
        "texts": [len(texts) for texts in lists],
        "model_id": embedder.model_id,
        "embedder": type(embedder).__name__,
        "imported_by_the_package": preloaded,
    }
    report.write_text(json.dumps(facts), encoding="utf-8")
    return 0


# ---------------------------------------------------------------------------------------------------
# the workspace and the scenarios


def make_workspace(target: Path, source_data: Path = REPO / "data") -> Path:
    """A workspace at ``target`` (rag-eval.yaml and dagster.yaml as `rag-eval init` writes them) holding
    a copy of the settings, corpus and datasets of ``source_data`` (the repository's data/)."""
    from rag_eval_pipeline.core.project.workspace import init_workspace

    data = target / "data"
    data.mkdir(parents=True)
    shutil.copytree(source_data / "corpus", data / "corpus")
    init_workspace(target / "init", data / "corpus")
    for name in ("rag-eval.yaml", "dagster.yaml", ".gitignore"):
        shutil.move(target / "init" / name, target / name)
    (target / "rag-eval.yaml").write_text('corpus: "data/corpus"\nglob: null\n', encoding="utf-8")
    shutil.rmtree(target / "init")
    for name in COPIED:
        source = source_data / name
        if name == "corpus" or not source.exists():
            continue
        if source.is_dir():
            shutil.copytree(source, data / name)
        else:
            shutil.copy2(source, data / name)
    return target


def document_to_edit(corpus: Path) -> str:
    """The demo's EDITED_DOCUMENT, or the first document of another corpus."""
    if (corpus / EDITED_DOCUMENT).is_file():
        return EDITED_DOCUMENT
    return min(p.relative_to(corpus).as_posix() for p in corpus.rglob("*") if p.is_file())


def edit_document(workspace: Path, doc_id: str) -> str:
    path = workspace / "data" / "corpus" / doc_id
    text = path.read_text(encoding="utf-8")
    path.write_text(text.rstrip("\n") + " " + APPENDED_SENTENCE + "\n", encoding="utf-8")
    return doc_id


def add_profile(workspace: Path) -> str:
    """Appends a dense top-3 profile to the profiles file, indented as its last entry."""
    path = workspace / "data" / "retrieval_profiles.yaml"
    text = path.read_text(encoding="utf-8")
    indent = re.findall(r"^( *)- name:", text, flags=re.MULTILINE)[-1]
    entry = (
        f"{indent}- name: {ADDED_PROFILE}\n{indent}  top_k: 3\n"
        f"{indent}  description: Dense MiniLM retrieval, three chunks (added by benchmarks/end_to_end.py)\n"
    )
    path.write_text(text.rstrip("\n") + "\n" + entry, encoding="utf-8")
    return ADDED_PROFILE


def cached_digests(workspace: Path) -> set[str]:
    path = workspace / EMBEDDING_CACHE
    if not path.exists():
        return set()
    with sqlite3.connect(path) as db:
        return {row[0] for row in db.execute("SELECT text_sha256 FROM embeddings")}


def vary_text(text: str, copy: int) -> str:
    """The document as copy ``copy`` of the size axis: " [copy k]" before every sentence's end (and at
    the end of every other non-empty line; code fence lines stay as they are), so each chunk is a new
    text for the embedding cache while the documents keep their length and shape."""
    tag = f" [copy {copy}]"
    lines = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if not body.strip() or body.lstrip().startswith(("```", "~~~")):
            lines.append(line)
            continue
        tagged = SENTENCE_END.sub(lambda m: tag + m.group(1), body)
        lines.append((tagged if tagged != body else body + tag) + line[len(body) :])
    return "".join(lines)


SENTENCE_END = re.compile(r"(?<=\w)([.!?])(?=\s|$)")


def scale_corpus(corpus: Path, size: int) -> int:
    """Adds copies 2..``size`` of every document of ``corpus`` under copy-kk/ (vary_text); returns the
    number of documents."""
    originals = sorted(p for p in corpus.rglob("*") if p.is_file())
    for copy in range(2, size + 1):
        for source in originals:
            target = corpus / f"copy-{copy:02d}" / source.relative_to(corpus)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(vary_text(source.read_text(encoding="utf-8"), copy), encoding="utf-8")
    return len(originals) * size


def use_real_documents(workspace: Path, folder: Path) -> int:
    """The workspace's corpus becomes the .md and .txt files of ``folder`` (paths kept), and its questions
    are synthesised from them: the golden set is about the demo's documents. Returns the document count."""
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.suffix.lower() in REAL_DOCUMENT_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    if not files:
        raise SystemExit(
            f"--corpus {folder}: no .md or .txt file in it (hidden folders skipped); pass a folder of documents"
        )
    corpus = workspace / "data" / "corpus"
    shutil.rmtree(corpus)
    for source in files:
        target = corpus / source.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    generation = workspace / "data" / "generation.yaml"
    text = generation.read_text(encoding="utf-8") if generation.exists() else ""
    text, replaced = re.subn(r"^evaluate_on:.*$", "evaluate_on: synthetic", text, flags=re.MULTILINE)
    generation.write_text(text if replaced else text + "\nevaluate_on: synthetic\n", encoding="utf-8")
    return len(files)


def child_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("RAG_EVAL_") and k not in ISOLATED_ENV}


@dataclass
class ScenarioRun:
    name: str
    wall_seconds: float
    cpu_seconds: float
    counts: dict[str, Any]
    pure: PureEmbedding | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def texts(self) -> list[str]:
        return list(self.counts["texts"])

    @property
    def pure_cpu(self) -> float:
        """Load + embedding CPU of a fresh process embedding this run's texts (0 when it embedded none)."""
        return self.pure.cpu if self.pure is not None else 0.0


def run_child(command: list[str], title: str, log: Path, cwd: Path | None = None) -> tuple[float, float]:
    """Runs ``command``, its output appended to ``log``; returns its wall and CPU seconds."""
    cpu_before = children_cpu()
    start = time.perf_counter()
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n=== {title}: {' '.join(command)}\n")
        out.flush()
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=child_environment(), cwd=cwd)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu_before
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8").splitlines()[-30:]
        raise SystemExit(f"{title} failed (exit {done.returncode}); log {log}:\n" + "\n".join(tail))
    return wall, cpu


def run_scenario(name: str, workspace: Path, cli_args: Sequence[str], log: Path) -> ScenarioRun:
    report = workspace.parent / f"{workspace.name}-{name}.json"
    script = str(Path(__file__).resolve())
    command = [sys.executable, script, "--child-run", str(workspace), str(report), *cli_args]
    wall, cpu = run_child(command, f"{workspace.name} {name}", log)
    return ScenarioRun(name, wall, cpu, json.loads(report.read_text(encoding="utf-8")))


# ---------------------------------------------------------------------------------------------------
# pure embedding in a fresh process


@dataclass(frozen=True)
class PureEmbedding:
    """A fresh process that made the project's embedder and embedded one text, then a run's texts (one
    process can embed several runs' texts, one call each: each counts the load)."""

    process: str  # which child process: its model load is one sample
    texts: int
    load_cpu: float  # the embedding library's import, the model load, one text
    embed_cpu: float  # the texts, in one call
    package_import_cpu: float  # importing the project's resources module first (not counted)
    process_cpu: float  # the whole child process
    embedder: str
    imported_by_the_package: tuple[str, ...]

    @property
    def cpu(self) -> float:
        return self.load_cpu + self.embed_cpu


def pure_embeddings(
    workspace: Path, lists: Sequence[Sequence[str]], log: Path, title: str
) -> list[PureEmbedding]:
    """One fresh process embedding each list of texts in one call, after the model load."""
    stem = workspace.parent / f"{workspace.name}-{title.replace(' ', '-')}"
    texts_file, report = stem.with_suffix(".texts.json"), stem.with_suffix(".pure.json")
    texts_file.write_text(json.dumps([list(texts) for texts in lists]), encoding="utf-8")
    script = str(Path(__file__).resolve())
    command = [sys.executable, script, "--child-embed", str(workspace), str(texts_file), str(report)]
    _, cpu = run_child(command, f"{workspace.name} pure embedding of {title}", log)
    facts = json.loads(report.read_text(encoding="utf-8"))
    return [
        PureEmbedding(
            str(report),
            count,
            facts["load_cpu"],
            embed_cpu,
            facts["package_import_cpu"],
            cpu,
            facts["embedder"],
            tuple(facts["imported_by_the_package"]),
        )
        for count, embed_cpu in zip(facts["texts"], facts["embed_cpu"], strict=True)
    ]


# ---------------------------------------------------------------------------------------------------
# what the scenarios changed


def chunk_digests(workspace: Path, chunk_configs: Sequence[str], doc_id: str | None = None) -> list[str]:
    """sha256 of every chunk text the warehouse holds for these configs (of one document if given)."""
    from rag_eval_pipeline.core.store.warehouse import Warehouse
    from rag_eval_pipeline.core.types import sha256_hex

    warehouse = Warehouse(workspace / "data" / "warehouse")
    digests = []
    for name in chunk_configs:
        frame = warehouse.read_current("chunks", {"chunk_config": name})
        if frame is None:
            continue
        if doc_id is not None:
            frame = frame[frame["doc_id"] == doc_id]
        digests += [sha256_hex(str(t)) for t in frame["text"]]
    return digests


def analyse_edit(
    run: ScenarioRun, workspace: Path, configs: Sequence[str], doc_id: str, before: set[str]
) -> None:
    from rag_eval_pipeline.core.types import sha256_hex

    embedded = {sha256_hex(t) for t in run.texts}
    doc = chunk_digests(workspace, configs, doc_id)
    every_chunk = set(chunk_digests(workspace, configs))
    changed = {d for d in doc if d not in before}
    run.notes.update(
        doc_chunks=len(doc),
        doc_changed=len(changed),
        doc_embedded=len(embedded & set(doc)),
        other_chunks_embedded=len((embedded & every_chunk) - set(doc)),
        non_chunks_embedded=len(embedded - every_chunk),
    )


def analyse_profile(run: ScenarioRun, workspace: Path, configs: Sequence[str]) -> None:
    from rag_eval_pipeline.core.types import sha256_hex

    every_chunk = set(chunk_digests(workspace, configs))
    run.notes["chunks_embedded"] = len({sha256_hex(t) for t in run.texts} & every_chunk)


# ---------------------------------------------------------------------------------------------------
# Dagster overhead of one evaluation partition


# evaluation_job's assets (lib/stages.JOB_ASSETS), each called directly in the same order
EVALUATION_ASSETS = (
    "retrieval_results",
    "retrieval_metrics",
    "answers",
    "answer_metrics",
    "retrieval_diagnostics",
)
SHARED_INPUTS = ("corpus", "eval_questions", "answer_calibration")  # unpartitioned
CONFIG_INPUTS = ("chunks", "chunk_index")  # per chunk config


@dataclass
class Overhead:
    direct: list[float] = field(default_factory=list)  # wall seconds
    dagster: list[float] = field(default_factory=list)
    direct_cpu: list[float] = field(default_factory=list)  # this process's CPU seconds (every thread)
    dagster_cpu: list[float] = field(default_factory=list)
    events: list[int] = field(default_factory=list)
    event_types: Counter[str] = field(default_factory=Counter)


def measure_overhead(workspace: Path, chunk_config: str, profile: str, repeats: int) -> Overhead:
    """Interleaved: the evaluation assets called directly, then one evaluation_job run, ``repeats``
    times; the caches are warm (the scenarios ran before)."""
    for key in [k for k in os.environ if k.startswith("RAG_EVAL_") or k in ISOLATED_ENV]:
        del os.environ[key]
    os.environ["RAG_EVAL_PROJECT_DIR"] = str(workspace)
    os.chdir(workspace)
    import dagster as dg

    from rag_eval_pipeline.definitions import build_definitions
    from rag_eval_pipeline.lib.evaluation_runs import evaluation_run_config
    from rag_eval_pipeline.lib.stages import JOB_ASSETS
    from rag_eval_pipeline.runner.in_process import QUIET_LOGS, execute_in_process
    from rag_eval_pipeline.runner.instance import project_instance

    job_assets = tuple(JOB_ASSETS["evaluation_job"])
    if sorted(job_assets) != sorted(EVALUATION_ASSETS):  # the direct calls must do the job's work
        raise SystemExit(
            f"evaluation_job runs {job_assets}; update EVALUATION_ASSETS and call_assets_directly"
        )
    defs = build_definitions()
    job = defs.resolve_job_def("evaluation_job")  # run as `rag-eval run` runs it: execute_in_process
    resources = defs.resources
    key = dg.MultiPartitionKey({"chunk_config": chunk_config, "profile": profile})
    result = Overhead()
    with project_instance(workspace) as instance:
        # One untimed round first: the first call of either pays this process's first imports.
        call_assets_directly(resources, key, "bench-direct-warm-up")
        execute_in_process(
            job,
            instance=instance,
            partition_key=key,
            run_config={**QUIET_LOGS, **evaluation_run_config("full", None)},
            raise_on_error=False,
        )
        for i in range(repeats):
            start, cpu = time.perf_counter(), time.process_time()
            call_assets_directly(resources, key, f"bench-direct-{i}")
            result.direct.append(time.perf_counter() - start)
            result.direct_cpu.append(time.process_time() - cpu)
            start, cpu = time.perf_counter(), time.process_time()
            outcome = execute_in_process(
                job,
                instance=instance,
                partition_key=key,
                run_config={**QUIET_LOGS, **evaluation_run_config("full", None)},
                raise_on_error=False,
            )
            result.dagster.append(time.perf_counter() - start)
            result.dagster_cpu.append(time.process_time() - cpu)
            if not outcome.success:
                raise SystemExit(f"evaluation_job run {outcome.run_id} failed")
            logs = instance.all_logs(outcome.run_id)
            result.events.append(len(logs))
            if i == 0:
                result.event_types.update(
                    e.dagster_event.event_type_value if e.dagster_event else "log message" for e in logs
                )
    return result


@dataclass
class DirectRun:
    """The run a direct call stands for: its id, and the tags its steps add to it."""

    run_id: str
    tags: dict[str, str] = field(default_factory=dict)


@dataclass
class RunTags:
    """What the steps use of the Dagster instance: ``add_run_tags`` (the run record, lib/run_record.py),
    kept on the direct run as the instance keeps them on a run."""

    run: DirectRun

    def add_run_tags(self, run_id: str, new_tags: dict[str, str]) -> None:
        assert run_id == self.run.run_id, (run_id, self.run.run_id)
        self.run.tags.update(new_tags)


@dataclass
class StepContext:
    """What the evaluation assets and checks use of their context (partition key, run, instance, log),
    without a run: Dagster's direct invocation has no run (``context.run`` raises), so the bodies are
    called."""

    partition_key: Any
    run: DirectRun
    instance: RunTags
    log: logging.Logger
    asset_key: Any = None  # the step's, set before each call (its announcements name it)
    has_partition_key: bool = True
    selected_asset_keys: Any = frozenset()  # the step's assets and checks, all of them run
    selected_asset_check_keys: Any = frozenset()


def call_assets_directly(resources: dict[str, Any], key: Any, run_id: str) -> None:
    """The bodies of the five evaluation assets (the two metrics assets with their regression checks),
    called as plain functions (no run, no event log, no IO manager): inputs read from the warehouse as
    the IO manager reads them, outputs written as it writes them."""
    import dagster as dg

    from rag_eval_pipeline.core.store.warehouse import Warehouse
    from rag_eval_pipeline.defs.answers import assets as answer_assets
    from rag_eval_pipeline.defs.evaluation import assets as evaluation_assets
    from rag_eval_pipeline.defs.evaluation import diagnostics as evaluation_diagnostics

    steps = [
        evaluation_assets.retrieval_results,
        evaluation_assets.retrieval_metrics,
        answer_assets.answers,
        answer_assets.answer_metrics,
        evaluation_diagnostics.retrieval_diagnostics,
    ]
    warehouse = Warehouse(Path(resources["io_manager"].base_dir))
    partition = dict(key.keys_by_dimension)
    values: dict[str, Any] = {name: warehouse.read_current(name) for name in SHARED_INPUTS}
    for name in CONFIG_INPUTS:
        values[name] = warehouse.read_current(name, {"chunk_config": partition["chunk_config"]})
    run = DirectRun(run_id)
    context = StepContext(key, run, RunTags(run), logging.getLogger("end_to_end"))
    for step in steps:
        context.asset_key = step.key
        context.selected_asset_keys, context.selected_asset_check_keys = step.keys, step.check_keys
        body = step.node_def.compute_fn.decorated_fn
        parameters = list(inspect.signature(body).parameters)[1:]  # after the context
        called = body(context, **{p: values[p] if p in values else resources[p] for p in parameters})
        # a metrics asset yields its table, stored before its check runs, then the check's result
        for result in called if inspect.isgenerator(called) else [called]:
            if isinstance(result, dg.Output | dg.MaterializeResult):
                name = step.key.to_user_string()
                values[name] = result.value
                warehouse.write_table(result.value, name, partition, run_id)


# ---------------------------------------------------------------------------------------------------
# the corpus-size axis and the real documents: cold then warm


@dataclass
class ColdWarm:
    """A corpus at one size (or a real-documents folder): its cold and warm runs, medians of repeats."""

    label: str
    documents: int
    cold: list[ScenarioRun]
    warm: list[ScenarioRun]

    def med(self, runs: list[ScenarioRun], value: Callable[[ScenarioRun], float]) -> float:
        return median([value(r) for r in runs])

    @property
    def cold_cpu(self) -> float:
        return self.med(self.cold, lambda r: r.cpu_seconds)

    @property
    def warm_cpu(self) -> float:
        return self.med(self.warm, lambda r: r.cpu_seconds)

    @property
    def pure_cpu(self) -> float:
        return self.med(self.cold, lambda r: r.pure_cpu)

    @property
    def cold_vs_pure(self) -> float | None:
        return self.cold_cpu / self.pure_cpu if self.pure_cpu else None

    @property
    def cold_vs_warm(self) -> float | None:
        return self.cold_cpu / self.warm_cpu if self.warm_cpu else None

    def facts(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "documents": self.documents,
            "chunks": self.cold[-1].notes.get("chunks"),
            "distinct_chunks": self.cold[-1].notes.get("distinct_chunks"),
            "texts_embedded": self.med(self.cold, lambda r: len(r.texts)),
            "cold_cpu_s": round(self.cold_cpu, 2),
            "cold_wall_s": round(self.med(self.cold, lambda r: r.wall_seconds), 2),
            "pure_cpu_s": round(self.pure_cpu, 2),
            "pure_load_cpu_s": round(self.med(self.cold, lambda r: r.pure.load_cpu if r.pure else 0.0), 2),
            "cold_vs_pure": rounded(self.cold_vs_pure),
            "warm_cpu_s": round(self.warm_cpu, 2),
            "warm_wall_s": round(self.med(self.warm, lambda r: r.wall_seconds), 2),
            "cold_vs_warm": rounded(self.cold_vs_warm),
            "repeats": len(self.cold),
        }


def record_chunks(run: ScenarioRun, workspace: Path, configs: Sequence[str]) -> None:
    """How many chunks the cold run cut, and how many distinct texts they are (the axis's copies must
    all be new texts for the embedding cache)."""
    digests = chunk_digests(workspace, configs)
    run.notes.update(chunks=len(digests), distinct_chunks=len(set(digests)))


def cold_then_warm(
    label: str, workspace: Path, cli_args: Sequence[str], configs: Sequence[str], log: Path
) -> tuple[ScenarioRun, ScenarioRun]:
    cold = run_scenario("cold", workspace, cli_args, log)
    [cold.pure] = pure_embeddings(workspace, [cold.texts], log, "cold")
    record_chunks(cold, workspace, configs)
    warm = run_scenario("warm", workspace, cli_args, log)
    print(f"{label:<8}" + scenario_line(cold), flush=True)
    print(f"{label:<8}" + scenario_line(warm), flush=True)
    return cold, warm


AXIS_HEADER = (
    f"{'size':>6}{'docs':>7}{'chunks':>8}{'distinct':>9}{'texts':>7}{'cold CPU s':>11}{'wall s':>8}"
    f"{'pure CPU s':>11}{'cold/pure':>10}{'warm CPU s':>11}{'cold/warm':>10}   goals"
)


def axis_row(row: ColdWarm, size: int | None) -> str:
    f = row.facts()
    pure_goal = (
        f"cold/pure {GOALS['cold_vs_embedding_16x'].verdict(row.cold_vs_pure)} (<= 1.15x at 16x)"
        if size == 16
        else "cold/pure -"
    )
    return (
        f"{row.label:>6}{f['documents']:7,d}{f['chunks'] or 0:8,d}{f['distinct_chunks'] or 0:9,d}"
        f"{f['texts_embedded']:7,.0f}{row.cold_cpu:11.1f}{f['cold_wall_s']:8.1f}{row.pure_cpu:11.1f}"
        f"{ratio_text(row.cold_vs_pure):>10}{row.warm_cpu:11.1f}{ratio_text(row.cold_vs_warm):>10}   "
        f"{pure_goal}; cold/warm {GOALS['cold_vs_warm'].verdict(row.cold_vs_warm)} (>= 20x)"
    )


# ---------------------------------------------------------------------------------------------------
# printing


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


def rounded(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def ratio_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def machine_facts() -> str:
    return (
        f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.platform()}, "
        f"{dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}"
    )


def scenario_line(run: ScenarioRun) -> str:
    c = run.counts
    return (
        f"{run.name:<8} wall {run.wall_seconds:7.1f} s (in process {c['run_seconds']:6.1f} s, imports "
        f"{c['import_seconds']:4.1f} s, model load {c['model_load_seconds']:4.1f} s), CPU "
        f"{run.cpu_seconds:7.1f} s | {c['runs']:3d} runs, {c['events']:5,d} events | {len(c['texts']):5,d} "
        f"texts embedded in {c['embed_calls']:3d} calls, model {c['embed_seconds']:6.1f} s; pure embedding "
        f"{run.pure_cpu:6.1f} CPU s | {c['vectors_uploaded']:5,d} vectors uploaded in "
        f"{c['upload_seconds']:5.1f} s"
    )


@dataclass
class Results:
    """Every figure of one invocation, for the printed goals and the JSON summary."""

    data: str
    scenario_selection: tuple[list[str], list[str]]
    demo_full_grid: bool
    runs: dict[str, list[ScenarioRun]] = field(default_factory=dict)
    edited: str = ""
    axis_selection: tuple[list[str], list[str]] = ([], [])
    axis: dict[int, ColdWarm] = field(default_factory=dict)
    corpus: ColdWarm | None = None
    corpus_folder: str = ""
    overhead: Overhead | None = None
    probes: list[PureEmbedding] = field(default_factory=list)

    def pure_runs(self) -> list[PureEmbedding]:
        """One per fresh embedding process (its model load is one sample)."""
        every = [r for runs in self.runs.values() for r in runs]
        every += [r for row in self.axis.values() for r in row.cold]
        every += self.corpus.cold if self.corpus else []
        by_process = {r.pure.process: r.pure for r in every if r.pure is not None}
        by_process.update((p.process, p) for p in self.probes)
        return list(by_process.values())

    def scenario(self, name: str, value: Callable[[ScenarioRun], float]) -> float:
        return median([value(r) for r in self.runs.get(name, [])])

    def goals(self) -> dict[str, tuple[float | None, str]]:
        """Each goal's value and, when it has none, why."""
        found: dict[str, tuple[float | None, str]] = {}
        if self.runs:
            cold, pure = (
                self.scenario("cold", lambda r: r.cpu_seconds),
                self.scenario("cold", lambda r: r.pure_cpu),
            )
            warm = self.scenario("warm", lambda r: r.cpu_seconds)
            found["cold_vs_embedding_demo"] = (
                (cold / pure if pure else None, "")
                if self.demo_full_grid
                else (None, "the scenarios did not run the full demo grid")
            )
            found["cold_vs_warm"] = (cold / warm if warm else None, "")
        else:
            found["cold_vs_embedding_demo"] = (None, "the scenarios did not run")
            found["cold_vs_warm"] = (None, "the scenarios did not run")
        found["cold_vs_embedding_16x"] = (
            (self.axis[16].cold_vs_pure, "") if 16 in self.axis else (None, "size 16 not measured")
        )
        o = self.overhead
        found["overhead"] = (
            (median(o.dagster_cpu) - median(o.direct_cpu), "") if o else (None, "not measured")
        )
        loads = [p.load_cpu for p in self.pure_runs()]
        found["model_load"] = (median(loads), "") if loads else (None, "no process embedded")
        return found

    def as_json(self) -> dict[str, Any]:
        scenarios = {
            name: {
                "wall_s": round(self.scenario(name, lambda r: r.wall_seconds), 2),
                "cpu_s": round(self.scenario(name, lambda r: r.cpu_seconds), 2),
                "pure_cpu_s": round(self.scenario(name, lambda r: r.pure_cpu), 2),
                "texts_embedded": self.scenario(name, lambda r: len(r.texts)),
                "runs": self.scenario(name, lambda r: r.counts["runs"]),
                "events": self.scenario(name, lambda r: r.counts["events"]),
                "vectors_uploaded": self.scenario(name, lambda r: r.counts["vectors_uploaded"]),
                "repeats": len(runs),
            }
            for name, runs in self.runs.items()
            if runs
        }
        pures = self.pure_runs()
        o = self.overhead
        return {
            "benchmark": "end_to_end",
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": {
                "cores": os.cpu_count(),
                "python": platform.python_version(),
                "platform": platform.platform(),
            },
            "data": self.data,
            "scenario_selection": {
                "chunk_configs": self.scenario_selection[0],
                "profiles": self.scenario_selection[1],
                "demo_full_grid": self.demo_full_grid,
            },
            "scenarios": scenarios,
            "axis_selection": {"chunk_configs": self.axis_selection[0], "profiles": self.axis_selection[1]},
            "axis": {f"{size}x": row.facts() for size, row in self.axis.items()},
            "corpus": {"folder": self.corpus_folder, **self.corpus.facts()} if self.corpus else None,
            "overhead": None
            if o is None
            else {
                "direct_cpu_s": [round(s, 3) for s in o.direct_cpu],
                "dagster_cpu_s": [round(s, 3) for s in o.dagster_cpu],
                "direct_wall_s": [round(s, 3) for s in o.direct],
                "dagster_wall_s": [round(s, 3) for s in o.dagster],
                "over_direct_cpu_s": round(median(o.dagster_cpu) - median(o.direct_cpu), 3),
                "over_direct_wall_s": round(median(o.dagster) - median(o.direct), 3),
                "events_a_run": median([float(n) for n in o.events]),
            },
            "model_load": {
                "load_cpu_s": [round(p.load_cpu, 3) for p in pures],
                "median_load_cpu_s": rounded(median([p.load_cpu for p in pures]), 3) if pures else None,
                "package_import_cpu_s": rounded(median([p.package_import_cpu for p in pures]), 3)
                if pures
                else None,
                "embedder": pures[0].embedder if pures else None,
                "imported_by_the_package": list(pures[0].imported_by_the_package) if pures else None,
            },
            "goals": {
                key: {
                    "goal": GOALS[key].text,
                    "value": rounded(value, 3),
                    "verdict": GOALS[key].verdict(value),
                    **({"why_not": why} if why else {}),
                }
                for key, (value, why) in self.goals().items()
            },
        }


def summary(results: Results, repeats: int) -> None:
    runs = results.runs

    def med(name: str, value: Callable[[ScenarioRun], float]) -> float:
        return results.scenario(name, value)

    print(f"\nSummary: medians of {repeats} repeat(s)")
    header = (
        f"{'scenario':<9}{'wall s':>8}{'CPU s':>8}{'in-proc s':>10}{'runs':>6}{'events':>8}{'texts':>7}"
        f"{'calls':>6}{'model s':>9}{'pure CPU s':>11}{'CPU/pure':>9}{'uploaded':>9}"
    )
    print(header)
    print("-" * len(header))
    for name in SCENARIOS:
        cpu, pure = med(name, lambda r: r.cpu_seconds), med(name, lambda r: r.pure_cpu)
        print(
            f"{name:<9}{med(name, lambda r: r.wall_seconds):8.1f}{cpu:8.1f}"
            f"{med(name, lambda r: r.counts['run_seconds']):10.1f}"
            f"{med(name, lambda r: r.counts['runs']):6.0f}{med(name, lambda r: r.counts['events']):8,.0f}"
            f"{med(name, lambda r: len(r.texts)):7,.0f}{med(name, lambda r: r.counts['embed_calls']):6.0f}"
            f"{med(name, lambda r: r.counts['embed_seconds']):9.1f}{pure:11.1f}"
            + (f"{cpu / pure:8.2f}x" if pure else f"{'-':>9}")
            + f"{med(name, lambda r: r.counts['vectors_uploaded']):9,.0f}"
        )
    goals = results.goals()
    cold_cpu, cold_pure = med("cold", lambda r: r.cpu_seconds), med("cold", lambda r: r.pure_cpu)
    cold_wall, warm_wall = med("cold", lambda r: r.wall_seconds), med("warm", lambda r: r.wall_seconds)
    print("\nRatios against the goals of issues 16 and 34")
    print(
        f"cold / pure embedding     {ratio_text(cold_cpu / cold_pure if cold_pure else None):>7} CPU "
        f"({cold_cpu:.1f} / {cold_pure:.1f} CPU s) "
        + GOALS["cold_vs_embedding_demo"].describe(*goals["cold_vs_embedding_demo"])
    )
    print(
        f"cold / warm               {ratio_text(goals['cold_vs_warm'][0]):>7} CPU, "
        f"{ratio_text(cold_wall / warm_wall if warm_wall else None)} wall "
        + GOALS["cold_vs_warm"].describe(goals["cold_vs_warm"][0])
    )
    e = runs["edited"][-1].notes
    print(
        f"edited document           {med('edited', lambda r: len(r.texts)):,.0f} texts embedded: "
        f"{e['doc_embedded']} chunks of {results.edited} ({e['doc_chunks']} chunks over the chunk configs, "
        f"{e['doc_changed']} of them new texts), {e['other_chunks_embedded']} chunks of other documents, "
        f"{e['non_chunks_embedded']} texts that are not chunks ({EDIT_GOAL})"
    )
    p = runs["profile"][-1].notes
    print(
        f"profile added             {med('profile', lambda r: len(r.texts)):,.0f} texts embedded "
        f"({p['chunks_embedded']} of them chunks), "
        f"{med('profile', lambda r: r.counts['vectors_uploaded']):,.0f} vectors uploaded, "
        f"{med('profile', lambda r: r.counts['runs']):.0f} runs ({PROFILE_GOAL})"
    )


def print_overhead(overhead: Overhead) -> None:
    direct, dagster = median(overhead.direct), median(overhead.dagster)
    direct_cpu, dagster_cpu = median(overhead.direct_cpu), median(overhead.dagster_cpu)
    events = median([float(n) for n in overhead.events])
    print(
        f"\nDagster overhead of one evaluation partition (medians of {len(overhead.direct)}, interleaved, "
        f"warm caches, after one untimed round)"
    )
    print(
        f"direct asset calls        {direct:6.2f} s  (runs: {', '.join(f'{s:.2f}' for s in overhead.direct)}); "
        f"CPU {direct_cpu:.2f} s (runs: {', '.join(f'{s:.2f}' for s in overhead.direct_cpu)})"
    )
    over = dagster_cpu - direct_cpu
    print(
        f"evaluation_job run        {dagster:6.2f} s  (runs: {', '.join(f'{s:.2f}' for s in overhead.dagster)}); "
        f"CPU {dagster_cpu:.2f} s (runs: {', '.join(f'{s:.2f}' for s in overhead.dagster_cpu)}); "
        f"{dagster / direct:.1f}x direct, +{dagster - direct:.2f} s a run wall, {over:+.2f} CPU s a run "
        + GOALS["overhead"].describe(over)
    )
    top = ", ".join(f"{name} {n}" for name, n in overhead.event_types.most_common(6))
    print(f"events written            {events:.0f} a run ({top}, ...)")


def print_model_load(results: Results) -> None:
    pures = results.pure_runs()
    if not pures:
        return
    loads = [p.load_cpu for p in pures]
    value = median(loads)
    print(
        f"\nModel load in a fresh process (the project's default embedder, {pures[0].embedder}: importing "
        f"its library, loading, embedding one text), median of {len(loads)} processes"
    )
    print(
        f"model load                {value:6.2f} CPU s  (processes: {', '.join(f'{s:.2f}' for s in loads)}) "
        + GOALS["model_load"].describe(value)
    )
    preloaded = ", ".join(pures[0].imported_by_the_package) or "none of torch, transformers, onnxruntime"
    print(
        f"not counted               {median([p.package_import_cpu for p in pures]):6.2f} CPU s importing the "
        f"project's resources module (Dagster) first; it had imported: {preloaded}"
    )


def print_goals(results: Results) -> None:
    labels = {
        "cold_vs_embedding_demo": "cold CPU / pure embedding CPU, the demo (full grid)",
        "cold_vs_embedding_16x": "cold CPU / pure embedding CPU at 16x (axis selection)",
        "overhead": "Dagster per partition run over direct, CPU s",
        "model_load": "model load in a fresh process, CPU s",
        "cold_vs_warm": "cold CPU / warm CPU, the scenarios",
    }
    print("\nGoals (issue 34)")
    for key, (value, why) in results.goals().items():
        shown = "n/a" if value is None else (f"{value:.2f}x" if "vs" in key else f"{value:.2f}")
        print(
            f"{labels[key]:<56}{shown:>8}  {GOALS[key].text:<44}{GOALS[key].verdict(value)}"
            + (f" ({why})" if why else "")
        )


# ---------------------------------------------------------------------------------------------------


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        sizes = []
    if not sizes or any(size < 1 for size in sizes):
        raise argparse.ArgumentTypeError(
            f"--sizes {text!r}: give whole numbers >= 1 separated by commas, e.g. 1,4,16"
        )
    return sorted(set(sizes))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3, help="fresh workspaces, each through all scenarios")
    parser.add_argument(
        "--overhead-repeats", type=int, default=3, help="interleaved direct / Dagster runs of one partition"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"1 chunk config x 2 profiles ({QUICK_CHUNK_CONFIGS[0]}; {', '.join(QUICK_PROFILES)}; another "
        f"--data's first config x first two profiles) and sizes {','.join(map(str, QUICK_SIZES))}",
    )
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default=None,
        help=f"corpus sizes of the axis, in copies of the corpus (default {','.join(map(str, DEFAULT_SIZES))}; "
        f"--quick {','.join(map(str, QUICK_SIZES))})",
    )
    parser.add_argument(
        "--axis-repeats",
        type=int,
        default=1,
        help="fresh workspaces per size of the axis and for --corpus (medians)",
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        default=None,
        help="a folder of real documents (.md, .txt): cold then warm on it with --data's settings",
    )
    parser.add_argument(
        "--corpus-grid",
        choices=("full", "axis"),
        default="full",
        help="--corpus with every chunk config x profile of the settings (full), or the axis selection",
    )
    parser.add_argument(
        "--sections",
        default=None,
        help=f"which sections to run, comma-separated, of {', '.join(SECTIONS)} (default: all; corpus only "
        "with --corpus; overhead only with --overhead-repeats > 0)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON summary to this file")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder under /tmp")
    parser.add_argument(
        "--data",
        type=Path,
        default=REPO / "data",
        help="a folder laid out like data/ (settings files, corpus/, datasets/): default the bundled demo",
    )
    parser.add_argument(
        "--overhead-only",
        action="store_true",
        help="only the Dagster overhead of one partition, after one cold --quick run that fills the caches "
        "(the same as --sections overhead)",
    )
    args = parser.parse_args(argv)
    if args.sections is None:
        chosen = {"scenarios", "axis", "overhead"} | ({"corpus"} if args.corpus else set())
        if args.overhead_repeats <= 0:
            chosen.discard("overhead")
    else:
        chosen = {s.strip() for s in args.sections.split(",") if s.strip()}
        unknown = chosen - set(SECTIONS)
        if unknown:
            parser.error(
                f"--sections: unknown {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}"
            )
        if "corpus" in chosen and args.corpus is None:
            parser.error("--sections corpus needs --corpus FOLDER")
    if args.overhead_only:
        chosen = {"overhead"}
    if "overhead" in chosen and args.overhead_repeats <= 0:
        args.overhead_repeats = 1
    if args.corpus is not None and not args.corpus.is_dir():
        parser.error(f"--corpus {args.corpus}: not a folder; pass a folder of .md or .txt documents")
    args.sections = chosen
    if args.sizes is None:
        args.sizes = list(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    return args


def axis_names(configs: list[str], profiles: list[str]) -> tuple[list[str], list[str]]:
    """The axis's one chunk config x 2 profiles: the --quick ones when the settings have them, else the
    first config and the first two profiles."""
    chosen = [c for c in QUICK_CHUNK_CONFIGS if c in configs] or configs[:1]
    both = all(p in profiles for p in QUICK_PROFILES)
    return chosen, list(QUICK_PROFILES) if both else profiles[:2]


def selection_args(configs: Sequence[str], profiles: Sequence[str]) -> list[str]:
    return ["--chunk-configs", ",".join(configs), "--profiles", ",".join(profiles)]


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child-run"]:  # the rest are `rag-eval run` arguments, not ours
        return child_run(Path(argv[1]), Path(argv[2]), argv[3:])
    if argv[:1] == ["--child-embed"]:
        return child_embed(Path(argv[1]), Path(argv[2]), Path(argv[3]))
    args = parse_args(argv)
    data: Path = args.data.resolve()
    every_config, every_profile = all_names(data)
    axis_configs, axis_profiles = axis_names(every_config, every_profile)
    chunk_configs, profiles = (axis_configs, axis_profiles) if args.quick else (every_config, every_profile)
    edited = document_to_edit(data / "corpus")
    scratch = Path(tempfile.mkdtemp(prefix="rag-eval-end-to-end-", dir="/tmp"))
    log = scratch / "runs.log"
    documents = sum(1 for p in (data / "corpus").rglob("*") if p.is_file())
    is_demo = data == (REPO / "data").resolve()
    corpus = "the bundled demo" if is_demo else str(data)
    print(
        f"end-to-end benchmark: `rag-eval run` on {corpus} ({documents} documents, "
        f"{len(chunk_configs)} chunk config(s) x {len(profiles)} profile(s){', --quick' if args.quick else ''}), "
        + (f"{args.repeats} repeat(s); " if "scenarios" in args.sections else "")
        + f"sections: {', '.join(s for s in SECTIONS if s in args.sections)}"
    )
    print(machine_facts())
    print(f"scratch {scratch} (run output in {log.name})")
    results = Results(
        str(data),
        (list(chunk_configs), list(profiles)),
        demo_full_grid=is_demo and not args.quick,
        edited=edited,
        axis_selection=(axis_configs, axis_profiles),
    )
    overhead_site: tuple[Path, str, str] | None = None
    if "scenarios" in args.sections:
        results.runs = run_scenarios(args, data, scratch, log, chunk_configs, profiles, edited)
        overhead_site = scratch / f"workspace-{args.repeats}", chunk_configs[0], profiles[0]
        summary(results, args.repeats)
        if "overhead" in args.sections:  # before the axis: its largest sizes take longest
            results.overhead = measure_overhead(*overhead_site, args.overhead_repeats)
            print_overhead(results.overhead)
    if "axis" in args.sections:
        same = sorted(chunk_configs) == sorted(axis_configs) and sorted(profiles) == sorted(axis_profiles)
        print(
            f"\nCorpus-size axis: {', '.join(axis_configs)} x {', '.join(axis_profiles)}, sizes "
            f"{', '.join(f'{s}x' for s in args.sizes)} of {documents} documents (cold then warm in a fresh "
            f"workspace per size and repeat; CPU = the child process's user + system)"
        )
        for size in args.sizes:
            if size == 1 and same and results.runs:
                runs = results.runs
                results.axis[1] = ColdWarm("1x", documents, runs["cold"], runs["warm"])
                print(f"{'1x':<8}the scenarios' cold and warm runs (the same selection)")
                continue
            row = ColdWarm(f"{size}x", documents * size, [], [])
            for repeat in range(args.axis_repeats):
                workspace = make_workspace(scratch / f"axis-{size}x-{repeat + 1}", data)
                scale_corpus(workspace / "data" / "corpus", size)
                cold, warm = cold_then_warm(
                    f"{size}x", workspace, selection_args(axis_configs, axis_profiles), axis_configs, log
                )
                row.cold.append(cold)
                row.warm.append(warm)
                if overhead_site is None:
                    overhead_site = workspace, axis_configs[0], axis_profiles[0]
            results.axis[size] = row
        print(
            f"\nCorpus-size axis, medians of {args.axis_repeats} repeat(s) (1x: of the scenarios' when reused)"
        )
        print(AXIS_HEADER)
        print("-" * len(AXIS_HEADER))
        for size, row in results.axis.items():
            print(axis_row(row, size))
    if "corpus" in args.sections:
        folder = args.corpus.resolve()
        configs, names = (
            (axis_configs, axis_profiles) if args.corpus_grid == "axis" else (every_config, every_profile)
        )
        print(
            f"\nReal documents: {folder} ({len(configs)} chunk config(s) x {len(names)} profile(s), "
            f"questions synthesised: evaluate_on synthetic)"
        )
        row = None
        for repeat in range(args.axis_repeats):
            workspace = make_workspace(scratch / f"corpus-{repeat + 1}", data)
            count = use_real_documents(workspace, folder)
            row = row or ColdWarm("real", count, [], [])
            cold, warm = cold_then_warm("real", workspace, selection_args(configs, names), configs, log)
            row.cold.append(cold)
            row.warm.append(warm)
        results.corpus, results.corpus_folder = row, str(folder)
        print(AXIS_HEADER)
        print("-" * len(AXIS_HEADER))
        print(axis_row(row, None) if row else "")
    if "overhead" in args.sections and results.overhead is None:
        if overhead_site is None:
            workspace = make_workspace(scratch / "workspace", data)
            selection = selection_args(chunk_configs[:1], profiles[:1])
            print(scenario_line(run_scenario("cold", workspace, selection, log)), flush=True)
            overhead_site = workspace, chunk_configs[0], profiles[0]
        results.overhead = measure_overhead(*overhead_site, args.overhead_repeats)
        print_overhead(results.overhead)
    if not results.pure_runs():  # nothing embedded yet: one fresh process loads the model
        site = overhead_site[0] if overhead_site else make_workspace(scratch / "probe", data)
        results.probes += pure_embeddings(site, [[]], log, "probe")
    print_model_load(results)
    print_goals(results)
    facts = results.as_json()
    if args.json is not None:
        args.json.write_text(json.dumps(facts, indent=2) + "\n", encoding="utf-8")
        print(f"\nJSON summary written to {args.json}")
    print("\nsummary json: " + json.dumps(facts))
    if args.keep:
        print(f"\nkept {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def run_scenarios(
    args: argparse.Namespace,
    data: Path,
    scratch: Path,
    log: Path,
    chunk_configs: list[str],
    profiles: list[str],
    edited: str,
) -> dict[str, list[ScenarioRun]]:
    runs: dict[str, list[ScenarioRun]] = {name: [] for name in SCENARIOS}
    for repeat in range(args.repeats):
        print(f"\nrepeat {repeat + 1}/{args.repeats}")
        workspace = make_workspace(scratch / f"workspace-{repeat + 1}", data)
        for name in SCENARIOS:
            selection = list(chunk_configs), list(profiles)
            before = cached_digests(workspace)
            if name == "edited":
                edit_document(workspace, edited)
            if name == "profile":
                selection[1].append(add_profile(workspace))
            run = run_scenario(name, workspace, selection_args(*selection) if args.quick else [], log)
            if name == "cold":
                record_chunks(run, workspace, chunk_configs)
            if name == "edited":
                analyse_edit(run, workspace, chunk_configs, edited, before)
            if name == "profile":
                analyse_profile(run, workspace, chunk_configs)
            runs[name].append(run)
            print(f"  ({name}: wall {run.wall_seconds:.1f} s, CPU {run.cpu_seconds:.1f} s)", flush=True)
        # one fresh process embeds each scenario's texts (one call each, after its model load)
        done = [runs[name][-1] for name in SCENARIOS if runs[name][-1].texts]
        for run, pure in zip(
            done, pure_embeddings(workspace, [r.texts for r in done], log, "scenarios"), strict=True
        ):
            run.pure = pure
        for name in SCENARIOS:
            print(scenario_line(runs[name][-1]), flush=True)
    return runs


def all_names(data: Path = REPO / "data") -> tuple[list[str], list[str]]:
    from rag_eval_pipeline.core.settings.configs import load_chunk_configs, load_profiles

    configs = load_chunk_configs(data / "chunk_configs.yaml")
    profiles = load_profiles(data / "retrieval_profiles.yaml")
    return [c.name for c in configs], [p.name for p in profiles]


if __name__ == "__main__":
    sys.exit(main())
