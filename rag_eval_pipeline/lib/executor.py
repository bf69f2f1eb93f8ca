"""The jobs' executor: every step in the run's own process (the default), or each step on a worker of a
Dask cluster, chosen by configuration, not by code.

Run config ``execution: {config: {dask: {address: tcp://scheduler:8786}}}`` (the address may be
``{env: VAR}``) sends a run's steps to the Dask scheduler at that address; ``{in_process: {}}`` keeps them
here. A run whose config names neither reads ``RAG_EVAL_DASK_SCHEDULER``: set, the steps go to that
scheduler, so the UI's launches, the schedules, sensors and `rag-eval run` all follow one variable.

Why Dask (dagster-dask) and not Celery: no broker to run and keep (the scheduler is one process of the
same Python install), a worker is `dask worker ADDRESS`, and a worker that dies is seen at once by the
scheduler (Celery's broker redelivers or loses the task depending on its acknowledgement settings).

A worker shares nothing with the run but the instance (PostgreSQL), the project folder, the warehouse
and the vector store: each step loads the definitions (``definitions.job_named``) and writes its events
to the instance itself. Two rules dagster-dask leaves to us:

- pools: a step of a pool (``llm``) claims one of the pool's slots on the instance before it starts, on
  the worker, and frees it when it ends, so the limit holds across workers and runs as it does in
  process (dagster-dask claims none);
- a step is attempted once: Dask gives a task whose worker died to another worker, which would run a
  half-done step again; the second attempt refuses, the run fails, and `rag-eval run --resume` (or
  "Re-execute from failure") runs what did not succeed.
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Iterator, Sequence
from typing import Any

import dagster as dg

DASK_SCHEDULER_ENV = "RAG_EVAL_DASK_SCHEDULER"
# how often a step waiting for a pool slot asks the instance again
POOL_POLL_S = 1.0


def dask_scheduler() -> str | None:
    """The scheduler address ``RAG_EVAL_DASK_SCHEDULER`` names (None: unset or empty)."""
    return os.environ.get(DASK_SCHEDULER_ENV, "").strip() or None


def dask_run_config(address: str) -> dict[str, Any]:
    """The run config that sends a run's steps to the Dask scheduler at ``address``."""
    return {"execution": {"config": {"dask": {"address": address}}}}


@dg.executor(
    name="rag_eval_executor",
    config_schema={
        "in_process": dg.Field(
            dg.in_process_executor.config_schema.as_field().config_type,
            is_required=False,
            description="Every step in the run's process (the default without RAG_EVAL_DASK_SCHEDULER).",
        ),
        "dask": dg.Field(
            {"address": dg.Field(dg.StringSource, description="The Dask scheduler, e.g. tcp://host:8786.")},
            is_required=False,
            description="Each step on a worker of the Dask cluster at this scheduler.",
        ),
    },
    requirements=dg.multiple_process_executor_requirements(),
)
def rag_eval_executor(init_context: dg.InitExecutorContext) -> dg.Executor:
    config: dict[str, Any] = dict(init_context.executor_config)
    if "in_process" in config and "dask" in config:
        raise dg.DagsterInvalidConfigError(
            "execution config names both in_process and dask: keep one", [], config
        )
    address = dict(config["dask"] or {}).get("address") if "dask" in config else None
    if address is None and "in_process" not in config:
        address = dask_scheduler()
    if address is None:
        in_process = dg.InitExecutorContext(
            job=init_context.job,
            executor_def=dg.in_process_executor,
            executor_config=dict(config.get("in_process") or {"retries": {"enabled": {}}}),
            instance=init_context.instance,
        )
        creation = dg.in_process_executor.executor_creation_fn
        assert creation is not None
        return creation(in_process)
    return _dask_executor(str(address))


def _dask_executor(address: str) -> dg.Executor:
    from dagster_dask.executor import DaskExecutor  # only runs that use it pay for importing Dask

    class PooledDaskExecutor(DaskExecutor):
        """dagster-dask's executor with the two rules of this module's docstring (its ``execute``, for
        an existing cluster only, submitting ``run_step`` instead of its own task)."""

        def execute(self, plan_context: Any, execution_plan: Any) -> Iterator[dg.DagsterEvent]:
            yield from execute_on_dask(address, plan_context, execution_plan)

    return PooledDaskExecutor("existing", {"address": address})


