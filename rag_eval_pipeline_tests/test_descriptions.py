"""The descriptions the Dagster UI renders (as Markdown, which passes HTML through) say what they say:
a ``<run>`` in plain text is taken for an HTML tag and vanishes (``reports/history/.html``). In code
(backticks) or as ``{run_id}`` it survives."""

from __future__ import annotations

import re

import dagster as dg
import pytest

from rag_eval_pipeline.definitions import defs as load_defs

CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
# what an HTML parser takes for markup: a start or end tag (<run>, </b>, <chunk_config x>), a comment,
# a declaration or a processing instruction
MARKUP = re.compile(r"</?[A-Za-z][^\s<>]*(?:\s[^<>]*)?>|<[!?][^<>]*>")


def swallowed(description: str) -> list[str]:
    """The parts of ``description`` outside code spans that a Markdown/HTML renderer would not show."""
    return MARKUP.findall(CODE_SPAN.sub("", description))


@pytest.fixture(scope="module")
def descriptions() -> dict[str, str]:
    defs = load_defs()
    graph = defs.resolve_asset_graph()
    found = {
        f"asset {k.to_user_string()}": graph.get(k).description or "" for k in graph.get_all_asset_keys()
    }
    found |= {
        f"check {k.to_user_string()}": graph.get_check_spec(k).description or ""
        for k in graph.asset_check_keys
    }
    found |= {f"job {j.name}": j.description or "" for j in defs.resolve_all_job_defs()}
    for sensor in defs.sensors or ():
        assert isinstance(sensor, dg.SensorDefinition)
        found[f"sensor {sensor.name}"] = sensor.description or ""
    for schedule in defs.schedules or ():
        assert isinstance(schedule, dg.ScheduleDefinition)
        found[f"schedule {schedule.name}"] = schedule.description or ""
    return found


def test_no_description_holds_text_a_renderer_would_swallow(descriptions: dict[str, str]) -> None:
    assert len([n for n in descriptions if n.startswith("asset ")]) >= 18
    assert "`reports/history/{run_id}.html`" in descriptions["asset leaderboard"]
    problems = {name: found for name, text in descriptions.items() if (found := swallowed(text))}
    assert problems == {}, "write these in backticks or as {name}: " + repr(problems)


def test_the_check_finds_tags_outside_code_only() -> None:
    assert swallowed("reports/history/<run>.html") == ["<run>"]
    assert swallowed("a <chunk_config> and </b> or <!-- x -->") == ["<chunk_config>", "</b>", "<!-- x -->"]
    assert swallowed("`reports/history/<run>.html` and ``<a>``, {run_id}") == []
    assert swallowed("recall < 0.5 and > 0.2; a -> b; <= 3") == []
