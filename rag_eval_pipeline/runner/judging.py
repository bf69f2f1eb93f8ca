"""`rag-eval pool build`, `rag-eval judgements status|export` on a workspace: its files (queries, pool,
judgements under data/judging, the corpus, the configs), its embedder with its embedding cache (the
resource of lib/resources.py, built here directly as `questions plan` does), and a scratch vector store
for the runs (nothing else of the workspace is written: no index, no Dagster run).

The core does the work (core/judging/): runs.py makes the runs, pool.py pools, judged_at_k.py finds
the holes, agreement.py compares judges, question_set.py writes the golden file.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..core.corpus.corpus import Corpus
from ..core.embedding.base import Embedder
from ..core.errors import DatasetError, InputError
from ..core.generation.settings import GenerationSettings
from ..core.judging.agreement import PairAgreement, agreement
from ..core.judging.hole_focus import HoleFocus, hole_focus
from ..core.judging.judge_views import judge_views, read_by_query
from ..core.judging.judged_at_k import UNJUDGED_THRESHOLD, Hole, JudgedAtK, holes, judged_at_k
from ..core.judging.pool import QueryPool, build_pool
from ..core.judging.question_set import GoldenWrite, JudgedQuestions, judged_questions, write_into_golden
from ..core.judging.reanchor import AnchoredJudgements, anchor_judgements
from ..core.judging.runs import SetupRuns, retrieval_runs
from ..core.judging.store import JudgingStore
from ..core.judging.types import ImportedQuery
from ..core.progress import Progress, no_progress
from ..core.project.project_files import ProjectFiles
from ..core.retrieval.rerank import Reranker, load_reranker
from ..core.retrieval.rewrite import LLMQueryRewriter, QueryRewriter
from ..core.settings.configs import PipelineConfigs, RetrievalProfile, load_pipeline_configs
from ..core.vector_store.edge import EdgeVectorStore

NO_QUERIES = (
    "no imported queries in {path}: import what your users asked first, `rag-eval queries import FILE`"
)


def judging_store(files: ProjectFiles) -> JudgingStore:
    return JudgingStore(files.path(files.judging_dir))


@contextmanager
def workspace_embedder(progress: Progress = no_progress) -> Iterator[Embedder]:
    """The embedder a run would use (RAG_EVAL_EMBEDDER, its embedding cache): the tests' swap point."""
    import dagster as dg

    from ..lib.resources import default_resources

    with dg.build_resources({"embedder": default_resources()["embedder"]}) as resources:
        yield resources.embedder.get(progress)


@dataclass(frozen=True)
class Workspace:
    """What every judging command reads: the imported queries, the corpus, the judgements re-anchored to it."""

    store: JudgingStore
    queries: list[ImportedQuery]
    corpus: Corpus
    anchored: AnchoredJudgements


def read_workspace(files: ProjectFiles) -> Workspace:
    """A missing queries file is a ``DatasetError`` saying how to import them."""
    store = judging_store(files)
    queries = store.read_queries()
    if not queries:
        raise DatasetError(NO_QUERIES.format(path=store.queries_path))
    corpus = files.load_corpus()
    return Workspace(store, queries, corpus, anchor_judgements(store.read_judgements(), corpus))


@dataclass(frozen=True)
class PoolBuild:
    pools: list[QueryPool]
    runs: SetupRuns
    anchored: AnchoredJudgements
    path: Path


def build_workspace_pool(files: ProjectFiles, depth: int, progress: Progress = no_progress) -> PoolBuild:
    """The pool of every imported query over every setup and the window runs, cut at the text judges
    read, written to data/judging/pool.jsonl (replaced whole)."""
    workspace = read_workspace(files)
    read = read_by_query(judge_views(workspace.anchored.usable))
    runs = _runs(files, workspace, depth, progress)
    pools = build_pool([q.query_id for q in workspace.queries], runs.runs, workspace.corpus, depth, read)
    workspace.store.write_pool([p for pool in pools for p in pool.passages])
    return PoolBuild(pools, runs, workspace.anchored, workspace.store.pool_path)


@dataclass(frozen=True)
class JudgingStatus:
    n_queries: int
    n_judged: int  # queries with at least one usable judgement
    n_questions: int  # judged queries with an answer: the questions an export writes
    n_pooled: int  # passages in data/judging/pool.jsonl
    judged: list[JudgedAtK]  # every setup at its evaluated k (and the extra ks asked for)
    holes: list[Hole]
    agreement: list[PairAgreement]
    anchored: AnchoredJudgements
    skipped: tuple[str, ...]
    threshold: float


