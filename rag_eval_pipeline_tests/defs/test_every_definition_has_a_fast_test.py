"""Every asset, asset check, sensor and schedule of the code location has a fast test of its own: a test
module, not marked slow as a whole, that imports the definition from its defs/ module and uses it
outside its slow tests. A new definition fails here until it has one; the slow whole-graph runs do not
count (they take minutes and say little about which step broke)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

import rag_eval_pipeline.defs
from rag_eval_pipeline.definitions import build_definitions

TESTS = Path(__file__).resolve().parents[1]  # rag_eval_pipeline_tests
# definitions a function builds (the schedules read the project's settings): the definition's name and
# the function that builds it, which the test imports
BUILT_BY = {
    "nightly_evaluation_schedule": (
        "rag_eval_pipeline.defs.evaluation.nightly_schedule",
        "build_nightly_schedule",
    ),
    "retention_schedule": ("rag_eval_pipeline.defs.maintenance.retention", "build_retention_schedule"),
}


@dataclass(frozen=True)
class Imported:
    module: str  # the defs module, e.g. rag_eval_pipeline.defs.chunking.assets
    name: str  # the name imported from it


def definitions() -> set[str]:
    """What the code location defines, by the name the UI shows: asset keys, checks as
    ``<asset>:<check>``, sensors and schedules by name."""
    defs = build_definitions()
    graph = defs.resolve_asset_graph()
    return {
        *(key.to_user_string() for key in graph.get_all_asset_keys()),
        *(f"{key.asset_key.to_user_string()}:{key.name}" for key in graph.asset_check_keys),
        *(sensor.name for sensor in defs.sensors or ()),
        *(schedule.name for schedule in defs.schedules or ()),
    }


def named(value: object) -> Iterator[str]:
    """The definitions a module-level value of defs/ holds (a list of assets holds several)."""
    if isinstance(value, dg.AssetsDefinition):
        yield from (key.to_user_string() for key in value.keys)
        yield from (f"{key.asset_key.to_user_string()}:{key.name}" for key in value.check_keys)
    elif isinstance(value, dg.AssetSpec):
        yield value.key.to_user_string()
    elif isinstance(value, dg.SensorDefinition | dg.ScheduleDefinition):
        yield value.name
    elif type(value) in (list, tuple):  # not Dagster's records, which are tuples too
        for item in value:
            yield from named(item)


def where_defined() -> dict[str, set[Imported]]:
    """Each definition -> the module-level names of defs/ that hold it (a test imports one of them)."""
    found: dict[str, set[Imported]] = {}
    for info in pkgutil.walk_packages(rag_eval_pipeline.defs.__path__, "rag_eval_pipeline.defs."):
        module = importlib.import_module(info.name)
        for attribute, value in vars(module).items():
            for definition in named(value):
                found.setdefault(definition, set()).add(Imported(info.name, attribute))
    for definition, (module, builder) in BUILT_BY.items():
        found.setdefault(definition, set()).add(Imported(module, builder))
    return found


def is_slow(node: ast.AST) -> bool:
    return "slow" in ast.unparse(node)


def fast_uses(path: Path) -> set[Imported]:
    """The defs/ names a test module imports and uses outside its slow tests; none when the module is
    slow as a whole or has no fast test."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    body = tree.body
    if any(
        isinstance(n, ast.Assign) and "pytestmark" in ast.unparse(n.targets[0]) and is_slow(n.value)
        for n in body
    ):
        return set()
    tests = [n for n in body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    slow = [t for t in tests if any(is_slow(d) for d in t.decorator_list)]
    if len(slow) == len(tests):
        return set()
    imported = {
        alias.asname or alias.name: Imported(node.module, alias.name)
        for node in body
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rag_eval_pipeline.defs")
        for alias in node.names
    }
    used = {
        n.id
        for top in body
        if top not in slow and not isinstance(top, ast.ImportFrom)
        for n in ast.walk(top)
        if isinstance(n, ast.Name)
    }
    return {imported[name] for name in used & set(imported)}


def test_every_definition_has_a_fast_test_that_imports_it():
    holders = where_defined()
    shown = definitions()
    assert shown <= set(holders), (
        f"not found as a module-level name of defs/ (add its builder to BUILT_BY): {sorted(shown - set(holders))}"
    )
    used: dict[Imported, list[str]] = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        for name in fast_uses(path):
            used.setdefault(name, []).append(str(path.relative_to(TESTS)))
    untested = sorted(d for d in shown if not holders[d] & set(used))
    assert not untested, f"no fast test imports and uses these definitions: {untested}"


def test_the_guard_sees_a_definition_only_its_slow_tests_use(tmp_path: Path):
    """The rule the test above applies, on two handwritten modules: a module marked slow as a whole and a
    name used only inside a slow test do not count; a fast test's use does."""
    module = "rag_eval_pipeline.defs.chunking.assets"
    slow_module = tmp_path / "test_slow_module.py"
    slow_module.write_text(
        f"import pytest\nfrom {module} import chunks\npytestmark = pytest.mark.slow\ndef test_a():\n    chunks\n",
        encoding="utf-8",
    )
    mixed = tmp_path / "test_mixed.py"
    mixed.write_text(
        f"import pytest\nfrom {module} import chunks, chunk_index\n"
        "@pytest.mark.slow\ndef test_slow():\n    chunk_index\n"
        "def helper():\n    return chunks\n"
        "def test_fast():\n    helper()\n",
        encoding="utf-8",
    )
    assert fast_uses(slow_module) == set()
    assert fast_uses(mixed) == {Imported(module, "chunks")}
