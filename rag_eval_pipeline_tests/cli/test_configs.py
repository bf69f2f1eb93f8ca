"""`rag-eval profiles list|show` and `rag-eval chunk-configs list|apply` on the tiny project."""

import json
from pathlib import Path

import dagster as dg
import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.project.project_files import ProjectFiles
from rag_eval_pipeline.core.runs.run_tags import EVALUATION_ID_TAG, PARTITION_TAG
from rag_eval_pipeline.core.settings.chunk_config_edits import merge_chunk_configs, read_chunk_config_file
from rag_eval_pipeline.core.settings.chunk_config_presets import PRESETS_FILE, load_presets
from rag_eval_pipeline.core.settings.configs import load_chunk_configs
from rag_eval_pipeline.lib.partitions import CHUNK_CONFIG
from rag_eval_pipeline.runner.instance import project_instance

COMMENTED_CONFIGS = """\
# Chunk configs of the tiny project.
max_chunk_configs: 4
chunk_configs:
  - name: fixed-60-0
    chunker: fixed
    chunk_size: 60      # characters
  # the recursive one keeps paragraphs together
  - name: recursive-120-20
    chunker: recursive
    chunk_size: 120
    chunk_overlap: 20
# end of the list
"""


@pytest.fixture
def project(project: Path) -> Path:
    """The shared tiny project (cli/conftest.py) with commented chunk configs."""
    (project / "data/chunk_configs.yaml").write_text(COMMENTED_CONFIGS, encoding="utf-8")
    return project


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_apply_merges_by_name_keeps_comments_and_adds_the_partition(
    project: Path, capsys: pytest.CaptureFixture
) -> None:
    source = write(
        project / "more.yaml",
        "chunk_configs:\n"
        "  - {name: fixed-60-0, chunker: fixed, chunk_size: 60}\n"  # same settings, written otherwise
        "  - name: recursive-120-20\n    chunker: recursive\n    chunk_size: 150\n    chunk_overlap: 20\n"
        '  - name: sep-80\n    chunker: recursive\n    chunk_size: 80\n    separators: ["\\n\\n", " "]\n',
    )
    assert main(["chunk-configs", "apply", str(source)]) == 0
    out = capsys.readouterr().out
    assert "1 added (sep-80), 1 changed (recursive-120-20), 1 unchanged (fixed-60-0)" in out
    assert "partitions added: chunk_config fixed-60-0, recursive-120-20, sep-80" in out

    target = project / "data/chunk_configs.yaml"
    text = target.read_text(encoding="utf-8")
    for comment in (
        "# Chunk configs of the tiny project.",
        "# characters",
        "# the recursive one",
        "# end of",
    ):
        assert comment in text
    configs = {c.name: c for c in load_chunk_configs(target)}
    assert list(configs) == ["fixed-60-0", "recursive-120-20", "sep-80"]
    assert configs["recursive-120-20"].chunk_size == 150
    assert configs["sep-80"].separators == ("\n\n", " ")
    with project_instance(project) as instance:
        assert set(instance.get_dynamic_partitions(CHUNK_CONFIG)) == set(configs)

    assert main(["chunk-configs", "apply", str(source)]) == 0  # the same file again changes nothing
    out = capsys.readouterr().out
    assert "0 added, 0 changed, 3 unchanged" in out and "partitions: already in step" in out
    assert target.read_text(encoding="utf-8") == text


