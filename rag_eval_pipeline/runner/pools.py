"""Concurrency pools seen from `rag-eval run` (dagster.yaml `concurrency.pools`: the assets that call an
LLM share the pool "llm", one step at a time across all runs).

A step waits for a slot of its pool until the run holding it releases it. A run that ended without
releasing its slot (cancelled from the UI mid-step, its process killed) would block every later run, and
an in-process run waits silently ("Step blocked by limit for pool llm" is only in the UI). So before
executing, `rag-eval run` frees the slots of runs that have ended (the daemon's run monitoring does the
same after `free_slots_after_run_end_seconds`, but only while `dagster dev` runs), and while a step
waits for a slot the terminal says which pool, who holds it and how to free it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import dagster as dg

from ..core.runs.run_tags import PARTITION_TAG
from .outcome import ENDED_STATUSES
from .run_status import fail_orphaned_runs, free_run_slots

# A run in one of these states executes no step any more: a slot it holds is never released by it.
ENDED = ENDED_STATUSES
# How often a running run's engine events are read for a step blocked by a pool: a wait worth telling
# lasts longer than this, and most runs end before the first read (polling every second took about 7 %
# of a cold `rag-eval run`'s samples on 2 cores, py-spy, 2026-11-27).
POLL_INTERVAL_S = 5.0
_BLOCKED_PREFIX = "Step blocked by limit for pool "


@dataclass(frozen=True)
class SlotHolder:
    """A run holding slots of a pool: its steps, job, partition and state (None: not on the instance)."""

    pool: str
    run_id: str
    steps: tuple[str, ...]
    job_name: str = ""
    partition: str = ""
    status: dg.DagsterRunStatus | None = None

    @property
    def ended(self) -> bool:
        return self.status is None or self.status in ENDED

    def describe(self) -> str:
        what = " ".join(part for part in (self.job_name, self.partition) if part)
        state = self.status.value.lower() if self.status is not None else "deleted"
        return f"run {self.run_id[:8]} ({what + ', ' if what else ''}{state})"


def slot_holders(instance: dg.DagsterInstance, pool: str) -> list[SlotHolder]:
    """The runs holding slots of ``pool``, each with the steps that claimed them."""
    steps: dict[str, list[str]] = {}
    for slot in instance.event_log_storage.get_concurrency_info(pool).claimed_slots:
        steps.setdefault(slot.run_id, []).append(slot.step_key)
    holders = []
    for run_id, keys in steps.items():
        run = instance.get_run_by_id(run_id)
        holders.append(
            SlotHolder(
                pool,
                run_id,
                tuple(keys),
                run.job_name if run else "",
                run.tags.get(PARTITION_TAG, "") if run else "",
                run.status if run else None,
            )
        )
    return holders


def free_slots_of_ended_runs(instance: dg.DagsterInstance) -> list[SlotHolder]:
    """Frees every slot held by a run that has ended (or is gone from the instance); returns those runs.
    A run still in progress keeps its slots."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return []
    freed = []
    for pool in sorted(storage.get_concurrency_keys()):
        for holder in slot_holders(instance, pool):
            if holder.ended:
                free_run_slots(instance, holder.run_id)
                freed.append(holder)
    return freed


def freed_line(freed: list[SlotHolder]) -> str:
    """One line for slots freed because their runs have ended."""
    runs = "; ".join(f"pool {h.pool}: {h.describe()}" for h in freed)
    return f"freed the concurrency slots of {len(freed)} run(s) that ended without releasing them ({runs})"


def release_stale_slots(instance: dg.DagsterInstance) -> list[str]:
    """Before an evaluation executes: runs whose `rag-eval` process is gone are marked failed (their
    slots freed, run_status.fail_orphaned_runs), then the slots of every ended run are freed. Returns a
    line for each of the two that did anything."""
    lines = []
    orphaned = fail_orphaned_runs(instance)
    if orphaned:
        shown = ", ".join(" ".join(p for p in (o.run_id[:8], o.job_name, o.partition) if p) for o in orphaned)
        lines.append(
            f"marked {len(orphaned)} run(s) failed whose rag-eval process is gone, and freed their concurrency "
            f"slots ({shown}); `rag-eval status RUN` shows one"
        )
    freed = free_slots_of_ended_runs(instance)
    if freed:
        lines.append(freed_line(freed))
    return lines


