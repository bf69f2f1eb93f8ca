"""The annotation page in a real browser (Chromium driven by Selenium, keys and mouse as a person uses
them): an annotator judges two queries, one by selecting the answering text, one as not answerable; a
reload resumes at the next query; a second annotator judges the same query and the page shows their
agreement. The stored spans are checked against the document text, across characters a browser counts
as two (emoji), so the page's offsets are the documents' code point offsets."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rag_eval_pipeline.annotate.app import create_app
from rag_eval_pipeline.annotate.server import serving_in_thread
from rag_eval_pipeline.core.judging.annotation_source import AnnotationSource
from rag_eval_pipeline.core.judging.hole_focus import FocusQuery, HoleFocus
from rag_eval_pipeline.core.judging.store import JudgingStore, latest_judgements
from rag_eval_pipeline_tests.chromium import driven_chromium
from rag_eval_pipeline_tests.core.judging.annotation_fixtures import (
    DOCS,
    NIGHT_ID,
    NIGHT_LINE,
    NIGHT_QUERY,
    PUMP_ID,
    PUMP_QUERY,
    PUMPS,
    STAFF,
    corpus,
    pool,
    write_judging_files,
)

pytestmark = pytest.mark.slow  # a browser: ~10 s

# Selects `needle` inside the highlighted passage number `index` (the task's passages, document order) with a DOM Range, as
# a mouse drag would, and returns the centre of its box on screen.
SELECT = """
const [needle, index] = arguments;
const element = document.querySelector(`.passage-text[data-passage="${index}"]`);
const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  const at = node.data.indexOf(needle);
  if (at < 0) continue;
  const range = document.createRange();
  range.setStart(node, at);
  range.setEnd(node, at + needle.length);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  const box = range.getBoundingClientRect();
  return [box.left + box.width / 2, box.top + box.height / 2];
}
throw new Error('not in passage ' + index + ': ' + needle);
"""

# Selects from the start of `first` in passage `a` to the end of `last` in passage `b`, across the grey
# context between them.
SELECT_ACROSS = """
const [first, a, last, b] = arguments;
const textOf = (index) => document.querySelector(`.passage-text[data-passage="${index}"]`).firstChild;
const from = textOf(a), to = textOf(b);
const range = document.createRange();
range.setStart(from, from.data.indexOf(first));
range.setEnd(to, to.data.indexOf(last) + last.length);
window.getSelection().removeAllRanges();
window.getSelection().addRange(range);
"""


@pytest.fixture
def store(tmp_path: Path) -> JudgingStore:
    return write_judging_files(tmp_path / "judging")


@pytest.fixture
def page_url(store: JudgingStore) -> Iterator[str]:
    with serving_in_thread(create_app(AnnotationSource(store, corpus()))) as url:
        yield url


def wait_for(driver: Any, element_id: str, text: str, timeout: float = 10) -> None:
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(
        expected_conditions.text_to_be_present_in_element(("id", element_id), text),
        f"#{element_id} never read {text!r}",
    )


def press(driver: Any, *keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(*keys).perform()


def double_click_at(driver: Any, point: list[float]) -> None:
    """A real mouse double-click at a point of the viewport: the browser selects the word there."""
    from selenium.webdriver.common.actions.action_builder import ActionBuilder

    driver.execute_script("window.getSelection().removeAllRanges()")
    actions = ActionBuilder(driver)
    actions.pointer_action.move_to_location(int(point[0]), int(point[1]))
    actions.pointer_action.double_click()
    actions.perform()


def span_texts(driver: Any) -> list[str]:
    return [item.text for item in driver.find_elements("css selector", "#spans .span-text")]


def test_two_annotators_judge_in_the_browser_and_the_spans_are_the_documents_text(
    store: JudgingStore, page_url: str, tmp_path: Path
) -> None:
    from selenium.webdriver.common.keys import Keys

    with driven_chromium(tmp_path) as driver:
        started = time.monotonic()
        driver.get(page_url + "?annotator=ann")
        wait_for(driver, "query", PUMP_QUERY)
        wait_for(driver, "progress", "0 of 2 queries judged by ann")
        assert "a" in driver.find_element("id", "keys").text  # the keys are on the page
        assert driver.find_element("css selector", ".passage-text").text.startswith("The main pump runs")

        press(driver, Keys.ENTER)  # nothing selected, nothing marked: refused on the page
        wait_for(driver, "message", "Select the answering text and press a")

        # query 1: one span selected with a DOM Range, one with a real mouse double-click
        driver.execute_script(SELECT, "1,450 rpm", 0)
        press(driver, "a")
        wait_for(driver, "spans", "1,450 rpm")
        word = driver.execute_script(SELECT, "runs", 0)
        double_click_at(driver, word)
        assert driver.execute_script("return window.getSelection().toString()").strip() == "runs"
        press(driver, "a")
        wait_for(driver, "spans", "runs")
        assert span_texts(driver) == ["runs", "1,450 rpm"]
        driver.find_element("css selector", "#spans li button").click()  # × on "runs"
        assert span_texts(driver) == ["1,450 rpm"]
        press(driver, "u")  # undo brings it back
        assert span_texts(driver) == ["runs", "1,450 rpm"]
        press(driver, Keys.ENTER)
        wait_for(driver, "progress", "1 of 2 queries judged by ann")
        wait_for(driver, "query", NIGHT_QUERY)
        first_query_seconds = time.monotonic() - started

        # a reload resumes at the first query ann has not judged
        driver.refresh()
        wait_for(driver, "query", NIGHT_QUERY)
        wait_for(driver, "message", "query 2 is the first you have not judged")

        # query 2: not answerable from these documents
        press(driver, "2")
        wait_for(driver, "verdict-now", "not answerable from these documents")
        press(driver, Keys.ENTER)
        wait_for(driver, "progress", "2 of 2 queries judged by ann")
        wait_for(driver, "message", "every query is judged")

        # a second annotator, bob, judges query 2 by its span (after emoji: two UTF-16 units each)
        name = driver.find_element("id", "annotator")
        name.clear()
        name.send_keys("bob", Keys.ENTER)
        wait_for(driver, "progress", "0 of 2 queries judged by bob")
        wait_for(driver, "query", PUMP_QUERY)
        # a selection across two passages becomes a span in each, the context between them left out
        driver.execute_script(SELECT_ACROSS, "1,450", 0, "pressure alarm", 1)
        press(driver, "a")
        wait_for(driver, "spans", "A pressure alarm")
        assert span_texts(driver) == ["1,450 rpm and is serviced every 90 days.", "A pressure alarm"]
        press(driver, "n")  # unsaved: asks first
        wait_for(driver, "message", "Unsaved changes: press n again")
        press(driver, "n")
        wait_for(driver, "query", NIGHT_QUERY)
        wait_for(driver, "query-meta", "also judged by ann")
        driver.execute_script(SELECT, "starts at 22:00", 0)
        press(driver, "a")
        wait_for(driver, "spans", "starts at 22:00")
        pooled = store.read_pool()
        store.write_pool(pooled[:-1])  # pooled again meanwhile, without the canteen note: refused
        press(driver, Keys.ENTER)
        wait_for(driver, "message", "Not saved: the passages of query")
        assert "reload the page" in driver.find_element("id", "message").text
        store.write_pool(pooled)
        press(driver, Keys.ENTER)
        wait_for(driver, "progress", "1 of 2 queries judged by bob")
        wait_for(driver, "agreement-table", "bob")
        table = driver.find_element("id", "agreement-table").text
        assert "ann / bob" in table and "kappa" in table
        print(f"first query judged in the browser in {first_query_seconds:.1f} s (automated)")

    judgements = {(j.judge, j.query_id): j for j in latest_judgements(store.read_judgements())}
    assert set(judgements) == {("ann", PUMP_ID), ("ann", NIGHT_ID), ("bob", NIGHT_ID)}
    for judgement in judgements.values():
        assert judgement.kind == "human"
        for span in (*judgement.spans, *judgement.read):
            assert DOCS[span.doc_id][span.start : span.end] == span.text
        assert judgement.documents == {s.doc_id: corpus()[s.doc_id].sha256 for s in judgement.read}
    pump = judgements[("ann", PUMP_ID)]
    assert pump.verdict == "answers" and [s.text for s in pump.spans] == ["runs", "1,450 rpm"]
    assert {s.doc_id for s in pump.spans} == {PUMPS}
    assert judgements[("ann", NIGHT_ID)].verdict == "not-answerable"
    assert judgements[("ann", NIGHT_ID)].spans == ()
    (night,) = judgements[("bob", NIGHT_ID)].spans
    assert (night.doc_id, night.start) == (STAFF, DOCS[STAFF].index("starts at 22:00"))
    assert night.start > DOCS[STAFF].index(NIGHT_LINE) and "👩‍🔧" in DOCS[STAFF][: night.start]


def test_with_holes_the_page_says_why_it_offers_each_query(store: JudgingStore, tmp_path: Path) -> None:
    """`rag-eval annotate --holes`: the focus's queries in its order, only its passages, and why."""
    from selenium.webdriver.common.keys import Keys

    canteen = pool()[3]
    why = "passages fixed-200 x dense retrieved that nobody read: judged@5 0.62"
    focus = HoleFocus((), (FocusQuery(NIGHT_ID, (canteen,), why),), ())
    with (
        serving_in_thread(create_app(AnnotationSource(store, corpus(), focus))) as url,
        driven_chromium(tmp_path) as driver,
    ):
        driver.get(url + "?annotator=ann")
        wait_for(driver, "query", NIGHT_QUERY)
        wait_for(driver, "reason", f"Offered first: {why}")
        assert driver.find_element("id", "focus").text.startswith("Only the passages that flagged setups")
        texts = [e.text for e in driver.find_elements("css selector", ".passage-text")]
        assert texts == [canteen.span.text]
        press(driver, "2", Keys.ENTER)
        wait_for(driver, "progress", "1 of 1 queries judged by ann")
    (judgement,) = store.read_judgements()
    assert judgement.read == (canteen.span,) and judgement.verdict == "not-answerable"
