import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.settings.configs import RetrievalProfile
from rag_eval_pipeline.core.settings.profile_versions import ProfileVersions

DENSE = RetrievalProfile("dense", 5)  # type: ignore[arg-type]
HYBRID = RetrievalProfile("hybrid", 5, vector_weight=0.6, keyword_weight=0.4)  # type: ignore[arg-type]


def test_editing_a_profile_bumps_its_version_and_reverting_returns_the_old_one(tmp_path: Path):
    ledger = ProfileVersions(tmp_path / "versions.json")
    first = ledger.assign([DENSE, HYBRID])
    assert [p.version for p in first] == [1, 1]
    assert ledger.assign([DENSE, HYBRID]) == first  # unchanged settings: same numbers, nothing written
    edited = replace(DENSE, top_k=8)
    (v2,) = ledger.assign([edited])
    assert v2.version == 2 and v2.config_hash != first[0].config_hash
    (reverted,) = ledger.assign([DENSE])
    assert reverted.version == 1
    (v3,) = ledger.assign([replace(DENSE, similarity_threshold=0.2)])
    assert v3.version == 3
    history = ledger.history("dense")
    assert [h["version"] for h in history] == [1, 2, 3]
    assert history[1]["settings"]["top_k"] == 8
    # a description edit is not a new version
    (described,) = ledger.assign([replace(DENSE, description="now with words")])
    assert described.version == 1


def test_a_version_written_in_the_file_wins(tmp_path: Path):
    ledger = ProfileVersions(tmp_path / "versions.json")
    (pinned,) = ledger.assign([replace(DENSE, version=7)])
    assert pinned.version == 7
    (next_one,) = ledger.assign([replace(DENSE, top_k=9)])
    assert next_one.version == 8


def test_concurrent_loads_number_alike(tmp_path: Path):
    path = tmp_path / "versions.json"
    profiles = [replace(DENSE, top_k=k) for k in range(1, 9)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda p: ProfileVersions(path).assign([p]), profiles))
    versions = sorted(h["version"] for h in ProfileVersions(path).history("dense"))
    assert versions == list(range(1, 9))


def test_a_broken_ledger_says_what_to_do(tmp_path: Path):
    path = tmp_path / "versions.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="versions.json is not a profile version ledger.*delete it"):
        ProfileVersions(path).assign([DENSE])
    path.write_text(json.dumps({"profiles": []}), encoding="utf-8")
    with pytest.raises(ConfigError, match="not a mapping"):
        ProfileVersions(path).assign([DENSE])
