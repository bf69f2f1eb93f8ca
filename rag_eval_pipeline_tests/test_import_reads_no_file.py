"""Importing the package reads none of the project's files: settings are read when a command runs, a
step executes or the definitions are built, so a broken file fails that, naming the file and the key,
and never an import (`rag-eval --help`, the test collection, the code location's module)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from rag_eval_pipeline_tests.conftest import write_tiny_project

# Every module of the package imported under an audit hook that records each file opened in the
# project; then one settings file read on purpose, to show the hook sees a read.
IMPORT_EVERY_MODULE = """
import importlib, json, pkgutil, sys
root = sys.argv[1]
opened = []
sys.addaudithook(
    lambda event, args: opened.append(args[0])
    if event == "open" and isinstance(args[0], str) and args[0].startswith(root)
    else None
)
import rag_eval_pipeline
for module in pkgutil.walk_packages(rag_eval_pipeline.__path__, "rag_eval_pipeline."):
    if module.name != "rag_eval_pipeline.__main__":
        importlib.import_module(module.name)
on_import = sorted(set(opened))
from rag_eval_pipeline.core.settings.monitoring_settings import MonitoringSettings
from rag_eval_pipeline.core.project.project_files import ProjectFiles, project_dir
ProjectFiles(project_dir()).load_settings(MonitoringSettings)
print(json.dumps({"on_import": on_import, "after_a_read": sorted(set(opened))}))
"""


def test_importing_every_module_opens_no_project_file(tmp_path: Path) -> None:
    project = write_tiny_project(tmp_path / "project").resolve()
    settings = project / "data/monitoring.yaml"
    settings.write_text("nightly:\n  cron: '0 3 * * *'\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_EVAL_", "DAGSTER_"))}
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERY_MODULE, str(project)],
        env={**env, "RAG_EVAL_PROJECT_DIR": str(project)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    opened = json.loads(done.stdout.splitlines()[-1])
    assert opened == {"on_import": [], "after_a_read": [str(settings)]}
