"""`make test`'s `-n auto`: one xdist worker more than the cores (conftest.py), unless the user says."""

from __future__ import annotations

import os

import pytest

from rag_eval_pipeline_tests import conftest


def test_auto_is_one_worker_more_than_the_cores_unless_the_variable_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert conftest.pytest_xdist_auto_num_workers(pytest.Config.__new__(pytest.Config)) == 3
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "5")
    assert conftest.pytest_xdist_auto_num_workers(pytest.Config.__new__(pytest.Config)) is None
