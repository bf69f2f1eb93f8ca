"""Where the project is and where each of its files is; the configs numbered by the version ledger; the
workload estimate, which leaves out a stage whose settings cannot be read."""

from pathlib import Path

import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.project import project_files
from rag_eval_pipeline.core.project.project_files import GOLDEN_DATASET_ENV, ProjectFiles, project_dir
from rag_eval_pipeline.core.project.workload import PROBE_STAGE
from rag_eval_pipeline.core.project.workspace import PROJECT_DIR_ENV
from rag_eval_pipeline_tests.conftest import REPO


def test_the_project_is_the_configured_folder_else_this_checkout(tmp_path: Path) -> None:
    assert project_dir({PROJECT_DIR_ENV: str(tmp_path / "a" / "..")}) == tmp_path.resolve()
    assert project_dir({}) == REPO  # the checkout holds data/


def test_a_location_is_under_the_root_unless_absolute(tmp_path: Path) -> None:
    files = ProjectFiles.in_project(tmp_path, {})
    assert files.path(files.golden_dataset) == tmp_path / "data/datasets/golden_token_level.jsonl"
    assert ProjectFiles.in_project(tmp_path, {GOLDEN_DATASET_ENV: "other/g.jsonl"}).golden_dataset == (
        "other/g.jsonl"
    )
    elsewhere = ProjectFiles.in_project(tmp_path, {GOLDEN_DATASET_ENV: "/srv/golden.jsonl"})
    assert elsewhere.path(elsewhere.golden_dataset) == Path("/srv/golden.jsonl")
    with pytest.raises(ConfigError, match="one path component"):
        files.keyword_index_folder("..")


def test_configs_carry_their_profile_versions_and_the_chunk_config_cap(tiny_project: Path) -> None:
    files = ProjectFiles(tiny_project)
    chunk_configs = files.path(files.chunk_configs_file)
    chunk_configs.write_text("max_chunk_configs: 3\n" + chunk_configs.read_text(encoding="utf-8"))
    first = files.load_configs()
    assert first.max_chunk_configs == 3
    assert {p.version for p in first.profiles} == {1}
    assert files.path(files.profile_versions_file).is_file()  # the ledger records what it numbered

    profiles = files.path(files.profiles_file)
    profiles.write_text(profiles.read_text(encoding="utf-8").replace("top_k: 4", "top_k: 3"))
    changed = files.load_configs().profile("top4")
    assert changed.version == 2 and changed.config_hash != first.profile("top4").config_hash


def test_configs_are_parsed_again_only_when_a_file_changed(
    tiny_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every step reads the configs: a process parses them again only when the chunk configs, the
    profiles or the version ledger changed, however small the change and however soon."""
    parsed: list[object] = []
    parse = project_files.load_pipeline_configs

    def counting(*paths: object) -> object:
        parsed.append(paths)
        return parse(*paths)  # type: ignore[arg-type]

    monkeypatch.setattr(project_files, "load_pipeline_configs", counting)
    files = ProjectFiles(tiny_project)
    first = files.load_configs()
    assert [files.load_configs() for _ in range(3)] == [first] * 3 and len(parsed) == 1
    assert ProjectFiles(tiny_project).load_configs() == first and len(parsed) == 1  # another step's
    profiles = files.path(files.profiles_file)
    profiles.write_text(profiles.read_text(encoding="utf-8").replace("top_k: 4", "top_k: 3"))  # same size
    changed = files.load_configs()
    assert len(parsed) == 2 and changed.profile("top4").top_k == 3 and changed.profile("top4").version == 2
    assert files.load_configs() == changed and len(parsed) == 2  # the ledger it wrote: read, not parsed
    files.path(files.profile_versions_file).unlink()  # the ledger gone: numbered anew
    assert files.load_configs().profile("top4").version == 1 and len(parsed) == 3


def test_the_workload_leaves_out_a_stage_whose_settings_cannot_be_read(tiny_project: Path) -> None:
    files = ProjectFiles(tiny_project)
    whole = files.workload()
    assert not whole.warnings()
    files.path(files.chunk_configs_file).write_text("chunk_configs: [", encoding="utf-8")
    files.path(files.generation_file).write_text("token_level: 3\n", encoding="utf-8")
    broken = files.workload().warnings()
    assert any(w.startswith("no estimate for chunking, the chunk configs cannot be read") for w in broken)
    assert any(w.startswith("no estimate for synthetic_questions, its settings cannot be") for w in broken)
    assert files.workload(ingestion=False).warnings() == tuple(w for w in broken if "synthetic" not in w)


def test_the_probe_is_a_stage_of_its_own_only_when_no_estimated_chunk_config_serves_it(
    tiny_project: Path,
) -> None:
    """Issue 34: the retrievability probe searches a configured chunk config's chunks (recursive-120-20
    here), which that config's stage already counts; with that config not selected, its chunks are the
    probe's own stage, and without any config that can serve, the probe's own passages are."""
    files = ProjectFiles(tiny_project)
    files.path(files.generation_file).write_text(
        "evaluate_on: both\ntoken_level: {retrievability_top_n: 5}\n", encoding="utf-8"
    )
    assert [s.stage for s in files.workload().stages] == ["fixed-60-0", "recursive-120-20"]
    alone = files.workload(["fixed-60-0"]).stages
    assert [s.stage for s in alone] == ["fixed-60-0", PROBE_STAGE]
    assert alone[1].n_chunks == files.workload(["recursive-120-20"]).stages[0].n_chunks
    files.path(files.chunk_configs_file).write_text(
        "chunk_configs:\n  - {name: semantic, chunker: semantic, chunk_size: 400}\n", encoding="utf-8"
    )
    assert [s.stage for s in files.workload().stages] == ["semantic", PROBE_STAGE]
