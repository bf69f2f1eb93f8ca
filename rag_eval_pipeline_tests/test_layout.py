"""The package's layering, read from its import statements (parsed, not imported):

- core/ is plain Python: no Dagster, and nothing of the package outside core/;
- defs/ holds definitions: a stage folder imports no other stage folder (shared helpers live in lib/),
  and no definition imports the runner, the command line or definitions.py;
- lib/ (Dagster helpers) imports only lib/ and core/;
- runner/ never imports defs/; it reaches the definitions only through definitions.build_definitions,
  inside a function (so planning and status stay free of the asset modules);
- cli/ imports only runner/, annotate/, api/ and core/: never a Dagster helper of lib/ (it finds the
  project's files with core/project/project_files.py, not a resource), defs/ or definitions.py;
- annotate/ (the annotation page's web layer) imports only core/, where its rules live;
- api/ (the HTTP API, `rag-eval serve`) is a layer like cli/ beside it: it imports runner/ and core/ only;
- the package root holds only the entry points: definitions.py, __main__.py;
- nothing, tests included, imports a private module of Dagster (``dagster._core``...): those change
  without notice between releases; PRIVATE_DAGSTER_ALLOWED names the three exceptions (the instance's
  storages) and why;
- a metric's name (retrieval or answer) is spelled only in core/metrics/names.py, its one owner:
  elsewhere the package uses names.py's constants (a string literal equal to a metric name is a second owner that can drift);
- every Dagster tag key (``dagster/...``, and the project's own ``rag_eval/...``) is spelled in one module,
  core/runs/run_tags.py (read from string constants, f-string parts included): a key spelled twice drifts;
- every `rag-eval` command is listed in cli/registry.py alone: a module adds its parser with
  ``add_command(commands, NAME)`` for a registered NAME, never ``commands.add_parser``; ``run_command``
  dispatches through the registry with no if-chain; only cli/__init__.py's ``main`` turns bad input into
  "error: ..." and exit 2 (handlers raise InputError);
- the tests open a Dagster test instance only through rag_eval_pipeline_tests/instances.py (the event log
  storage users get), never ``dg.instance_for_test`` directly.
"""

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from rag_eval_pipeline.core.metrics.names import METRIC_NAMES

PACKAGE = "rag_eval_pipeline"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE
TESTS = Path(__file__).resolve().parent
ROOT_MODULES = {"__init__", "__main__", "definitions"}
# what each folder may import of the package (besides itself); core/ is everybody's
ALLOWED = {
    "core": {"core"},
    "lib": {"lib", "core"},
    "defs": {"defs", "lib", "core"},
    "runner": {"runner", "lib", "core"},
    "cli": {"cli", "runner", "annotate", "api", "core"},
    "annotate": {"annotate", "core"},
    "api": {"api", "runner", "core"},
}


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name
    target: str  # dotted name: a module, or a name in one
    lazy: bool  # inside a function: runs only when called


