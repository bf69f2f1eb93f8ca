"""One evaluation, the only way there is to run one: `rag-eval run`, `chunk-configs apply --run` and the
tests all come here. It loads the configs, checks what would stop every run before any starts, plans (or
resumes) the evaluation, syncs the partitions, and executes the plan in this process or submits it to a
running `dagster dev`; what it has to say before the runs goes to the caller's `EvaluationEvents`, so the
terminal's wording stays with the CLI."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..core.errors import InputError
from ..core.project.project_files import ProjectFiles
from ..core.settings.monitoring_settings import EvaluationMode, MonitoringSettings

if TYPE_CHECKING:
    import dagster as dg

    from .outcome import EvaluationOutcome
    from .plan import EvaluationRequest, PlannedRun
    from .resume import Resume


@dataclass(frozen=True)
class EvaluationOrder:
    """What the user asked for: the selection (None: every configured one), the mode, where the runs
    execute (``launch_url``: a running `dagster dev`; None: this process), and whether it resumes an
    earlier evaluation (its own selection and mode then) or re-runs what is up to date (``force``).
    The `EvaluationRequest` (runner/plan.py) is what follows from it, tagged on every run."""

    chunk_configs: Sequence[str] | None = None
    profiles: Sequence[str] | None = None
    mode: EvaluationMode = "full"
    sample_size: int | None = None
    launch_url: str | None = None
    resume_id: str | None = None
    force: bool = False
    evaluation_id: str | None = None  # None: a new one (or, resuming, the resumed one's)
    show_progress: bool = False  # progress bars on the terminal


@dataclass(frozen=True)
class EvaluationStart:
    """What is about to run, said once before the first run starts."""

    request: EvaluationRequest
    plan: tuple[PlannedRun, ...]
    where: str  # "in process" or "submitted to <url>"
    resume: Resume | None = None

    @property
    def plan_summary(self) -> str:
        """The plan counted by stage: 1 ingestion + 2 chunking + 4 evaluation + 1 leaderboard runs."""
        from .plan import STAGES

        counts = Counter(r.stage for r in self.plan)
        return " + ".join(f"{counts[s]} {s}" for s in STAGES if counts[s]) + " runs"


class EvaluationEvents(Protocol):
    """Who hears what an evaluation says before its runs (the CLI prints it)."""

    def warning(self, text: str) -> None: ...

    def starting(self, start: EvaluationStart) -> None: ...


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C during an evaluation, with its id: what `rag-eval status` and `run --resume` take."""

    def __init__(self, evaluation_id: str) -> None:
        super().__init__(evaluation_id)
        self.evaluation_id = evaluation_id


def evaluate(
    files: ProjectFiles,
    order: EvaluationOrder,
    events: EvaluationEvents | None = None,
    *,
    instance: dg.DagsterInstance | None = None,
    resources: dict[str, object] | None = None,
) -> EvaluationOutcome:
    """Run the evaluation ``order`` asks for on ``instance`` (the project's when None), with the
    definitions' ``resources`` (the defaults when None; tests swap them). A resumed evaluation whose
    planned runs all succeeded runs nothing: its outcome has no runs. Raises InputError for bad input
    found before any run (and for a webserver that cannot take the runs), `EvaluationInterrupted` on
    Ctrl-C."""
    from ..core.runs.evaluation_ids import new_evaluation_id
    from .launch import LaunchError

    if order.sample_size is not None and (order.mode != "quick" or order.sample_size < 1):
        raise InputError("--sample-size takes a number >= 1 and applies to --mode quick only")
    evaluation_id = order.resume_id or order.evaluation_id or new_evaluation_id()
    try:
        with ExitStack() as stack:
            if instance is None:
                from .instance import project_instance

                instance = stack.enter_context(project_instance(files.root))
            return _evaluate(files, order, evaluation_id, events, instance, resources)
    except LaunchError as exc:
        raise InputError(str(exc)) from exc
    except KeyboardInterrupt as exc:
        if isinstance(exc, EvaluationInterrupted):
            raise
        raise EvaluationInterrupted(evaluation_id) from exc


def _evaluate(
    files: ProjectFiles,
    order: EvaluationOrder,
    evaluation_id: str,
    events: EvaluationEvents | None,
    instance: dg.DagsterInstance,
    resources: dict[str, object] | None,
) -> EvaluationOutcome:
    from ..core.progress import show_progress_bars
    from ..lib.executor import dask_scheduler
    from .in_process import execute_plan, sync_configs
    from .launch import DagsterWebserver, launch_main_job
    from .outcome import EvaluationOutcome
    from .plan import EvaluationRequest, plan_main_job
    from .resume import plan_resume
    from .up_to_date import UpToDate

    configs = files.load_configs()
    evaluated_before = False
    resume = None
    if order.resume_id is not None:
        resume = plan_resume(instance, order.resume_id, configs)
        request, plan, evaluated_before = resume.request, list(resume.to_run), resume.evaluated_before
    else:
        plan = plan_main_job(configs, order.chunk_configs, order.profiles)
        request = EvaluationRequest.of_plan(plan, evaluation_id, order.mode, order.sample_size)
    if request.mode == "quick" or any(r.stage == "leaderboard" for r in plan):
        # a broken file stops here, not in every partition, nor in the leaderboard at the end
        files.load_settings(MonitoringSettings)
    # before any run: a large corpus is announced with its estimate, a broken one stops here
    chunking = [r.chunk_config for r in plan if r.chunk_config and r.stage == "chunking"]
    ingestion = any(r.stage == "ingestion" for r in plan)
    for warning in files.workload(chunking, ingestion).warnings() if chunking or ingestion else ():
        if events is not None:
            events.warning(warning)
    if ingestion:  # a golden set asked for and missing (or a broken generation.yaml) stops here
        files.question_sources()
    where = f"submitted to {DagsterWebserver(order.launch_url).url}" if order.launch_url else "in process"
    if not order.launch_url and (address := dask_scheduler()) is not None:
        where = f"steps on the Dask workers of {address}"
    if events is not None:
        events.starting(EvaluationStart(request, tuple(plan), where, resume))
    if resume is not None and not plan:  # every planned run succeeded
        return EvaluationOutcome(request, ())
    if order.launch_url:
        return launch_main_job(
            order.launch_url,
            configs,
            plan,
            request,
            show_progress=order.show_progress,
            evaluated_before=evaluated_before,
            up_to_date=None if order.force else UpToDate(instance),
            instance=instance,
        )
    if order.show_progress:
        show_progress_bars()
    sync_configs(instance, configs)
    return execute_plan(
        instance,
        request,
        plan,
        resources,
        show_progress=order.show_progress,
        evaluated_before=evaluated_before,
        force=order.force,
        profiles=request.profiles_of(configs),
    )
