"""Benchmark: where a `rag-eval run` on the bundled demo spends its time (issue 16's baseline figures).

Four scenarios in sequence, each a real `python -m rag_eval_pipeline --workspace DIR run` in a child
process, in a scratch workspace under /tmp (a copy of the repository's data/ settings and corpus, with
its own warehouse, caches, Qdrant folder and Dagster instance; the repository's own are never touched):

1. cold: empty caches and warehouse
2. warm: nothing changed, run again
3. edited: one sentence appended to one corpus document
4. profile: one retrieval profile appended to data/retrieval_profiles.yaml

The child wraps the model's ``embed`` (every text the model embeds, i.e. every embedding-cache miss,
with the time the model took) and the vector store's ``replace_collection`` (vectors uploaded), and
counts the Dagster runs and events the scenario added to the workspace's instance. This process then
embeds the same texts with the real MiniLM model in one batched call (the pure embedding time), so each
scenario's wall time can be compared with the embedding it had to do. Last, the Dagster overhead of one
evaluation partition: the evaluation assets' code called directly (Dagster's direct invocation, inputs
read from the warehouse, outputs written to it) against one ``evaluation_job`` run of the same partition
through Dagster, interleaved, on the warm caches.

    python benchmarks/end_to_end.py [--repeats N] [--overhead-repeats N] [--quick] [--keep] [--data DIR]

``--data DIR`` takes the settings, corpus and datasets from another folder laid out like data/ (the
tests' smoke run uses a tiny one); the edited document is then its first one unless it has the demo's.
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
ADDED_PROFILE = "bench-added-top3"
APPENDED_SENTENCE = "This closing sentence was appended by the end-to-end benchmark to edit one document."
EDITED_DOCUMENT = "architecture/ingestion_gateway.md"
EMBEDDING_CACHE = "data/cache/embeddings.sqlite"
GOALS = {
    "cold_vs_embedding": "goal <= 1.15x",
    "cold_vs_warm": "goal >= 20x",
    "edited": "goal: only the edited document's changed chunks",
    "profile": "goal: no chunk embedded, 0 vectors uploaded",
    "overhead": "goal: small (issue 16 measured 5.5 s vs 1.2 s)",
}


# ---------------------------------------------------------------------------------------------------
# the child: one `rag-eval run`, instrumented


def child_run(workspace: Path, report: Path, cli_args: Sequence[str]) -> int:
    """`rag-eval --workspace WORKSPACE run ARGS` in this process, with counting wrappers; writes the
    counts to ``report`` (JSON)."""
    started = time.perf_counter()
    from rag_eval_pipeline.cli import main
    from rag_eval_pipeline.core.embedding.local import SentenceTransformerEmbedder
    from rag_eval_pipeline.core.vector_store.edge import EdgeVectorStore  # the default engine
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
    embed, replace = SentenceTransformerEmbedder.embed, EdgeVectorStore.replace_collection

    def counting_embed(self: SentenceTransformerEmbedder, texts: Sequence[str]) -> Any:
        if not texts:
            return embed(self, texts)
        loading = time.perf_counter()
        _ = self.model  # loaded once per process (lru_cache): timed apart from the embedding
        counts["model_load_seconds"] += time.perf_counter() - loading
        start = time.perf_counter()
        vectors = embed(self, texts)
        counts["embed_seconds"] += time.perf_counter() - start
        counts["embed_calls"] += 1
        counts["texts"].extend(texts)
        return vectors

    def counting_replace(self: EdgeVectorStore, name: str, chunks: Sequence[Any], *args: Any) -> int:
        start = time.perf_counter()
        written = replace(self, name, chunks, *args)
        counts["upload_seconds"] += time.perf_counter() - start
        counts["vectors_uploaded"] += written  # points actually written (an update writes only changes)
        counts["collections_replaced"] += 1
        return written

    SentenceTransformerEmbedder.embed = counting_embed  # type: ignore[method-assign]
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


def child_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("RAG_EVAL_") and k not in ISOLATED_ENV}


@dataclass
class ScenarioRun:
    name: str
    wall_seconds: float
    counts: dict[str, Any]
    pure_seconds: float = 0.0
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def texts(self) -> list[str]:
        return list(self.counts["texts"])


def run_scenario(name: str, workspace: Path, cli_args: Sequence[str], log: Path) -> ScenarioRun:
    report = workspace.parent / f"{workspace.name}-{name}.json"
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child-run",
        str(workspace),
        str(report),
        *cli_args,
    ]
    start = time.perf_counter()
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n=== {workspace.name} {name}: {' '.join(command)}\n")
        out.flush()
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=child_environment())
    wall = time.perf_counter() - start
    if done.returncode != 0 or not report.exists():
        tail = log.read_text(encoding="utf-8").splitlines()[-30:]
        raise SystemExit(f"scenario {name} failed (exit {done.returncode}); log {log}:\n" + "\n".join(tail))
    return ScenarioRun(name, wall, json.loads(report.read_text(encoding="utf-8")))


# ---------------------------------------------------------------------------------------------------
# pure embedding in this process


class PureEmbedder:
    """The real MiniLM, loaded once in this process, embedding a list of texts in one batched call."""

    def __init__(self) -> None:
        from rag_eval_pipeline.core.embedding.local import SentenceTransformerEmbedder

        self.embedder = SentenceTransformerEmbedder(batch_size=64)
        start = time.perf_counter()
        self.embedder.embed(["warm up the model"])
        self.load_seconds = time.perf_counter() - start

    def seconds(self, texts: Sequence[str]) -> float:
        if not texts:
            return 0.0
        start = time.perf_counter()
        self.embedder.embed(list(texts))
        return time.perf_counter() - start


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


EVALUATION_ASSETS = ("retrieval_results", "retrieval_metrics", "answers", "answer_metrics")
SHARED_INPUTS = ("corpus", "eval_questions", "answer_calibration")  # unpartitioned
CONFIG_INPUTS = ("chunks", "chunk_index")  # per chunk config


@dataclass
class Overhead:
    direct: list[float] = field(default_factory=list)
    dagster: list[float] = field(default_factory=list)
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
    from rag_eval_pipeline.runner.in_process import QUIET_LOGS
    from rag_eval_pipeline.runner.instance import project_instance

    defs = build_definitions()
    job = defs.resolve_job_def("evaluation_job")
    resources = defs.resources
    key = dg.MultiPartitionKey({"chunk_config": chunk_config, "profile": profile})
    result = Overhead()
    with project_instance(workspace) as instance:
        for i in range(repeats):
            start = time.perf_counter()
            call_assets_directly(resources, key, f"bench-direct-{i}")
            result.direct.append(time.perf_counter() - start)
            start = time.perf_counter()
            outcome = job.execute_in_process(
                instance=instance,
                partition_key=key,
                run_config={**QUIET_LOGS, **evaluation_run_config("full", None)},
                raise_on_error=False,
            )
            result.dagster.append(time.perf_counter() - start)
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


def call_assets_directly(resources: dict[str, Any], key: Any, run_id: str) -> None:
    """The bodies of the four evaluation assets and their two regression checks, called as plain
    functions (no run, no event log, no IO manager): inputs read from the warehouse as the IO manager
    reads them, outputs written as it writes them."""
    import dagster as dg

    from rag_eval_pipeline.core.store.warehouse import Warehouse
    from rag_eval_pipeline.defs.answers import assets as answer_assets
    from rag_eval_pipeline.defs.answers import checks as answer_checks
    from rag_eval_pipeline.defs.evaluation import assets as evaluation_assets
    from rag_eval_pipeline.defs.evaluation import checks as evaluation_checks

    steps = [
        evaluation_assets.retrieval_results,
        evaluation_assets.retrieval_metrics,
        evaluation_checks.retrieval_metrics_regression,
        answer_assets.answers,
        answer_assets.answer_metrics,
        answer_checks.answer_metrics_regression,
    ]
    warehouse = Warehouse(Path(resources["io_manager"].base_dir))
    partition = dict(key.keys_by_dimension)
    values: dict[str, Any] = {name: warehouse.read_current(name) for name in SHARED_INPUTS}
    for name in CONFIG_INPUTS:
        values[name] = warehouse.read_current(name, {"chunk_config": partition["chunk_config"]})
    run = DirectRun(run_id)
    context = StepContext(key, run, RunTags(run), logging.getLogger("end_to_end"))
    for step in steps:
        body = step.node_def.compute_fn.decorated_fn
        parameters = list(inspect.signature(body).parameters)[1:]  # after the context
        result = body(context, **{p: values[p] if p in values else resources[p] for p in parameters})
        if isinstance(result, dg.Output | dg.MaterializeResult):  # a check returns an AssetCheckResult
            name = step.key.to_user_string()
            values[name] = result.value
            warehouse.write_table(result.value, name, partition, run_id)


# ---------------------------------------------------------------------------------------------------
# printing


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


def machine_facts() -> str:
    return (
        f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.platform()}, "
        f"{dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}"
    )


def scenario_line(run: ScenarioRun) -> str:
    c = run.counts
    return (
        f"{run.name:<8} wall {run.wall_seconds:7.1f} s (in process {c['run_seconds']:6.1f} s, imports "
        f"{c['import_seconds']:4.1f} s, model load {c['model_load_seconds']:4.1f} s) | {c['runs']:3d} runs, "
        f"{c['events']:5,d} events | {len(c['texts']):5,d} texts embedded in {c['embed_calls']:3d} calls, "
        f"model {c['embed_seconds']:6.1f} s; pure {run.pure_seconds:6.1f} s | {c['vectors_uploaded']:5,d} "
        f"vectors uploaded in {c['upload_seconds']:5.1f} s"
    )


def summary(runs: dict[str, list[ScenarioRun]], overhead: Overhead | None, edited: str, repeats: int) -> None:
    def med(name: str, value: Callable[[ScenarioRun], float]) -> float:
        return median([value(r) for r in runs[name]])

    print(f"\nSummary: medians of {repeats} repeat(s)")
    header = (
        f"{'scenario':<9}{'wall s':>8}{'in-proc s':>10}{'runs':>6}{'events':>8}{'texts':>7}{'calls':>6}"
        f"{'model s':>9}{'pure s':>8}{'wall/pure':>10}{'uploaded':>9}"
    )
    print(header)
    print("-" * len(header))
    for name in SCENARIOS:
        wall, pure = med(name, lambda r: r.wall_seconds), med(name, lambda r: r.pure_seconds)
        print(
            f"{name:<9}{wall:8.1f}{med(name, lambda r: r.counts['run_seconds']):10.1f}"
            f"{med(name, lambda r: r.counts['runs']):6.0f}{med(name, lambda r: r.counts['events']):8,.0f}"
            f"{med(name, lambda r: len(r.texts)):7,.0f}{med(name, lambda r: r.counts['embed_calls']):6.0f}"
            f"{med(name, lambda r: r.counts['embed_seconds']):9.1f}{pure:8.1f}"
            + (f"{wall / pure:9.2f}x" if pure else f"{'-':>10}")
            + f"{med(name, lambda r: r.counts['vectors_uploaded']):9,.0f}"
        )
    cold_wall = med("cold", lambda r: r.wall_seconds)
    cold_pure = med("cold", lambda r: r.pure_seconds)
    cold_inproc = med("cold", lambda r: r.counts["run_seconds"])
    warm_wall = med("warm", lambda r: r.wall_seconds)
    print("\nRatios against the goals of issue 16")
    print(
        f"cold / pure embedding     {cold_wall / cold_pure:6.2f}x wall, {cold_inproc / cold_pure:.2f}x in "
        f"process ({GOALS['cold_vs_embedding']})"
    )
    print(f"cold / warm               {cold_wall / warm_wall:6.2f}x wall ({GOALS['cold_vs_warm']})")
    e = runs["edited"][-1].notes
    print(
        f"edited document           {med('edited', lambda r: len(r.texts)):,.0f} texts embedded: "
        f"{e['doc_embedded']} chunks of {edited} ({e['doc_chunks']} chunks over the chunk configs, "
        f"{e['doc_changed']} of them new texts), {e['other_chunks_embedded']} chunks of other documents, "
        f"{e['non_chunks_embedded']} texts that are not chunks ({GOALS['edited']})"
    )
    p = runs["profile"][-1].notes
    print(
        f"profile added             {med('profile', lambda r: len(r.texts)):,.0f} texts embedded "
        f"({p['chunks_embedded']} of them chunks), "
        f"{med('profile', lambda r: r.counts['vectors_uploaded']):,.0f} vectors uploaded, "
        f"{med('profile', lambda r: r.counts['runs']):.0f} runs ({GOALS['profile']})"
    )
    if overhead is not None:
        print_overhead(overhead)


def print_overhead(overhead: Overhead) -> None:
    direct, dagster = median(overhead.direct), median(overhead.dagster)
    events = median([float(n) for n in overhead.events])
    print(
        f"\nDagster overhead of one evaluation partition (medians of {len(overhead.direct)}, interleaved, "
        f"warm caches)"
    )
    print(
        f"direct asset calls        {direct:6.2f} s  (runs: {', '.join(f'{s:.2f}' for s in overhead.direct)})"
    )
    print(
        f"evaluation_job run        {dagster:6.2f} s  (runs: {', '.join(f'{s:.2f}' for s in overhead.dagster)}); "
        f"{dagster / direct:.1f}x direct, +{dagster - direct:.2f} s a run ({GOALS['overhead']})"
    )
    top = ", ".join(f"{name} {n}" for name, n in overhead.event_types.most_common(6))
    print(f"events written            {events:.0f} a run ({top}, ...)")


# ---------------------------------------------------------------------------------------------------


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
        help=f"1 chunk config x 2 profiles ({QUICK_CHUNK_CONFIGS[0]}; {', '.join(QUICK_PROFILES)})",
    )
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
        help="only the Dagster overhead of one partition, after one cold --quick run that fills the caches",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child-run"]:  # the rest are `rag-eval run` arguments, not ours
        return child_run(Path(argv[1]), Path(argv[2]), argv[3:])
    args = parse_args(argv)
    data: Path = args.data.resolve()
    chunk_configs, profiles = all_names(data)
    if args.quick:
        chunk_configs, profiles = list(QUICK_CHUNK_CONFIGS), list(QUICK_PROFILES)
    edited = document_to_edit(data / "corpus")
    scratch = Path(tempfile.mkdtemp(prefix="rag-eval-end-to-end-", dir="/tmp"))
    log = scratch / "runs.log"
    documents = sum(1 for p in (data / "corpus").rglob("*") if p.is_file())
    corpus = "the bundled demo" if data == REPO / "data" else str(data)
    print(
        f"end-to-end benchmark: `rag-eval run` on {corpus} ({documents} documents, "
        f"{len(chunk_configs)} chunk config(s) x {len(profiles)} profile(s){', --quick' if args.quick else ''}), "
        f"{args.repeats} repeat(s)"
    )
    print(machine_facts())
    print(f"scratch {scratch} (run output in {log.name})")
    if args.overhead_only:
        return overhead_only(scratch, log, args, chunk_configs[0], profiles[0])
    pure = PureEmbedder()
    print(f"model load in this process {pure.load_seconds:.1f} s (not in any pure-embedding time)")
    runs: dict[str, list[ScenarioRun]] = {name: [] for name in SCENARIOS}
    workspace = scratch
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
            cli_args = (
                ["--chunk-configs", ",".join(selection[0]), "--profiles", ",".join(selection[1])]
                if args.quick
                else []
            )
            run = run_scenario(name, workspace, cli_args, log)
            run.pure_seconds = pure.seconds(run.texts)
            if name == "edited":
                analyse_edit(run, workspace, chunk_configs, edited, before)
            if name == "profile":
                analyse_profile(run, workspace, chunk_configs)
            runs[name].append(run)
            print(scenario_line(run), flush=True)
    overhead = None
    if args.overhead_repeats > 0:
        overhead = measure_overhead(workspace, chunk_configs[0], profiles[0], args.overhead_repeats)
    summary(runs, overhead, edited, args.repeats)
    if args.keep:
        print(f"\nkept {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def overhead_only(scratch: Path, log: Path, args: argparse.Namespace, chunk_config: str, profile: str) -> int:
    """One cold run of the first selected config x profile (fills the warehouse and caches), then the
    interleaved direct / Dagster runs of that partition."""
    workspace = make_workspace(scratch / "workspace", args.data.resolve())
    selection = ["--chunk-configs", chunk_config, "--profiles", profile]
    print(scenario_line(run_scenario("cold", workspace, selection, log)), flush=True)
    overhead = measure_overhead(workspace, chunk_config, profile, args.overhead_repeats)
    print_overhead(overhead)
    if args.keep:
        print(f"\nkept {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def all_names(data: Path = REPO / "data") -> tuple[list[str], list[str]]:
    from rag_eval_pipeline.core.settings.configs import load_chunk_configs, load_profiles

    configs = load_chunk_configs(data / "chunk_configs.yaml")
    profiles = load_profiles(data / "retrieval_profiles.yaml")
    return [c.name for c in configs], [p.name for p in profiles]


if __name__ == "__main__":
    sys.exit(main())