def test_apply_edits_flow_entries_in_place_and_normalizes_a_flow_list(tmp_path: Path) -> None:
    flow_entries = write(
        tmp_path / "entries.yaml",
        "chunk_configs:\n  - {name: a, chunker: fixed, chunk_size: 10}  # keep me\n"
        "  - {name: b, chunker: fixed, chunk_size: 20}\n",
    )
    changes = read_chunk_config_file(
        write(
            tmp_path / "in.yaml",
            "- {name: a, chunker: fixed, chunk_size: 12}\n- {name: c, chunker: token, chunk_size: 8}\n",
        )
    )
    merged = merge_chunk_configs(flow_entries, changes)
    assert (merged.added, merged.changed, merged.normalized) == (("c",), ("a",), False)
    assert "{name: a, chunker: fixed, chunk_size: 12}  # keep me" in merged.text
    assert "  - {name: c, chunker: token, chunk_size: 8}\n" in merged.text

    flow_list = write(
        tmp_path / "list.yaml", "chunk_configs: [{name: a, chunker: fixed, chunk_size: 10}]  # gone\n"
    )
    merged = merge_chunk_configs(flow_list, changes)
    assert merged.normalized and "# gone" not in merged.text
    written = write(tmp_path / "out.yaml", merged.text)
    assert [c.chunk_size for c in load_chunk_configs(written)] == [12, 8]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "chunk_configs:\n  - {name: ok-1, chunker: fixed, chunk_size: 10}\n"
            "  - {name: bad, chunker: fixed, chunk_size: 10, chunk_overlap: 10}\n",
            "chunk config 'bad': chunk_overlap (10) must be smaller than chunk_size (10); lower the overlap",
        ),
        (
            "chunk_configs:\n  - {name: x, chunker: fixed, chunk_size: 10, size: 3}\n",
            "unknown key(s) chunk_configs[0].size",
        ),
        ("chunk_configs:\n  - {name: 'a|b', chunker: fixed, chunk_size: 10}\n", "rename it"),
        ("chunk_configs: {name: x}\n", "expected a non-empty list under chunk_configs"),
        ("max_chunk_configs: 20\nchunk_configs: []\n", "unknown top-level key(s) max_chunk_configs"),
        (
            "- {name: x, chunker: fixed, chunk_size: 10}\n- {name: x, chunker: fixed, chunk_size: 20}\n",
            "two entries are named 'x'",
        ),
        (
            "- {name: n1, chunker: fixed, chunk_size: 10}\n- {name: n2, chunker: fixed, chunk_size: 20}\n"
            "- {name: n3, chunker: fixed, chunk_size: 30}\n",
            "than max_chunk_configs (4)",
        ),
    ],
)
def test_apply_rejects_bad_input_with_file_key_and_remedy_and_leaves_the_file(
    project: Path, capsys: pytest.CaptureFixture, content: str, expected: str
) -> None:
    source = write(project / "bad.yaml", content)
    assert main(["chunk-configs", "apply", str(source)]) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert str(source) in err or "data/chunk_configs.yaml" in err
    assert (project / "data/chunk_configs.yaml").read_text(encoding="utf-8") == COMMENTED_CONFIGS


def test_lists_show_the_configured_names_versions_and_hashes(
    project: Path, capsys: pytest.CaptureFixture
) -> None:
    configs = ProjectFiles(project).load_configs()
    assert main(["chunk-configs", "list"]) == 0
    out = capsys.readouterr().out
    for config in configs.chunk_configs:
        row = next(line for line in out.splitlines() if line.startswith(config.name + " "))
        assert config.config_hash in row and config.chunker in row
    assert "2 of at most 4 (max_chunk_configs)" in out

    assert main(["profiles", "list"]) == 0
    out = capsys.readouterr().out
    for profile in configs.profiles:
        row = next(line for line in out.splitlines() if line.startswith(profile.name + " "))
        assert f"v{profile.version}" in row and profile.config_hash in row


def test_profile_show_prints_every_setting_and_the_version_history(
    project: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["profiles", "show", "top4"]) == 0
    first = capsys.readouterr().out
    assert "version: 1" in first and "  top_k: 4" in first and "  rerank_depth: 20" in first
    profiles = project / "data/retrieval_profiles.yaml"
    profiles.write_text(profiles.read_text().replace("top_k: 4", "top_k: 3"), encoding="utf-8")
    assert main(["profiles", "show", "top4"]) == 0
    second = capsys.readouterr().out
    new_hash = ProjectFiles(project).load_configs().profile("top4").config_hash
    assert "version: 2" in second and f"hash: {new_hash}" in second and "  top_k: 3" in second
    history = second.split("versions recorded in", 1)[1]
    assert "  v1  " in history and "  v2  " in history and new_hash in history

    assert main(["profiles", "show", "nope"]) == 2
    assert "no retrieval profile named 'nope'" in capsys.readouterr().err


