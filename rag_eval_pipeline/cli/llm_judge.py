"""`rag-eval judgements llm [--limit N]`: an LLM grades the pooled passages no judgement of it covers yet
(core/judging/llm_judge.py), then a summary: grades, quotes located or not, errors, calls and cost.

The LLM is the project's (data/generation.yaml `llm:`, RAG_EVAL_LLM_PROVIDER / RAG_EVAL_LLM_MODEL over
it), with one difference: on `auto`, only an OpenAI-protocol endpoint (OPENAI_API_KEY, OPENAI_BASE_URL)
judges; the small local model never grades relevance unless `provider: local` asks for it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import Any

from ..core.errors import InputError
from ..core.generation.settings import GenerationSettings, LLMSettings
from ..core.judging.agreement import judgements_agreement
from ..core.judging.llm_judge import ERROR_STATUSES, JudgingRun, LLMPassageJudge, judge_pool
from ..core.judging.store import JudgingStore
from ..core.llm.accounting import PriceTable
from ..core.llm.client import LLMClient
from ..core.llm.factory import make_chat_model, make_client
from ..core.project.project_files import ProjectFiles

DESCRIPTION = """\
Judgements of the pooled passages (data/judging/pool.jsonl).

  rag-eval judgements llm [--limit N]
      an LLM grades each pooled passage it has not judged yet (0 nothing to do with the query, 1 related
      but no answer, 2 a partial or unclear answer, 3 the exact answer, as UMBRELA grades) and quotes the
      words that answer; the quote, located in the document, becomes the judgement's span. Judgements go
      to data/judging/judgements.jsonl; passages still without one (a failed call, an unusable reply, a
      quote not in the passage, a document changed since pooling) to data/judging/judge_errors.jsonl.
      Run it again to retry those: replies already received come from the response cache, free.

Needs an OpenAI-protocol LLM: OPENAI_API_KEY (and OPENAI_BASE_URL for another server than OpenAI's);
the model is llm.model in data/generation.yaml (RAG_EVAL_LLM_MODEL overrides), the budget cap
llm.budget_usd."""

NO_LLM = (
    "the LLM judge needs an LLM and none is configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for an "
    "OpenAI-protocol server other than OpenAI's, e.g. vLLM or Ollama); the model is llm.model in "
    "data/generation.yaml (or RAG_EVAL_LLM_MODEL). The small local model judges only when asked for "
    "(llm.provider: local, or RAG_EVAL_LLM_PROVIDER=local)"
)


def add_llm_judge_action(actions: Any) -> None:
    """`judgements llm`: an action of the `judgements` command (cli/judgements.py)."""
    llm = actions.add_parser(
        "llm",
        help="grade the pooled passages not judged by the configured LLM yet",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    llm.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="judge at most N passages this time (in pool order); the rest on the next run",
    )


def run_llm_judge_command(args: argparse.Namespace, files: ProjectFiles) -> int:
    from ..core.progress import LogProgress, TqdmProgress

    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit must be >= 1, got {args.limit}")
    settings = files.load_settings(GenerationSettings).llm
    client = llm_judge_client(settings, str(files.path(files.llm_cache_file)))
    if client is None:
        raise InputError(NO_LLM)
    store = JudgingStore(files.path(files.judging_dir))
    if not store.read_pool():
        print(
            f"nothing to judge: {store.pool_path} holds no pooled passage; import queries and pool them first",
            file=sys.stderr,
        )
        return 1
    judge = LLMPassageJudge(client, repair_attempts=settings.repair_attempts)
    say = lambda line: print(line, file=sys.stderr)  # noqa: E731
    progress = TqdmProgress() if sys.stderr.isatty() else LogProgress(say, interval=10.0)
    print(f"judging with {judge.name} ...", file=sys.stderr)
    corpus = files.load_corpus()
    run = judge_pool(
        store,
        corpus,
        judge,
        limit=args.limit,
        budget_usd=settings.budget_usd,
        progress=progress,
    )
    print(summary(run, store))
    people = [
        pair
        for pair in judgements_agreement(store.read_judgements(), corpus, store.read_pool())
        if run.judge in (pair.judge_a, pair.judge_b)
    ]
    for pair in people:
        print(f"  agreement: {pair.describe()}")
    if not people:
        print("  agreement: no person has judged these queries yet (`rag-eval annotate`)")
    return 1 if run.errors else 0


def llm_judge_client(
    settings: LLMSettings, cache_path: str, environ: Mapping[str, str] = os.environ
) -> LLMClient | None:
    """The project's LLM as the judge, or None when none is configured: on ``auto``, an OpenAI-protocol
    endpoint only (a key is set); ``openai`` without a key or ``local`` without the model installed is a
    ``ConfigError`` saying what to set."""
    provider = environ.get("RAG_EVAL_LLM_PROVIDER") or settings.provider
    api_key = environ.get("OPENAI_API_KEY") or None
    if provider == "auto" and not api_key:
        return None
    model = make_chat_model(
        provider,
        environ.get("RAG_EVAL_LLM_MODEL") or settings.model,
        api_key=api_key,
        base_url=environ.get("OPENAI_BASE_URL") or None,
        timeout_s=settings.timeout_s,
    )
    if model is None:
        return None
    return make_client(
        model,
        cache_path=cache_path,
        prices=PriceTable().with_overrides(settings.prices),
        requests_per_minute=settings.requests_per_minute,
        max_concurrency=settings.max_concurrency,
        max_attempts=settings.max_attempts,
    )


def summary(run: JudgingRun, store: JudgingStore) -> str:
    """What the run did, a line per aspect."""
    sent = len(run.outcomes)
    left = f"; {run.left} left for the next run (--limit)" if run.left else ""
    graded = run.grades()
    n_graded = sum(graded.values())
    lines = [
        f"{run.judge}: {sent} passages judged now, {run.already_judged} judged before{left}",
        f"  graded:   {n_graded} ({', '.join(f'grade {g}: {n}' for g, n in graded.items())})",
        f"  answers:  {run.count('located')} quotes located in the documents, "
        f"{run.count('not-located')} not located (grade kept in {store.folder.name}/judge_errors.jsonl); "
        f"{run.count('not-relevant')} passages graded below 2",
    ]
    if run.errors:
        counts = ", ".join(f"{kind} {run.count(kind)}" for kind in ERROR_STATUSES if run.count(kind))
        lines.append(
            f"  errors:   {run.errors} ({counts}), listed with their reasons in "
            f"{store.folder / 'judge_errors.jsonl'}; run again to retry them"
        )
    else:
        lines.append("  errors:   none")
    usage = run.usage
    cost = (
        "unknown cost (no price for the model: llm.prices)"
        if usage.cost_usd is None
        else f"${usage.cost_usd:.4f}"
    )
    lines.append(
        f"  llm:      {usage.calls} calls, {usage.cache_hits} from the cache, {usage.retries} retries, "
        f"{usage.failures} failed; {usage.prompt_tokens} prompt + {usage.completion_tokens} completion "
        f"tokens, {cost}"
    )
    return "\n".join(lines)
