"""Every process that imports the package makes torch's OpenMP threads wait passively (the package's
__init__: spinning threads cost more CPU than the work on a busy machine), unless the user chose a
policy. Checked in fresh processes: the OpenMP runtime reads the variable once, when torch loads it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

POLICY = "import os, rag_eval_pipeline.core.llm.local_smollm; print(os.environ.get('OMP_WAIT_POLICY'))"


def policy_seen(preset: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if preset is not None:
        env["OMP_WAIT_POLICY"] = preset
    done = subprocess.run(
        [sys.executable, "-c", POLICY], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize(("preset", "seen"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_openmp_threads_wait_passively_unless_the_user_chose(preset: str | None, seen: str) -> None:
    assert policy_seen(preset) == seen
