"""Where the workspace is (flag, environment, current directory or above, the bundled demo), what
`init` writes (and never overwrites), and that its settings are the demo's own apart from where the
questions come from."""

from pathlib import Path

import pytest
import yaml

from rag_eval_pipeline.core.errors import CorpusError, InputError
from rag_eval_pipeline.core.generation.settings import GenerationSettings
from rag_eval_pipeline.core.project.project_files import ProjectFiles
from rag_eval_pipeline.core.project.workspace import (
    PROJECT_DIR_ENV,
    WORKSPACE_FILE,
    init_workspace,
    load_workspace_settings,
    locate_workspace,
)
from rag_eval_pipeline_tests.conftest import REPO

STORAGES = ("run_storage", "event_log_storage", "schedule_storage")
DOCS = {"guide.md": "# Guide\n\nInstall it first.\n", "notes/faq.md": "# FAQ\n\nAsk the team.\n"}


def documents(folder: Path) -> Path:
    for name, text in DOCS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_the_workspace_is_the_flag_then_the_variable_then_the_current_directory_then_the_demo(
    tmp_path: Path,
) -> None:
    inside = tmp_path / "ws" / "data" / "corpus"
    inside.mkdir(parents=True)
    (tmp_path / "ws" / WORKSPACE_FILE).write_text("corpus: data/corpus\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {PROJECT_DIR_ENV: str(tmp_path / "env")}

    assert locate_workspace("flag", env, inside).root == (Path.cwd() / "flag").resolve()
    assert locate_workspace(None, env, inside).root == tmp_path / "env"
    found = locate_workspace(None, {}, inside)  # the nearest folder above holding rag-eval.yaml
    assert (found.root, found.source) == (tmp_path / "ws", f"{WORKSPACE_FILE} above the current directory")
    assert locate_workspace(None, {}, tmp_path / "ws").source == "the current directory"
    demo = locate_workspace(None, {}, elsewhere)
    assert (demo.root, demo.source) == (REPO, "the bundled demo")
    assert demo.describe() == f"workspace {REPO} (from the bundled demo)"


def test_init_writes_a_workspace_whose_corpus_is_the_documents_where_they_are(tmp_path: Path) -> None:
    docs = documents(tmp_path / "docs")
    created = init_workspace(tmp_path / "team" / "ws", docs)

    root = tmp_path / "team" / "ws"
    assert created.root == root and len(created.corpus) == 2
    assert load_workspace_settings(root).corpus == "../../docs"  # relative: the two move together
    assert load_workspace_settings(root).glob is None
    files = ProjectFiles.in_project(root, {})
    assert files.corpus_folder().resolve() == docs.resolve()
    assert sorted(d.doc_id for d in files.load_corpus()) == ["guide.md", "notes/faq.md"]
    for written in ("data/chunk_configs.yaml", "data/retrieval_profiles.yaml", "dagster.yaml", ".gitignore"):
        assert (root / written).is_file(), written
    assert files.load_settings(GenerationSettings).evaluate_on == "synthetic"  # no golden set yet
    assert files.load_configs().chunk_configs and files.load_configs().profiles
    dagster = yaml.safe_load((root / "dagster.yaml").read_text(encoding="utf-8"))
    assert dagster["telemetry"] == {"enabled": False}
    assert {key: dagster[key]["config"]["base_dir"] for key in STORAGES} == {  # under the workspace
        "run_storage": ".dagster/storage/history",
        "event_log_storage": ".dagster/storage/history/runs",
        "schedule_storage": ".dagster/storage/schedules",
    }
    assert {key: dagster[key]["class"] for key in ("run_storage", "event_log_storage", "compute_logs")} == {
        "run_storage": "EngineKeepingSqliteRunStorage",  # lib/run_storage.py
        "event_log_storage": "EngineKeepingSqliteEventLogStorage",  # lib/event_log_storage.py
        "compute_logs": "ThreadMirroredComputeLogManager",  # lib/compute_logs.py
    }


def test_init_with_a_glob_keeps_it_and_odd_paths_read_back(tmp_path: Path) -> None:
    docs = documents(tmp_path / 'my "docs"')
    init_workspace(tmp_path / "ws", docs, "notes/**/*.md")
    settings = load_workspace_settings(tmp_path / "ws")
    assert settings.glob == "notes/**/*.md"
    assert (tmp_path / "ws" / settings.corpus).resolve() == docs.resolve()
    assert [d.doc_id for d in ProjectFiles.in_project(tmp_path / "ws", {}).load_corpus()] == ["notes/faq.md"]


def test_init_never_overwrites_and_writes_nothing_without_documents(tmp_path: Path) -> None:
    docs = documents(tmp_path / "docs")
    (tmp_path / "ws" / "data").mkdir(parents=True)
    (tmp_path / "ws" / "data" / "chunk_configs.yaml").write_text("mine\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"already holds .*chunk_configs\.yaml: init never overwrites"):
        init_workspace(tmp_path / "ws", docs)
    assert (tmp_path / "ws" / "data" / "chunk_configs.yaml").read_text(encoding="utf-8") == "mine\n"
    assert not (tmp_path / "ws" / WORKSPACE_FILE).exists()

    with pytest.raises(CorpusError, match="does not exist"):
        init_workspace(tmp_path / "other", tmp_path / "missing")
    assert not (tmp_path / "other").exists()


def test_the_templates_are_the_demo_settings_but_for_where_questions_come_from() -> None:
    templates = REPO / "rag_eval_pipeline" / "core" / "project" / "workspace_templates"
    for name in (
        "chunk_configs.yaml",
        "retrieval_profiles.yaml",
        "answer_evaluation.yaml",
        "monitoring.yaml",
        "search.yaml",
    ):
        assert (templates / name).read_text(encoding="utf-8") == (REPO / "data" / name).read_text(
            encoding="utf-8"
        ), name
    template = yaml.safe_load((templates / "generation.yaml").read_text(encoding="utf-8"))
    demo = yaml.safe_load((REPO / "data" / "generation.yaml").read_text(encoding="utf-8"))
    assert template.pop("evaluate_on") == "synthetic" and demo.pop("evaluate_on") == "golden"
    assert template == demo
    instance = yaml.safe_load((templates / "dagster.yaml").read_text(encoding="utf-8"))
    assert instance == yaml.safe_load((REPO / "dagster.yaml").read_text(encoding="utf-8"))
