"""What importing costs a fresh process: every run launched from the UI (a backfill, a sensor, the
schedule) starts one and imports the code location, so a heavy library is imported by the function
that needs it, not by the module (benchmarks/ui_backfill.py). Checked in a subprocess, via sys.modules."""

from __future__ import annotations

import json
import subprocess
import sys

from rag_eval_pipeline.definitions import YOUNG_COLLECTION_ALLOCATIONS

IMPORTED = """
import importlib, json, sys
modules, heavy = sys.argv[1].split(","), sys.argv[2].split(",")
for module in modules:
    importlib.import_module(module)
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""


def imported_by(modules: list[str], heavy: list[str]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", IMPORTED, ",".join(modules), ",".join(heavy)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.splitlines()[-1]))


def test_choosing_the_vector_engine_imports_qdrant_client_only_for_the_engines_that_use_it() -> None:
    assert imported_by(["rag_eval_pipeline.core.vector_store.engines"], ["qdrant_client"]) == []


def test_the_langsmith_mirror_imports_the_sdk_only_when_it_talks_to_langsmith() -> None:
    modules = ["datasets", "errors", "experiments", "settings", "sink"]
    found = imported_by([f"rag_eval_pipeline.core.langsmith.{m}" for m in modules], ["langsmith", "requests"])
    assert found == []


def test_the_code_location_imports_no_model_and_no_client_or_parser_it_does_not_use() -> None:
    heavy = [
        "torch",
        "sentence_transformers",
        "transformers",
        "onnxruntime",
        "langsmith",
        "bm25s",
        "qdrant_client",
        "tiktoken",
        "bs4",  # core/corpus/html_text.py: only when a corpus holds a page (0.13 s)
        "lxml",
    ]
    assert imported_by(["rag_eval_pipeline.definitions"], heavy) == []


FROZEN = """
import gc, json, sys
if sys.argv[1] == "off":
    gc.disable()
gc.set_threshold(700, 10, 10)  # Python's default
import rag_eval_pipeline.definitions
print(json.dumps([gc.isenabled(), gc.get_freeze_count(), gc.get_threshold()]))
"""


def test_the_code_location_freezes_what_its_import_made_and_leaves_collection_as_it_found_it() -> None:
    """definitions.py: no collection while it imports, then its objects frozen out of later ones, and
    the young generation collected less often than Python's default (a run allocates millions)."""
    for state, enabled in (("on", True), ("off", False)):
        done = subprocess.run(
            [sys.executable, "-c", FROZEN, state], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        found_enabled, frozen, threshold = json.loads(done.stdout.splitlines()[-1])
        assert found_enabled is enabled and frozen > 100_000, (state, found_enabled, frozen)
        assert threshold == [YOUNG_COLLECTION_ALLOCATIONS, 10, 10]


FAILED_IMPORT = """
import gc, json, sys
sys.modules["rag_eval_pipeline.defs.jobs"] = None  # importing it raises ImportError
try:
    import rag_eval_pipeline.definitions
except ImportError as exc:
    print(json.dumps([gc.isenabled(), str(exc)]))
"""


def test_a_code_location_that_fails_to_import_leaves_collection_on() -> None:
    """A code server reports a failed import and goes on running: without collection it would grow."""
    done = subprocess.run([sys.executable, "-c", FAILED_IMPORT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    enabled, error = json.loads(done.stdout.splitlines()[-1])
    assert enabled is True and "rag_eval_pipeline.defs.jobs" in error
