from pathlib import Path

import pytest

from rag_eval_pipeline.core.configs import ChunkConfig, RetrievalProfile, load_chunk_configs, load_profiles
from rag_eval_pipeline.core.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "configs.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_loads_configs_and_hash_tracks_settings(tmp_path: Path):
    path = write(
        tmp_path, "chunk_configs:\n  - {name: a, chunker: fixed, chunk_size: 100, chunk_overlap: 10}\n"
    )
    (config,) = load_chunk_configs(path)
    assert config == ChunkConfig("a", "fixed", 100, 10)  # type: ignore[arg-type]
    assert config.config_hash != ChunkConfig("a", "fixed", 100, 11).config_hash  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "{name: a, chunker: fixed, chunk_size: 100, chunk_overlap: 100}",
            "chunk_overlap \\(100\\) must be smaller",
        ),
        ("{name: a, chunker: magic, chunk_size: 100}", "unknown chunker 'magic'"),
        ("{name: 'a|b', chunker: fixed, chunk_size: 100}", "must match"),
        ("{name: 'a,b', chunker: fixed, chunk_size: 100}", "partition key"),
        ("{name: a, chunker: fixed, chunk_size: 0}", "chunk_size must be a positive integer"),
        ("{name: a, chunker: fixed, chunk_size: 10, colour: red}", "unknown field\\(s\\) colour"),
        ("{chunker: fixed, chunk_size: 10}", "missing field 'name'"),
    ],
)
def test_bad_chunk_configs_name_the_file_and_key(tmp_path: Path, entry: str, message: str):
    path = write(tmp_path, f"chunk_configs:\n  - {entry}\n")
    with pytest.raises(ConfigError, match=message) as err:
        load_chunk_configs(path)
    assert str(path) in str(err.value)


def test_duplicate_names_are_refused(tmp_path: Path):
    path = write(
        tmp_path,
        "chunk_configs:\n  - {name: a, chunker: fixed, chunk_size: 10}\n  - {name: a, chunker: fixed, chunk_size: 20}\n",
    )
    with pytest.raises(ConfigError, match="two entries named 'a'"):
        load_chunk_configs(path)


def test_more_configs_than_the_maximum_are_refused(tmp_path: Path):
    entries = "".join(f"  - {{name: c{i}, chunker: fixed, chunk_size: 10}}\n" for i in range(11))
    path = write(tmp_path, "chunk_configs:\n" + entries)
    with pytest.raises(ConfigError, match="11 chunk configs exceed the maximum of 10"):
        load_chunk_configs(path)
    raised = write(tmp_path, "max_chunk_configs: 12\nchunk_configs:\n" + entries)
    assert len(load_chunk_configs(raised)) == 11


def test_profiles_validate_top_k(tmp_path: Path):
    path = write(tmp_path, "profiles:\n  - {name: p, top_k: 0}\n")
    with pytest.raises(ConfigError, match="top_k must be an integer >= 1"):
        load_profiles(path)
    assert RetrievalProfile("p", 3).config_hash != RetrievalProfile("p", 4).config_hash  # type: ignore[arg-type]


def test_missing_and_malformed_files(tmp_path: Path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_profiles(tmp_path / "none.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_profiles(write(tmp_path, "profiles: [\n"))
    with pytest.raises(ConfigError, match="non-empty list under the key 'profiles'"):
        load_profiles(write(tmp_path, "profiles: []\n"))


def test_bundled_configs_load():
    root = Path(__file__).resolve().parents[2] / "data"
    assert len(load_chunk_configs(root / "chunk_configs.yaml")) >= 4
    assert {p.top_k for p in load_profiles(root / "retrieval_profiles.yaml")} >= {5, 10}


def test_semantic_takes_no_overlap_and_sizes_must_be_real_integers():
    with pytest.raises(ConfigError, match="takes no chunk_overlap"):
        ChunkConfig("s", "semantic", 500, 50)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="chunk_size must be a positive integer"):
        ChunkConfig("b", "fixed", True)  # type: ignore[arg-type]


def test_hash_covers_settings_not_the_name():
    assert ChunkConfig("a", "fixed", 100).config_hash == ChunkConfig("b", "fixed", 100).config_hash  # type: ignore[arg-type]