def execute_on_dask(address: str, plan_context: Any, execution_plan: Any) -> Iterator[dg.DagsterEvent]:
    """Every step of ``execution_plan`` submitted to the scheduler at ``address``, each after the steps
    it reads; yields their events as they end. A task that fails (a worker died, a second attempt)
    cancels the steps not started yet and fails the run."""
    import dask.distributed

    instance = plan_context.instance
    if not instance.is_persistent:
        raise dg.DagsterInvariantViolationError(
            "the Dask executor needs an instance its workers can reach (PostgreSQL: dagster.postgres.yaml "
            "as $DAGSTER_HOME/dagster.yaml); this run's instance is ephemeral"
        )
    futures: dict[str, Any] = {}
    # pickled here: Dask walks tuple arguments (a run is a NamedTuple) and Dagster's records refuse that
    shared = pickle.dumps(
        (
            plan_context.reconstructable_job,
            plan_context.dagster_run,
            plan_context.run_config,
            instance.get_ref(),
            execution_plan.known_state,
        )
    )
    with dask.distributed.Client(address) as client:
        for level in execution_plan.get_steps_to_execute_by_level():
            for step in level:
                after = [
                    futures[key] for step_input in step.step_inputs for key in step_input.dependency_keys
                ]
                futures[step.key] = client.submit(
                    run_step,
                    after,
                    step.key,
                    step.pool,
                    shared,
                    key=f"{plan_context.job_name}.{step.key}.{plan_context.run_id}",
                    pure=False,
                )
        try:
            for _future, events in dask.distributed.as_completed(list(futures.values()), with_results=True):
                yield from (pickle.loads(event) for event in events)
        except BaseException:
            client.cancel([f for f in futures.values() if not f.done()])
            raise


def run_step(after: Sequence[object], step_key: str, pool: str | None, shared: bytes) -> list[bytes]:
    """One step on a Dask worker (``after``: the results of the steps it reads, so Dask orders them),
    under a slot of its pool, attempted once; ``shared``: the pickled job, run, run config, instance
    and known state. Returns its events, pickled."""
    from dagster_dask.executor import query_on_dask_worker

    del after
    recon_job, dagster_run, run_config, instance_ref, known_state = pickle.loads(shared)
    with dg.DagsterInstance.from_ref(instance_ref) as instance:
        if step_started_before(instance, dagster_run.run_id, step_key):
            raise RuntimeError(
                f"step {step_key} of run {dagster_run.run_id} started before on a worker that stopped "
                "(killed or lost); it is not run twice: resume the evaluation (`rag-eval run --resume "
                "EVALUATION_ID`) or re-execute the run from failure"
            )
        with pool_slot(instance, pool, dagster_run.run_id, step_key):
            events = query_on_dask_worker(
                None, recon_job, dagster_run, run_config, [step_key], instance_ref, known_state
            )
    return [pickle.dumps(event) for event in events]


def step_started_before(instance: dg.DagsterInstance, run_id: str, step_key: str) -> bool:
    """Whether the run's event log already holds a start of ``step_key``."""
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.STEP_START).records
    return any(record.event_log_entry.step_key == step_key for record in records)


class pool_slot:
    """A slot of ``pool`` held on the instance for the step (none when the step is in no pool or the
    instance limits no pool): waits, asking every ``POOL_POLL_S``, while the pool is full."""

    def __init__(self, instance: dg.DagsterInstance, pool: str | None, run_id: str, step_key: str) -> None:
        self.instance, self.pool, self.run_id, self.step_key = instance, pool, run_id, step_key
        self.claimed = False

    def __enter__(self) -> None:
        storage = self.instance.event_log_storage
        if self.pool is None or not storage.supports_global_concurrency_limits:
            return
        if self.pool not in {limit.name for limit in storage.get_pool_limits()}:
            storage.initialize_concurrency_limit_to_default(self.pool)  # the instance's default_limit
            if self.pool not in {limit.name for limit in storage.get_pool_limits()}:
                return  # no default limit: the pool is unlimited
        while not storage.claim_concurrency_slot(self.pool, self.run_id, self.step_key).is_claimed:
            time.sleep(POOL_POLL_S)
        self.claimed = True

    def __exit__(self, *exc: object) -> None:
        if self.claimed:
            self.instance.event_log_storage.free_concurrency_slot_for_step(self.run_id, self.step_key)