def test_presets_print_without_a_workspace_and_apply_into_one(
    project: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAG_EVAL_PROJECT_DIR", str(tmp_path / "no-workspace"))
    assert main(["chunk-configs", "presets"]) == 0
    assert capsys.readouterr().out == PRESETS_FILE.read_text(encoding="utf-8")
    assert main(["chunk-configs", "presets", "cl100k-recursive-250-125", "cl100k-token-200-0"]) == 0
    chosen = write(tmp_path / "chosen.yaml", capsys.readouterr().out)
    presets = {c.name: c for c in load_presets()}
    assert read_chunk_config_file(chosen)[0].config == presets["cl100k-recursive-250-125"]
    assert [e.config for e in read_chunk_config_file(chosen)][1] == presets["cl100k-token-200-0"]
    assert main(["chunk-configs", "presets", "cl100k-token-999"]) == 2
    assert "no preset named cl100k-token-999; the presets are: cl100k-token-200-0" in capsys.readouterr().err

    monkeypatch.setenv("RAG_EVAL_PROJECT_DIR", str(project))
    assert main(["chunk-configs", "apply", str(chosen)]) == 0
    assert "2 added (cl100k-recursive-250-125, cl100k-token-200-0)" in capsys.readouterr().out
    assert main(["chunk-configs", "list"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line}
    assert "length tokens; tokenizer cl100k_base" in rows["cl100k-recursive-250-125"]
    assert "tokenizer cl100k_base" in rows["cl100k-token-200-0"]


@pytest.mark.slow
def test_apply_run_evaluates_only_the_new_config_as_one_evaluation(
    project: Path, capsys: pytest.CaptureFixture
) -> None:
    source = write(project / "new.yaml", "- {name: fixed-90-0, chunker: fixed, chunk_size: 90}\n")
    assert main(["chunk-configs", "apply", str(source), "--run"]) == 0
    out = capsys.readouterr().out
    evaluation_id = out.split("evaluation ", 1)[1].split()[0]
    assert f"evaluation {evaluation_id}: 5 runs planned, 5 ran (5 succeeded, 0 failed), 0 not run" in out
    with project_instance(project) as instance:
        runs = instance.get_runs(dg.RunsFilter(tags={EVALUATION_ID_TAG: evaluation_id}))
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
        partitions = sorted((r.job_name, r.tags.get(PARTITION_TAG, "")) for r in runs)
    assert partitions == [
        ("chunking_job", "fixed-90-0"),
        ("evaluation_job", "fixed-90-0|top2"),
        ("evaluation_job", "fixed-90-0|top4"),
        ("ingestion_job", ""),
        ("leaderboard_job", ""),
    ]


# ---------------------------------------------------------------------------------------------------
# profiles create | update | delete | clone


COMMENTED_PROFILES = """\
# Profiles of the tiny project.
profiles:
  - name: top2
    top_k: 2      # two chunks
  # four chunks, for recall
  - name: top4
    top_k: 4
"""


def test_profile_commands_edit_the_file_in_place_and_number_versions_as_a_hand_edit(
    project: Path, capsys: pytest.CaptureFixture
) -> None:
    profiles = write(project / "data/retrieval_profiles.yaml", COMMENTED_PROFILES)
    files = ProjectFiles(project)

    assert main(["profiles", "create", "hybrid-top3", "--set", "top_k=3", "--set", "keyword_weight=0.5"]) == 0
    out = capsys.readouterr().out
    created = files.load_configs().profile("hybrid-top3")
    assert f"created profile hybrid-top3 v1 (hash {created.config_hash})" in out
    added = next(line for line in out.splitlines() if line.startswith("partitions added: profile "))
    assert "hybrid-top3" in added  # (with top2 and top4: the test's instance had none yet)
    assert created.retrievers == ("knn", "bm25") and created.top_k == 3
    with project_instance(project) as instance:
        assert "hybrid-top3" in instance.get_dynamic_partitions("profile")

    assert main(["profiles", "update", "hybrid-top3", "--set", "top_k=5", "--format", "json"]) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert (record["action"], record["profile"], record["version"], record["top_k"]) == (
        "updated",
        "hybrid-top3",
        2,
        5,
    )
    assert main(["profiles", "update", "hybrid-top3", "--set", "top_k=3"]) == 0  # settings seen before
    assert "updated profile hybrid-top3 v1" in capsys.readouterr().out
    assert main(["profiles", "update", "hybrid-top3", "--set", "description=fused"]) == 0
    assert "same version, settings that change no result" in capsys.readouterr().out

    assert main(["profiles", "clone", "top4", "top4-rerank", "--set", "top_k=6", "--format", "csv"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.startswith("action,profile,version,hash") and row.startswith("cloned,top4-rerank,1,")
    assert files.load_configs().profile("top4-rerank").top_k == 6

    text = profiles.read_text(encoding="utf-8")
    assert "# Profiles of the tiny project." in text and "# two chunks" in text and "# four chunks" in text

    assert main(["profiles", "delete", "top4-rerank"]) == 0
    out = capsys.readouterr().out
    assert "deleted profile top4-rerank v1" in out and "its partitions, history and versions are kept" in out
    assert [p.name for p in files.load_configs().profiles] == ["top2", "top4", "hybrid-top3"]
    assert [v["version"] for v in files.profile_versions().history("top4-rerank")] == [1]  # kept
    with project_instance(project) as instance:  # its partition stays, with its history
        assert "top4-rerank" in instance.get_dynamic_partitions("profile")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["profiles", "create", "top2"], "already has a profile named 'top2'"),
        (
            ["profiles", "create", "x", "--set", "top_k=0"],
            "profiles[2]: retrieval profile 'x': top_k must be an integer >= 1",
        ),
        (["profiles", "create", "a|b"], "rename it"),
        (["profiles", "update", "top2", "--set", "k=3"], "unknown setting 'k'; known:"),
        (["profiles", "update", "top2"], "nothing to update: give --set KEY=VALUE or --unset KEY"),
        (["profiles", "update", "nope", "--set", "top_k=3"], "no retrieval profile named 'nope'"),
        (["profiles", "clone", "top2", "top4"], "already has a profile named 'top4'"),
        (["profiles", "delete", "nope"], "no retrieval profile named 'nope'"),
    ],
)
def test_profile_edits_on_bad_input_exit_2_and_leave_the_file(
    project: Path, capsys: pytest.CaptureFixture, argv: list[str], expected: str
) -> None:
    profiles = write(project / "data/retrieval_profiles.yaml", COMMENTED_PROFILES)
    assert main(argv) == 2
    assert expected in capsys.readouterr().err
    assert profiles.read_text(encoding="utf-8") == COMMENTED_PROFILES


# ---------------------------------------------------------------------------------------------------
# chunk-configs apply NAME --document DOC


def test_apply_to_documents_extends_a_configs_documents_and_counts_the_affected_ones(
    project: Path, capsys: pytest.CaptureFixture
) -> None:
    target = project / "data/chunk_configs.yaml"
    write(
        target,
        COMMENTED_CONFIGS.replace(
            "    chunk_size: 60      # characters\n",
            "    chunk_size: 60      # characters\n    documents: [alpha/pumps.md]\n",
        ),
    )
    assert (
        main(
            [
                "chunk-configs",
                "apply",
                "fixed-60-0",
                "--document",
                "alpha/*.md",
                "--document",
                "beta/staff.md",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("affected_documents: 2\n")
    assert "fixed-60-0 now applies to 3 of 3 documents; added: alpha/valves.md, beta/staff.md" in out
    configs = {c.name: c for c in load_chunk_configs(target)}
    assert configs["fixed-60-0"].documents == ("alpha/pumps.md", "alpha/valves.md", "beta/staff.md")
    assert "# characters" in target.read_text(encoding="utf-8")  # the file's comments are kept

    assert (
        main(["chunk-configs", "apply", "fixed-60-0", "--document", "beta/staff.md", "--format", "json"]) == 0
    )
    (record,) = json.loads(capsys.readouterr().out)
    assert record == {
        "chunk_config": "fixed-60-0",
        "affected_documents": 0,
        "documents": 3,
        "of_documents": 3,
        "added": [],
    }
    # a config over every document covers it already: nothing to do
    assert main(["chunk-configs", "apply", "recursive-120-20", "--document", "beta/staff.md"]) == 0
    out = capsys.readouterr().out
    assert "affected_documents: 0" in out and "applies to every document of the corpus already (3)" in out

    assert main(["chunk-configs", "list"]) == 0
    assert (
        "applies to 3 documents (alpha/pumps.md, alpha/valves.md, beta/staff.md)" in capsys.readouterr().out
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["fixed-60-0", "--document", "alpha/nope.md"],
            "--document: 'alpha/nope.md' names no document of the corpus; its 3 documents are: alpha/pumps.md",
        ),
        (["fixed-60-0", "--document", "gamma/*.md"], "'gamma/*.md' names no document"),
        (["nope", "--document", "beta/staff.md"], "no chunk config named 'nope'"),
        (["fixed-60-0"], "fixed-60-0 is a configured chunk config: give --document DOC_ID"),
        (["missing.yaml"], "missing.yaml does not exist: give the path of a YAML file of chunk configs"),
        (["scoped.yaml"], "scoped.yaml: api-only: documents: 'api/auth.md' names no document of the corpus"),
    ],
)
def test_apply_to_documents_on_bad_input_exits_2_naming_what_to_fix(
    project: Path, capsys: pytest.CaptureFixture, argv: list[str], expected: str
) -> None:
    write(
        project / "scoped.yaml",
        "- {name: api-only, chunker: fixed, chunk_size: 50, documents: [api/auth.md]}\n",
    )
    assert main(["chunk-configs", "apply", *argv]) == 2
    assert expected in capsys.readouterr().err
    assert (project / "data/chunk_configs.yaml").read_text(encoding="utf-8") == COMMENTED_CONFIGS