def module_name(path: Path, root: Path) -> str:
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path) -> list[Import]:
    name = module_name(path, root)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: list[Import] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend(Import(name, alias.name, lazy) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = package[: len(package) - child.level + 1] if child.level else []
                target = ".".join([*base, *([child.module] if child.module else [])])
                # `from X import y`: X.y, which is X's module y or a name in X (same folder and stage)
                found.extend(Import(name, f"{target}.{alias.name}", lazy) for alias in child.names)
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def folder_of(module: str) -> str:
    """``rag_eval_pipeline.defs.ingestion.assets`` -> ``defs``; a root module -> its own name."""
    return module.split(".")[1] if module.count(".") else ""


def stage_of(module: str, root: Path) -> str | None:
    """The stage folder of a module under defs/ (None for defs/automation.py, defs/jobs.py)."""
    parts = module.split(".")
    if len(parts) > 3 and parts[1] == "defs" and (root / "defs" / parts[2]).is_dir():
        return parts[2]
    return None


# Modules that may import Dagster's private modules, and why.
PRIVATE_DAGSTER_ALLOWED = {
    "rag_eval_pipeline.lib.event_log_storage": "subclasses SqliteEventLogStorage, which exists only in dagster._core; dagster "
    "is pinned and lib/test_event_log_storage.py fails when the class changes shape",
    "rag_eval_pipeline.lib.run_storage": "subclasses SqliteRunStorage, which exists only in dagster._core; "
    "lib/test_run_storage.py fails when it changes shape",
    "rag_eval_pipeline.lib.compute_logs": "subclasses LocalComputeLogManager and uses its capture helpers, "
    "which exist only in dagster._core; lib/test_compute_logs.py fails when they change shape",
}


def private_dagster_imports(root: Path) -> list[str]:
    """Imports of a private module of Dagster or of its libraries (a name part starting with ``_``)."""
    return sorted(
        {
            f"{imp.importer} imports {imp.target}: a private Dagster module; use the public API"
            for path in sorted(root.rglob("*.py"))
            for imp in imports_of(path, root)
            if imp.target.split(".")[0].startswith("dagster")
            and imp.importer not in PRIVATE_DAGSTER_ALLOWED
            and any(part.startswith("_") and not part.startswith("__") for part in imp.target.split(".")[1:])
        }
    )


# The literals equal to a metric name that name something else, by module (relative to the package).
NOT_METRIC_NAMES = {
    ("core/answers/recall.py", "recall"): "the key of the answer-recall judge's JSON reply",
    ("core/answers/settings.py", "f1"): "a threshold objective: the F1 of the answer classifier",
    ("core/answers/threshold.py", "f1"): "a threshold objective: the F1 of the answer classifier",
    ("core/diagnostics/explain.py", "recall"): "a column header read by people",
    ("core/diagnostics/explain.py", "keyword"): "the keyword (BM25) retriever, not the answer metric",
    ("core/leaderboard/labels.py", "keyword"): "a metric's label read by people (the same word)",
    ("core/leaderboard/labels.py", "hybrid"): "a metric's label read by people (the same word)",
}
METRIC_NAMES_OWNER = "core/metrics/names.py"


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of a module, its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def exported_names(tree: ast.AST) -> set[int]:
    """The ids of the string constants of ``__all__``: the names of functions (``precision_omega``)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            found |= {id(c) for c in ast.walk(node.value) if isinstance(c, ast.Constant)}
    return found


def metric_name_literals(root: Path, metrics: tuple[str, ...] = METRIC_NAMES) -> list[str]:
    """String literals equal to a metric name (retrieval or answer) outside names.py (docstrings and
    ``__all__`` aside)."""
    known = set(metrics)
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative == METRIC_NAMES_OWNER:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = docstrings(tree) | exported_names(tree)
        found += [
            f"{relative}:{node.lineno}: {node.value!r} is a metric name; use core/metrics/names.py's constant"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in known
            and id(node) not in skipped
            and (relative, node.value) not in NOT_METRIC_NAMES
        ]
    return sorted(found)


def violations(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        name = module_name(path, root)
        folder = folder_of(name)
        if name.count(".") == 1 and folder not in ALLOWED and folder not in ROOT_MODULES:
            found.append(
                f"{name}: a module at the package root; put it in core/, defs/, lib/, runner/, annotate/ or cli/"
            )
        for imp in imports_of(path, root):
            top = imp.target.split(".")[0]
            if folder == "core" and (top == "dagster" or top.startswith("dagster_")):
                found.append(f"{name} imports {imp.target}: core/ stays free of Dagster")
            if top != root.name or folder not in ALLOWED:
                continue
            target = folder_of(imp.target)
            if target in ("", "__init__"):  # the package itself: `from .. import x` names x
                continue
            if folder == "runner" and target == "definitions" and imp.lazy:
                continue
            if target not in ALLOWED[folder]:
                found.append(f"{name} imports {imp.target}: {folder}/ may import {sorted(ALLOWED[folder])}")
            stage, other = stage_of(name, root), stage_of(imp.target, root)
            if stage and other and other != stage:
                found.append(f"{name} imports {imp.target}: a stage imports no other stage; move it to lib/")
    return sorted(set(found) | set(private_dagster_imports(root)))


TAG_OWNER = Path("core/runs/run_tags.py")
# a whole string that is a key in one of the two tag namespaces (an f-string's constant part included)
TAG_KEY = re.compile(r"(dagster|rag_eval)/\S*")
# keys of asset metadata, not tags: each has its own owner (lib/io_managers.py, lib/step_failures.py)
METADATA_KEYS = {"dagster/row_count", "rag_eval/bad_input"}


def tag_keys_outside_owner(root: Path) -> list[str]:
    """Tag keys spelled as string literals anywhere in the package but core/runs/run_tags.py: a key in the
    ``dagster/`` or ``rag_eval/`` namespace, or a value the owner gives a key (its other keys, ``user``)."""
    owner = ast.parse((root / TAG_OWNER).read_text(encoding="utf-8"))
    owned = {
        node.value.value
        for node in owner.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        and any(isinstance(t, ast.Name) and t.id.endswith(("_TAG", "_TAG_PREFIX")) for t in node.targets)
    }
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == root / TAG_OWNER:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            key = node.value
            if (TAG_KEY.fullmatch(key) and key not in METADATA_KEYS) or key in owned - {"user"}:
                found.append(
                    f"{module_name(path, root)}:{node.lineno} spells the tag key {key!r}; "
                    "import it from core/runs/run_tags.py (add it there if it is new)"
                )
    return found


def write_files(root: Path, files: dict[str, str]) -> None:
    """A check's test tree: each file (path under ``root``: source text)."""
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")


def test_the_package_keeps_its_layering() -> None:
    assert violations(ROOT) == []


def test_metric_names_are_spelled_only_in_names_py() -> None:
    assert metric_name_literals(ROOT) == []


def test_the_metric_name_check_sees_a_hand_written_name(tmp_path: Path) -> None:
    root = tmp_path / PACKAGE
    files = {
        "core/metrics/names.py": 'SPAN_IOU = "span_iou"\n',
        "core/leaderboard/board.py": 'HEADLINE = ("span_recall", SPAN_IOU)\nrow = {"mrr": 1.0}\n',
        "core/metrics/span_metrics.py": '"""span_recall and span_iou"""\n__all__ = ["precision_omega"]\n',
        "core/answers/threshold.py": 'OBJECTIVES = ("accuracy", "f1")\n',
        "core/other.py": 'def f():\n    """mrr"""\n    return "f1"\n',
        "core/answers/production.py": 'FIELDS = ("aggregated_confidence", "semantic_validation")\n',
        "core/diagnostics/answers.py": 'METHODS = ("hybrid", KEYWORD)\n',
    }
    write_files(root, files)
    found = "\n".join(metric_name_literals(root))
    assert "core/leaderboard/board.py:1: 'span_recall' is a metric name" in found
    assert "core/leaderboard/board.py:2: 'mrr' is a metric name" in found
    assert "core/other.py:3: 'f1' is a metric name" in found
    # answer metrics too (a column that is not a metric, semantic_validation, is not one)
    assert "core/answers/production.py:1: 'aggregated_confidence' is a metric name" in found
    assert "core/diagnostics/answers.py:1: 'hybrid' is a metric name" in found
    flagged = {line.split(":")[0] for line in found.splitlines()}
    assert flagged == {
        "core/leaderboard/board.py",
        "core/other.py",
        "core/answers/production.py",
        "core/diagnostics/answers.py",
    }  # not the owner, a docstring, a function's name in __all__ or an allowed literal
    assert found.count("is a metric name") == 5


def test_the_tests_use_only_dagsters_public_api() -> None:
    assert private_dagster_imports(TESTS) == []


INSTANCES_OWNER = "instances.py"


def direct_test_instances(root: Path) -> list[str]:
    """Calls of Dagster's ``instance_for_test`` in the tests outside ``INSTANCES_OWNER`` (code in strings,
    run by a subprocess, is not a call)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative == INSTANCES_OWNER:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                called = (
                    node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                )
                if called == "instance_for_test":
                    found.append(f"{relative}:{node.lineno} calls instance_for_test: use {INSTANCES_OWNER}")
    return found


def test_the_tests_open_dagster_instances_through_instances_py() -> None:
    assert direct_test_instances(TESTS) == []


def test_the_instance_check_sees_a_direct_call(tmp_path: Path) -> None:
    files = {
        "instances.py": "import dagster as dg\nwith dg.instance_for_test() as i:\n    pass\n",
        "defs/test_a.py": "import dagster as dg\n\nwith dg.instance_for_test(temp_dir='x') as i:\n    pass\n",
        "test_b.py": "from dagster import instance_for_test\ninstance_for_test()\n",
        "test_c.py": 'SCRIPT = """with dg.instance_for_test() as i: pass"""\ninstance_for_tests()\n',
    }
    write_files(tmp_path, files)
    assert direct_test_instances(tmp_path) == [
        "defs/test_a.py:3 calls instance_for_test: use instances.py",
        "test_b.py:2 calls instance_for_test: use instances.py",
    ]


def test_the_check_sees_each_kind_of_violation(tmp_path: Path) -> None:
    root = tmp_path / PACKAGE
    files = {
        "core/metrics.py": "import dagster as dg\nfrom ..lib import resources\n",
        "lib/instance.py": "import dagster as dg\nfrom dagster._core.instance.ref import InstanceRef\n",
        "defs/answers/assets.py": "from ..evaluation.assets import summary\nfrom ...runner import plan\n",
        "defs/evaluation/assets.py": "from ...lib.step_inputs import profile_for\nfrom ..jobs import x\n",
        "lib/resources.py": "from ..defs.jobs import ingestion_job\n",
        "runner/plan.py": "from ..definitions import build_definitions\n\n"
        "def f():\n    from ..definitions import build_definitions\n",
        "cli/runs.py": "def g():\n    from ..defs.evaluation import assets\n    from ..runner import plan\n",
        "cli/configs.py": "from ..lib.resources import ProjectResource\nfrom ..core import project_files\n",
        "flat.py": "",
    }
    write_files(root, files)
    found = "\n".join(violations(root))
    assert "core.metrics imports dagster" in found
    assert "core.metrics imports rag_eval_pipeline.lib" in found
    assert (
        "defs.answers.assets imports rag_eval_pipeline.defs.evaluation.assets.summary: a stage imports"
        in found
    )
    assert "defs.answers.assets imports rag_eval_pipeline.runner" in found
    assert "lib.resources imports rag_eval_pipeline.defs.jobs" in found
    assert found.count("runner.plan imports rag_eval_pipeline.definitions") == 1  # the lazy one is fine
    assert "cli.runs imports rag_eval_pipeline.defs.evaluation" in found
    assert "rag_eval_pipeline.flat: a module at the package root" in found
    assert "lib.instance imports dagster._core.instance.ref.InstanceRef: a private Dagster module" in found
    assert "lib.instance imports dagster:" not in found  # `import dagster as dg` is the public API
    assert "defs.evaluation.assets imports" not in found  # lib/ and defs/jobs.py are every stage's
    assert "cli.runs imports rag_eval_pipeline.runner" not in found
    assert "cli.configs imports rag_eval_pipeline.lib.resources.ProjectResource: cli/ may import" in found
    assert "cli.configs imports rag_eval_pipeline.core" not in found


def test_tag_keys_are_spelled_only_in_core_run_tags() -> None:
    assert tag_keys_outside_owner(ROOT) == []


def test_the_tag_check_sees_a_key_spelled_outside_its_owner(tmp_path: Path) -> None:
    root = tmp_path / PACKAGE
    files = {
        "core/runs/run_tags.py": 'SENSOR_TAG = "dagster/sensor_name"\nDOCUMENTS_TAG_PREFIX = "rag_eval/documents_"\n'
        'USER_TAG = "user"\n',
        "runner/run_status.py": 'SENSOR_TAG = "dagster/sensor_name"\n',
        "defs/sensor.py": 'def tags(kind):\n    return {f"rag_eval/documents_{kind}": "a.md", "user": "x"}\n',
        "lib/jobs.py": 'TAGS = {"rag_eval/brand_new": "1"}\n',
        "lib/io_managers.py": 'ROWS = "dagster/row_count"  # metadata\nNOTE = "see rag_eval/process"\n',
    }
    write_files(root, files)
    found = "\n".join(tag_keys_outside_owner(root))
    assert "rag_eval_pipeline.runner.run_status:1 spells the tag key 'dagster/sensor_name'" in found
    assert "rag_eval_pipeline.defs.sensor:2 spells the tag key 'rag_eval/documents_'" in found
    assert "rag_eval_pipeline.lib.jobs:1 spells the tag key 'rag_eval/brand_new'" in found
    assert "core.runs.run_tags" not in found  # the owner spells them
    assert "'user'" not in found  # too common a word to guard
    assert "io_managers" not in found  # a metadata key, and prose naming a tag


REGISTRY = "cli/registry.py"
CLI_MAIN = "cli/__init__.py"


def registered_commands(root: Path) -> set[str]:
    """The keys of the ``COMMANDS`` dict literal of cli/registry.py."""
    for node in ast.parse((root / REGISTRY).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "COMMANDS" for t in targets):
                return {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    return set()


def command_listings(root: Path) -> list[str]:
    """Where cli/ lists or handles commands besides the registry: a top-level ``commands.add_parser``
    outside it, an ``add_command`` of an unregistered name, an ``if`` in ``run_command``, and a
    ``return 2`` outside cli/__init__.py (an "error: ..." with exit 1, nothing to show, stays the
    handler's)."""
    known = registered_commands(root)
    found = []
    for path in sorted((root / "cli").rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            where = f"{relative}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
                called = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
                receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
                if (
                    called == "add_parser"
                    and isinstance(receiver, ast.Name)
                    and receiver.id == "commands"
                    and relative != REGISTRY
                ):
                    found.append(f"{where}: commands.add_parser outside {REGISTRY}: use add_command")
                name = node.args[1] if called == "add_command" and len(node.args) > 1 else None
                if isinstance(name, ast.Constant) and name.value not in known:
                    found.append(f"{where}: add_command of {name.value!r}, not in {REGISTRY}")
            if (
                isinstance(node, ast.Return)
                and isinstance(node.value, ast.Constant)
                and node.value.value == 2
                and relative != CLI_MAIN
            ):
                found.append(f"{where}: return 2 outside main: raise InputError")
            if (
                isinstance(node, ast.FunctionDef)
                and node.name == "run_command"
                and relative == CLI_MAIN
                and any(isinstance(inner, ast.If) for inner in ast.walk(node))
            ):
                found.append(f"{where}: run_command branches on commands: dispatch through {REGISTRY}")
    return found


def test_commands_are_listed_only_in_the_registry() -> None:
    assert command_listings(ROOT) == []


def test_the_registry_is_the_parsers_commands_and_the_help_table_lists_each() -> None:
    from rag_eval_pipeline.cli import __doc__ as table
    from rag_eval_pipeline.cli import build_parser
    from rag_eval_pipeline.cli.registry import COMMANDS

    subparsers = next(a for a in build_parser()._actions if a.dest == "command")
    assert (
        list(subparsers.choices)
        == list(COMMANDS)
        == sorted(registered_commands(ROOT), key=list(COMMANDS).index)
    )
    rows = [line.split("   ")[0].strip() for line in (table or "").splitlines() if line.startswith("  ")]
    first_words = {row.split()[0] for row in rows}
    segment_words = {segment.split()[0] for row in rows for segment in row.split(" | ")}
    assert first_words <= set(COMMANDS), first_words - set(COMMANDS)  # a table row names a command
    assert set(COMMANDS) <= segment_words, set(COMMANDS) - segment_words  # every command has its row
    for info in COMMANDS.values():
        assert (ROOT / "cli" / f"{info.module}.py").is_file(), info.module


def test_the_command_check_sees_each_kind_of_listing(tmp_path: Path) -> None:
    root = tmp_path / PACKAGE
    files = {
        REGISTRY: 'COMMANDS: dict = {"run": None, "status": None}\n\n'
        "def add_command(commands, name):\n    return commands.add_parser(name)\n",
        CLI_MAIN: "def run_command(args, context):\n"
        '    if args.command == "run":\n        return 1\n    return 2\n',
        "cli/runs.py": "def add_commands(commands):\n"
        '    add_command(commands, "run")\n    add_command(commands, "stats")\n'
        '    commands.add_parser("list")\n    actions.add_parser("show")\n'
        "def handle(args, context):\n"
        '    print("error: no such run", file=sys.stderr)\n    print(f"error: {args.ref}")\n'
        "    return 2\n\ndef code(failure):\n    return 2 if failure.bad_input else 1\n",
    }
    write_files(root, files)
    found = "\n".join(command_listings(root))
    assert "cli/runs.py:3: add_command of 'stats', not in cli/registry.py" in found
    assert "cli/runs.py:4: commands.add_parser outside cli/registry.py" in found
    assert "cli/runs.py:5" not in found  # an action's subparser is its command's business
    assert "cli/runs.py:9: return 2 outside main" in found
    assert "cli/runs.py:12" not in found  # an exit code computed from a failure is the handler's
    assert "cli/__init__.py:1: run_command branches on commands" in found
    assert "cli/__init__.py:4" not in found  # main's own return 2
    assert not [line for line in found.splitlines() if line.startswith(REGISTRY)]  # its add_parser