def workspace_status(
    files: ProjectFiles,
    ks: Sequence[int] = (),
    threshold: float = UNJUDGED_THRESHOLD,
    progress: Progress = no_progress,
) -> JudgingStatus:
    """How far the judging is: queries judged, judged@k per setup (retrieved now, as an evaluation
    would), flagged setups with their unjudged passages, and agreement per pair of judges."""
    workspace = read_workspace(files)
    views = judge_views(workspace.anchored.usable)
    read = read_by_query(views)
    judged_ids = [q.query_id for q in workspace.queries if q.query_id in views]
    questions = judged_questions(workspace.queries, workspace.anchored.usable, workspace.corpus)
    pool = workspace.store.read_pool()
    configs = _configs(files)
    deepest = max([*(p.top_k for p in configs.profiles), *ks, 1])
    found_at: list[JudgedAtK] = []
    flagged: list[Hole] = []
    skipped: tuple[str, ...] = ()
    if judged_ids:
        runs = _runs(files, workspace, deepest, progress, configs)
        setups = [r for r in runs.runs if r.name in runs.evaluated_k]
        for run in setups:
            found_at += judged_at_k([run], read, judged_ids, sorted({runs.evaluated_k[run.name], *ks}))
        flagged = holes(setups, workspace.corpus, read, judged_ids, runs.evaluated_k, pool, threshold)
        skipped = runs.skipped
    return JudgingStatus(
        len(workspace.queries),
        len(judged_ids),
        len(questions.examples),
        len(pool),
        found_at,
        flagged,
        agreement(views, pool),
        workspace.anchored,
        skipped,
        threshold,
    )


@dataclass(frozen=True)
class HolesToJudge:
    """What `rag-eval annotate --holes` serves: the status it was found from and the focus."""

    status: JudgingStatus
    focus: HoleFocus


def holes_to_judge(
    files: ProjectFiles,
    threshold: float = UNJUDGED_THRESHOLD,
    setups: Sequence[str] = (),
    progress: Progress = no_progress,
) -> HolesToJudge:
    """The flagged setups as `rag-eval judgements status` finds them (``workspace_status``: it
    retrieves every imported query with every setup), and the pooled text of theirs nobody read.
    ``setups``: only these (names as status prints them, "<chunk config> x <profile>"); an unknown
    name is an InputError listing the setups."""
    status = workspace_status(files, threshold=threshold, progress=progress)
    known = [j.setup for j in status.judged]
    unknown = [name for name in setups if name not in known]
    if unknown and status.judged:
        raise InputError(
            f"--setup {unknown[0]!r} is not a configured setup: give one of {', '.join(dict.fromkeys(known))} "
            "(as `rag-eval judgements status` names them)"
        )
    flagged = [h for h in status.holes if not setups or h.judged.setup in setups]
    store = judging_store(files)
    queries = store.read_queries()
    focus = hole_focus(
        flagged,
        store.read_pool(),
        store.read_judgements(),
        files.load_corpus(),
        [q.query_id for q in queries],
    )
    return HolesToJudge(status, focus)


@dataclass(frozen=True)
class Export:
    questions: JudgedQuestions
    written: GoldenWrite | None  # None: no judged question to write


def export_judgements(files: ProjectFiles, out: Path | None = None) -> Export:
    """The judged questions written into ``out`` (default: the workspace's golden file)."""
    workspace = read_workspace(files)
    # from the judgements as stored: judged_questions re-anchors them and reports the stale ones
    questions = judged_questions(workspace.queries, workspace.store.read_judgements(), workspace.corpus)
    if not questions.examples:
        return Export(questions, None)
    return Export(questions, write_into_golden(out or files.path(files.golden_dataset), questions.examples))


def _configs(files: ProjectFiles) -> PipelineConfigs:
    # the config files as they are: the profile version ledger is a run's to write
    return load_pipeline_configs(files.path(files.chunk_configs_file), files.path(files.profiles_file))


def _runs(
    files: ProjectFiles,
    workspace: Workspace,
    depth: int,
    progress: Progress,
    configs: PipelineConfigs | None = None,
) -> SetupRuns:
    configs = configs or _configs(files)
    with (
        workspace_embedder(progress) as embedder,
        tempfile.TemporaryDirectory(prefix="rag-eval-pool-") as folder,
    ):
        store = EdgeVectorStore(folder)
        try:
            return retrieval_runs(
                workspace.queries,
                workspace.corpus,
                configs,
                embedder,
                store,
                depth,
                root=files.root,
                reranker_for=lambda profile: _reranker(files, profile),
                rewriter_for=lambda profile: _rewriter(files, profile),
                progress=progress,
            )
        finally:
            store.close()


def _reranker(files: ProjectFiles, profile: RetrievalProfile) -> Reranker | None:
    return load_reranker(files.path(profile.reranker)) if profile.reranker is not None else None


def _rewriter(files: ProjectFiles, profile: RetrievalProfile) -> QueryRewriter | None:
    """The LLM a run would rewrite the profile's queries with; None when no LLM is configured."""
    from ..lib.resources import default_resources

    generation = files.load_settings(GenerationSettings)
    llm = default_resources()["llm"]
    client = llm.client(generation.llm)  # type: ignore[attr-defined]
    if client is None:
        return None
    return LLMQueryRewriter(client, profile.query_rewrite_prompt, generation.llm.budget_usd)
