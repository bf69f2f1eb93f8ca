"""`rag-eval ui` starts `dagster dev` in the workspace (its dagster.yaml), naming the code location as
pyproject.toml does, with the workspace in the environment for the definitions to read."""

import tomllib
from pathlib import Path

from rag_eval_pipeline.core.workspace import PROJECT_DIR_ENV
from rag_eval_pipeline.runner.ui import CODE_LOCATION_MODULE, CODE_LOCATION_NAME, ui_command
from rag_eval_pipeline_tests.conftest import REPO


def test_the_ui_runs_in_the_workspace_with_the_code_location_of_pyproject(tmp_path: Path) -> None:
    command = ui_command(tmp_path, port=3210, environ={"PATH": "/bin", PROJECT_DIR_ENV: "/elsewhere"})
    assert command.cwd == tmp_path and command.url == "http://127.0.0.1:3210"
    assert command.env == {"PATH": "/bin", PROJECT_DIR_ENV: str(tmp_path)}
    assert command.args[command.args.index("-w") + 1] == str(command.code_locations)
    assert command.code_locations.is_relative_to(tmp_path / ".dagster")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["dg"]["project"]
    assert (
        project["code_location_target_module"],
        project["code_location_name"],
    ) == (CODE_LOCATION_MODULE, CODE_LOCATION_NAME)