def waiting_line(instance: dg.DagsterInstance, run_id: str, step: str, pool: str) -> str:
    """What a step waiting for ``pool`` waits for, and how to free it."""
    info = instance.event_log_storage.get_concurrency_info(pool)
    holders = [h for h in slot_holders(instance, pool) if h.run_id != run_id]
    limit = info.limit if info.limit is not None else info.slot_count
    raise_it = f"`dagster instance concurrency set {pool} {max(limit + 1, 1)}` allows more at once"
    if not holders:
        return f"step {step} waits for a slot of pool {pool} (limit {limit}); {raise_it}"
    held = ", ".join(h.describe() for h in holders)
    first = holders[0].run_id
    return (
        f"step {step} waits for a slot of pool {pool} (limit {limit}), held by {held}; it goes on when "
        f"that run releases it (`rag-eval status {first}` shows it; terminate it in the UI to free the "
        f"slot); {raise_it}"
    )


def blocked_steps(
    instance: dg.DagsterInstance, run_id: str, cursor: str | None
) -> tuple[list[tuple[str, str]], str | None]:
    """The (step, pool) pairs the run's engine events since ``cursor`` say are blocked by a pool, and the
    cursor after them."""
    connection = instance.get_records_for_run(run_id, cursor=cursor, of_type=dg.DagsterEventType.ENGINE_EVENT)
    found = []
    for record in connection.records:
        entry = record.event_log_entry
        event = entry.dagster_event
        if event is None or not event.message or not event.message.startswith(_BLOCKED_PREFIX):
            continue
        pool = event.message[len(_BLOCKED_PREFIX) :].strip()
        found.append((entry.step_key or event.step_key or "?", pool))
    return found, connection.cursor or cursor


def free_ended_holders(instance: dg.DagsterInstance, pool: str, run_id: str) -> tuple[list[SlotHolder], bool]:
    """Frees the slots of ``pool`` held by runs other than ``run_id`` that have ended; returns those runs
    and whether a live run still holds one."""
    holders = [h for h in slot_holders(instance, pool) if h.run_id != run_id]
    ended = [h for h in holders if h.ended]
    for holder in ended:
        instance.event_log_storage.free_concurrency_slots_for_run(holder.run_id)
    return ended, len(ended) < len(holders)


@contextmanager
def pool_wait_notices(
    instance: dg.DagsterInstance,
    run_id: str,
    write: Callable[[str], None],
    interval_s: float = POLL_INTERVAL_S,
) -> Iterator[None]:
    """While run ``run_id`` executes in this process: each of its steps that waits for a pool gets one
    line through ``write`` naming the pool, the run that holds the slot and how to free it. A holder of
    a pool it waited for that ends without releasing its slot has it freed (said in a line), so the step
    goes on."""
    stop = threading.Event()

    def watch() -> None:
        cursor: str | None = None
        noticed: set[tuple[str, str]] = set()
        errors: set[str] = set()
        while not stop.wait(interval_s):
            try:
                if cursor is None and not instance.has_run(run_id):
                    continue  # not created yet: reading would create its event store first
                blocked, cursor = blocked_steps(instance, run_id, cursor)
                new = [b for b in dict.fromkeys(blocked) if b not in noticed]
                noticed.update(new)
                for pool in sorted({pool for _, pool in noticed}):
                    freed, live = free_ended_holders(instance, pool, run_id)
                    if freed:
                        write(freed_line(freed))
                    for step in (step for step, waited in new if waited == pool):
                        if live or not freed:
                            write(waiting_line(instance, run_id, step, pool))
            except Exception as exc:  # a busy storage: the run goes on; read again at the next poll
                error = f"{type(exc).__name__}: {exc}"
                if error not in errors:
                    errors.add(error)
                    write(f"note: could not read whether a step waits for a pool ({error})")

    thread = threading.Thread(target=watch, name=f"pool-wait-{run_id[:8]}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
