"""Only core/store/warehouse.py knows the warehouse's folders: no other module of the package, the tests or the
benchmarks builds a path through ``current`` or ``history`` from a string (they call ``Warehouse``).

A heuristic over the parsed source (nothing is imported): a string literal (or the literal parts of an
f-string) with a ``current`` or ``history`` path component, where a path is being built: an operand of
``/``, or an argument of ``Path``, ``UPath``, ``child_path``, ``joinpath``, ``glob``, ``rglob`` or
``os.path.join``. Its limits: a name held in a variable (``table = "history"; base / table``), a path
assembled by string concatenation or ``str.format``, a comparison (``p.parent.name == "history"``) and
text outside Python (shell scripts, the README) go unseen; the other folders (``datasets``, ``reports``,
``anchors``, ``baselines``) share their names with project folders and messages, so they are not checked.
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCANNED = ("rag_eval_pipeline", "rag_eval_pipeline_tests", "benchmarks")
OWNER = Path("rag_eval_pipeline/core/store/warehouse.py")
WAREHOUSE_FOLDERS = frozenset({"current", "history"})
PATH_CALLS = frozenset({"Path", "UPath", "PurePath", "child_path", "joinpath", "glob", "rglob", "join"})


def literal_text(node: ast.AST) -> str | None:
    """A string literal's text; an f-string's literal parts with ``{}`` for each value."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def path_parts(node: ast.AST) -> list[ast.expr]:
    """The expressions ``node`` joins into a path, if it builds one."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return [node.left, node.right]
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name == "join" and not (isinstance(func, ast.Attribute) and ast.unparse(func.value) == "os.path"):
            return []  # "sep".join(...) builds a string, not a path
        if name in PATH_CALLS:
            return list(node.args)
    return []


def hand_built_paths(source: str, filename: str) -> list[str]:
    """``file:line: literal`` of each warehouse folder named in a path built by hand, in line order."""
    found = []
    for node in ast.walk(ast.parse(source)):
        for part in path_parts(node):
            text = literal_text(part)
            if text is not None and WAREHOUSE_FOLDERS & set(text.split("/")):
                found.append((part.lineno, f"{filename}:{part.lineno}: {ast.unparse(part)}"))
    return [message for _, message in sorted(found)]


def violations(root: Path) -> list[str]:
    found = []
    for folder in SCANNED:
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root)
            if relative != OWNER:
                found += hand_built_paths(path.read_text(encoding="utf-8"), relative.as_posix())
    return found


def test_only_the_warehouse_module_builds_warehouse_paths() -> None:
    assert violations(REPO) == [], (
        "use core/warehouse.Warehouse (current_path, history_path, history_files...)"
    )


def test_the_check_sees_each_way_of_building_such_a_path() -> None:
    source = """
import os
from pathlib import Path
base / "current" / "leaderboard.parquet"
base / f"history/{table}/run.parquet"
Path("data/warehouse/history/retrieval_results")
child_path(base / "x", "current", name)
base.joinpath("history")
base.glob("current/**/*.parquet")
os.path.join(base, "history")
"""
    found = hand_built_paths(source, "m.py")
    assert [line.split(":")[1] for line in found] == ["4", "5", "6", "7", "8", "9", "10"]
    harmless = """
parser.add_parser("history", help="a metric over time")
"/".join(["current", "x"])
if p.parent.name == "history": pass
base / "current.jsonl"
base / "historical"
'''a docstring about history/<table>/<run>.parquet'''
"""
    assert hand_built_paths(harmless, "m.py") == []
