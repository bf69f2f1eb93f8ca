"""The tests' `rag-eval` processes forked from a zygote (forked_cli.py) are what a real subprocess is: the
same output and exit status, the request's environment and working directory, a timeout that kills, and
a real subprocess wherever the interpreter's start would differ."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rag_eval_pipeline_tests import forked_cli
from rag_eval_pipeline_tests.faults.entry_points import rag_eval_env


def both(args: list[str], env: dict[str, str], cwd: Path) -> tuple[object, object]:
    """(exit status, stdout, stderr) of a fork and of a real subprocess."""
    zygote = forked_cli._zygote()
    assert zygote is not None
    before = zygote.forked
    forked = forked_cli.run(args, env, cwd=cwd)
    assert zygote.forked == before + 1  # the zygote served it
    real = forked_cli.run(args, {**env, forked_cli.NO_FORK: "1"}, cwd=cwd)
    assert zygote.forked == before + 1
    return (forked.returncode, forked.stdout, forked.stderr), (real.returncode, real.stdout, real.stderr)


def test_a_fork_prints_and_exits_as_the_real_process(tmp_path: Path) -> None:
    env = rag_eval_env(tmp_path / "nowhere")
    forked, real = both(["list"], env, tmp_path)
    assert forked == real
    assert forked[0] == 2 and f"the workspace {tmp_path / 'nowhere'}" in forked[2]  # type: ignore[index]
    forked, real = both(["--help"], env, tmp_path)
    assert forked == real and forked[0] == 0  # type: ignore[index]


def test_each_fork_reads_its_own_environment_and_working_directory(tmp_path: Path) -> None:
    env = rag_eval_env(tmp_path)
    del env["RAG_EVAL_PROJECT_DIR"]
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        done = forked_cli.run(["--workspace", "missing", "list"], env, cwd=tmp_path / name)
        assert done.returncode == 2 and str(tmp_path / name / "missing") in done.stderr, done.stderr
        named = forked_cli.run(["list"], rag_eval_env(tmp_path / f"{name}-env"), cwd=tmp_path)
        assert str(tmp_path / f"{name}-env") in named.stderr, named.stderr


def test_an_interpreter_variable_of_its_own_gets_a_real_subprocess(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text("print('hooked at start')\n", encoding="utf-8")
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    done = forked_cli.run(["--help"], {**rag_eval_env(tmp_path), "PYTHONPATH": path})
    assert done.returncode == 0 and done.stdout.startswith("hooked at start")


def test_a_timeout_kills_the_fork_and_the_zygote_serves_on(tmp_path: Path) -> None:
    env = rag_eval_env(tmp_path)
    with pytest.raises(subprocess.TimeoutExpired):
        forked_cli.run(["serve", "--port", "0"], env, timeout=3)  # serves until killed
    assert forked_cli.run(["--help"], env).returncode == 0


def test_a_zygote_that_is_gone_leaves_real_subprocesses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = forked_cli._Zygote()
    gone.close()
    monkeypatch.setattr(forked_cli, "_started", [gone])  # this process's own zygote is left as it is
    done = forked_cli.run(["--help"], rag_eval_env(tmp_path))
    assert done.returncode == 0 and "rag-eval" in done.stdout and gone.forked == 0


def test_a_zygote_starts_from_any_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # as an in-process `main()` leaves it: the tests' package is not there
    elsewhere = forked_cli._Zygote()
    try:
        monkeypatch.setattr(forked_cli, "_started", [elsewhere])
        done = forked_cli.run(["--help"], rag_eval_env(tmp_path))
        assert done.returncode == 0 and elsewhere.forked == 1
    finally:
        elsewhere.close()
