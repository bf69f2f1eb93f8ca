"""Who a run is triggered by: the terminal's user@host, or, inside ``acting_as``, an API token's name,
which the run record then reads back as trigger ``api``."""

from __future__ import annotations

import threading

from rag_eval_pipeline.core.runs.caller import acting_as, api_caller, current_caller
from rag_eval_pipeline.core.runs.run_tags import CLI_TRIGGER, TRIGGER_TAG, TRIGGERED_BY_TAG
from rag_eval_pipeline.lib.run_record import RunFacts, cli_trigger_tags


def test_an_api_caller_tags_the_runs_made_inside_the_block_only() -> None:
    terminal = current_caller()
    assert terminal.trigger == CLI_TRIGGER and "@" in terminal.who
    with acting_as(api_caller("ops-panel")):
        tags = cli_trigger_tags()
        seen_elsewhere: list[str] = []
        other = threading.Thread(target=lambda: seen_elsewhere.append(current_caller().who))
        other.start()
        other.join()
    assert tags == {TRIGGER_TAG: "api", TRIGGERED_BY_TAG: "ops-panel"}
    facts = RunFacts.of(tags)
    assert (facts.trigger, facts.triggered_by) == ("api", "ops-panel")
    assert seen_elsewhere == [terminal.who]  # another thread is not the API's request
    assert cli_trigger_tags()[TRIGGER_TAG] == CLI_TRIGGER
