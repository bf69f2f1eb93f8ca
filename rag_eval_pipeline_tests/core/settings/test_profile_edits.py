"""Profile edits on the text of data/retrieval_profiles.yaml: comments and layout kept, every value checked
as the pipeline reads the file before anything is written, refusals naming the file, key and remedy."""

from pathlib import Path

import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.settings.configs import load_profiles, profiles_of_text
from rag_eval_pipeline.core.settings.profile_edits import (
    clone_profile,
    create_profile,
    delete_profile,
    parse_assignments,
    update_profile,
)

PROFILES = """\
# Retrieval profiles of the test.
profiles:
  - name: dense-top5
    top_k: 5            # five chunks
    description: Dense, five chunks
  # the hybrid one fuses BM25 in
  - name: hybrid-top5
    top_k: 5
    vector_weight: 0.6
    keyword_weight: 0.4
    version: 7
  - {name: keyword-top5, top_k: 5, vector_weight: 0, keyword_weight: 1}  # BM25 alone
# end
"""


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "retrieval_profiles.yaml"
    path.write_text(PROFILES, encoding="utf-8")
    return path


def comments(text: str) -> list[str]:
    return [line.split("#", 1)[1].strip() for line in text.splitlines() if "#" in line]


def test_assignments_are_yaml_values_checked_against_the_settings() -> None:
    assert parse_assignments(
        ["top_k=10", "reranker=null", "similarity_threshold=0.25", "description=a, b"]
    ) == {
        "top_k": 10,
        "reranker": None,
        "similarity_threshold": 0.25,
        "description": "a, b",
    }
    with pytest.raises(ConfigError, match="unknown setting 'topk'; known: description, judge_model"):
        parse_assignments(["topk=3"])
    with pytest.raises(ConfigError, match="write KEY=VALUE"):
        parse_assignments(["top_k"])
    with pytest.raises(ConfigError, match="clone it under the new name and delete the old one"):
        parse_assignments(["name=other"])


def test_create_appends_in_the_files_style_and_keeps_every_comment(target: Path) -> None:
    edit = create_profile(target, "dense-top3", {"top_k": 3})
    assert (edit.action, edit.normalized) == ("created", False)
    assert comments(edit.text) == comments(PROFILES)
    # after the last entry, which is a flow mapping: the new one is written the same way
    assert "  - {name: dense-top3, top_k: 3}\n# end\n" in edit.text
    assert [p.name for p in profiles_of_text(edit.text, target)][-1] == "dense-top3"


def test_update_rewrites_one_entry_and_refuses_a_wrong_value_naming_the_key(target: Path) -> None:
    edit = update_profile(target, "hybrid-top5", {"keyword_weight": 0.5, "rrf_k": 30}, unset=["version"])
    profiles = {p.name: p for p in profiles_of_text(edit.text, target)}
    assert profiles["hybrid-top5"].keyword_weight == 0.5 and profiles["hybrid-top5"].rrf_k == 30
    assert profiles["hybrid-top5"].version is None  # numbered by the ledger again
    assert "# the hybrid one fuses BM25 in" in edit.text and "# five chunks" in edit.text
    assert edit.changed_keys == ("keyword_weight", "rrf_k", "version")

    with pytest.raises(ConfigError, match=r"retrieval_profiles.yaml: profiles\[0\].top_k must be an integer"):
        update_profile(target, "dense-top5", {"top_k": "ten"})
    with pytest.raises(ConfigError, match="rerank_depth .* must be an integer >= top_k"):
        update_profile(target, "dense-top5", {"top_k": 30})
    with pytest.raises(ConfigError, match="does not set rrf_k"):
        update_profile(target, "dense-top5", {}, unset=["rrf_k"])
    with pytest.raises(ConfigError, match="no retrieval profile named 'nope' in .*; configured: dense-top5"):
        update_profile(target, "nope", {"top_k": 3})
    assert target.read_text(encoding="utf-8") == PROFILES  # nothing is written by the edit itself


def test_delete_removes_the_entry_and_its_lines_only(target: Path) -> None:
    block = delete_profile(target, "hybrid-top5")
    assert [p.name for p in profiles_of_text(block.text, target)] == ["dense-top5", "keyword-top5"]
    assert "vector_weight: 0.6" not in block.text and "# BM25 alone" in block.text and not block.normalized
    flow = delete_profile(target, "keyword-top5")
    assert "BM25 alone" not in flow.text and flow.text.endswith("    version: 7\n# end\n")
    single = target.parent / "one.yaml"
    single.write_text("profiles:\n  - name: only\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="'only' is the only profile"):
        delete_profile(single, "only")


def test_clone_copies_the_settings_but_not_a_pinned_version(target: Path) -> None:
    edit = clone_profile(target, "hybrid-top5", "hybrid-top10", {"top_k": 10})
    target.write_text(edit.text, encoding="utf-8")
    profiles = {p.name: p for p in load_profiles(target)}
    clone, source = profiles["hybrid-top10"], profiles["hybrid-top5"]
    assert (clone.vector_weight, clone.keyword_weight, clone.top_k) == (0.6, 0.4, 10)
    assert clone.version is None and source.version == 7
    assert edit.source == "hybrid-top5"
    with pytest.raises(ConfigError, match="already has a profile named 'dense-top5'"):
        clone_profile(target, "hybrid-top5", "dense-top5", {})


def test_a_flow_list_is_rewritten_in_normalized_form_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text("profiles: [{name: a, top_k: 2}]  # gone\n", encoding="utf-8")
    edit = create_profile(path, "b", {"top_k": 3})
    assert edit.normalized and "# gone" not in edit.text
    assert [p.name for p in profiles_of_text(edit.text, path)] == ["a", "b"]
