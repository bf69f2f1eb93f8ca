import pytest

from rag_eval_pipeline.core.progress import (
    PROGRESS_BAR_ENV,
    LogProgress,
    fan_out,
    say_on_terminal,
    show_progress_bars,
    step_progress,
)


def test_log_progress_reports_counts_rate_and_always_the_end():
    lines: list[str] = []
    progress = LogProgress(lines.append, interval=3600)
    progress("embedding", 0, 10)
    progress("embedding", 5, 10)  # within the interval: quiet
    progress("embedding", 10, 10)
    assert lines[0].startswith("embedding: 0/10 (0%)")
    assert lines[-1].startswith("embedding: 10/10 (100%) at ") and lines[-1].endswith("/s")
    assert len(lines) == 2


def test_every_line_when_the_interval_is_zero_and_fan_out_reaches_all():
    first: list[str] = []
    second: list[str] = []
    progress = fan_out(LogProgress(first.append, interval=0), LogProgress(second.append, interval=0))
    for done in range(0, 4):
        progress("retrieval", done, 3)
    assert len(first) == len(second) == 4
    assert [line.split(" at ")[0] for line in first] == [line.split(" at ")[0] for line in second]
    assert "eta" in first[1]


def test_a_step_draws_a_bar_besides_its_lines_once_the_process_asks(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
):
    monkeypatch.delenv(PROGRESS_BAR_ENV, raising=False)  # restored after the test
    clock = [0.0]
    monkeypatch.setattr("rag_eval_pipeline.core.progress.time.monotonic", lambda: clock[0])
    lines: list[str] = []

    def embed_for_a_minute() -> None:
        progress = step_progress(lines.append)
        progress("embed", 0, 1)
        clock[0] += 60.0
        progress("embed", 1, 1)

    embed_for_a_minute()
    assert len(lines) == 1 and capsys.readouterr().err == ""
    show_progress_bars()
    embed_for_a_minute()
    assert len(lines) == 2 and "embed" in capsys.readouterr().err  # the bar, on the terminal


def test_a_step_s_lines_skip_the_start_and_space_out(monkeypatch: pytest.MonkeyPatch):
    """Each line of a step is an event Dagster stores: a stage of under 2 s writes none (its step's
    summary says what it did), one of a few seconds only its last line; a long one a line after 10 s,
    then after waits twice as long each, and its last."""
    monkeypatch.delenv(PROGRESS_BAR_ENV, raising=False)
    clock = [0.0]
    monkeypatch.setattr("rag_eval_pipeline.core.progress.time.monotonic", lambda: clock[0])
    lines: list[str] = []
    progress = step_progress(lines.append)
    progress("instant", 0, 10)
    clock[0] = 1.9
    progress("instant", 10, 10)
    assert lines == []
    progress("short", 0, 10)
    clock[0] = 5.0
    progress("short", 10, 10)
    assert [line.split(" at ")[0] for line in lines] == ["short: 10/10 (100%)"]
    lines.clear()
    clock[0] = 0.0
    progress("long", 0, 1000)
    for second in range(1, 200):
        clock[0] = float(second)
        progress("long", second, 1000)
    progress("long", 1000, 1000)
    said = [int(line.split(": ")[1].split("/")[0]) for line in lines]
    assert said == [10, 30, 70, 150, 1000]


def test_an_announcement_reaches_the_terminal_at_once_only_where_bars_are_drawn(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(PROGRESS_BAR_ENV, raising=False)
    say_on_terminal("chunk_index[big]: embedding 4,829 texts: about 4 min")
    assert capsys.readouterr().err == ""  # the run log has it
    monkeypatch.setenv(PROGRESS_BAR_ENV, "1")
    say_on_terminal("chunk_index[big]: embedding 4,829 texts: about 4 min")
    assert capsys.readouterr().err == "chunk_index[big]: embedding 4,829 texts: about 4 min\n"
