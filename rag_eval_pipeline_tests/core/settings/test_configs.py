from pathlib import Path

import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.settings.configs import (
    ChunkConfig,
    RetrievalProfile,
    load_chunk_configs,
    load_profiles,
)
from rag_eval_pipeline.core.types import ProfileName


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
        (
            "{name: a, chunker: magic, chunk_size: 100}",
            "chunk_configs\\[0\\].chunker must be one of fixed, recursive, token, semantic; got 'magic'",
        ),
        ("{name: 'a|b', chunker: fixed, chunk_size: 100}", "chunk_configs\\[0\\]: chunk config 'a|b'"),
        ("{name: 'a,b', chunker: fixed, chunk_size: 100}", "partition key and a folder name; rename it"),
        ("{name: ., chunker: fixed, chunk_size: 100}", "chunk config '.': the name must start with"),
        ("{name: '..', chunker: fixed, chunk_size: 100}", "chunk config '..': the name must start with"),
        ("{name: .hidden, chunker: fixed, chunk_size: 100}", "'.hidden': the name must start with"),
        (f"{{name: {'a' * 65}, chunker: fixed, chunk_size: 100}}", "at most 64 characters"),
        ("{name: 7, chunker: fixed, chunk_size: 100}", "chunk_configs\\[0\\].name must be a string, got 7"),
        ("{name: a, chunker: fixed, chunk_size: 0}", "chunk_size must be a positive integer"),
        (
            "{name: a, chunker: fixed, chunk_size: 10, colour: red}",
            "unknown key\\(s\\) chunk_configs\\[0\\].colour",
        ),
        ("{chunker: fixed, chunk_size: 10}", "missing key\\(s\\) chunk_configs\\[0\\].name"),
        (
            "{name: a, chunker: recursive, chunk_size: 10, separators: abc}",
            "chunk_configs\\[0\\].separators must be a list of strings, got 'abc'",
        ),
        (
            "{name: a, chunker: fixed, chunk_size: '100'}",
            "chunk_configs\\[0\\].chunk_size must be an integer",
        ),
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


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("lots", "max_chunk_configs must be an integer, got 'lots'"),
        ("null", "max_chunk_configs must be an integer, got null"),
        ("true", "max_chunk_configs must be an integer, got true"),
        ("0", "max_chunk_configs must be an integer >= 1, got 0"),
    ],
)
def test_a_bad_maximum_names_the_file_and_key(tmp_path: Path, value: str, message: str):
    path = write(
        tmp_path,
        f"max_chunk_configs: {value}\nchunk_configs:\n  - {{name: a, chunker: fixed, chunk_size: 9}}\n",
    )
    with pytest.raises(ConfigError) as err:
        load_chunk_configs(path)
    assert str(err.value) == f"{path}: {message}"


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
    root = Path(__file__).resolve().parents[3] / "data"
    assert len(load_chunk_configs(root / "chunk_configs.yaml")) >= 4
    assert {p.top_k for p in load_profiles(root / "retrieval_profiles.yaml")} >= {5, 10}


def test_semantic_takes_no_overlap_and_sizes_must_be_real_integers():
    with pytest.raises(ConfigError, match="takes no chunk_overlap"):
        ChunkConfig("s", "semantic", 500, 50)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="chunk_size must be a positive integer"):
        ChunkConfig("b", "fixed", True)  # type: ignore[arg-type]


def test_hash_covers_settings_not_the_name():
    assert ChunkConfig("a", "fixed", 100).config_hash == ChunkConfig("b", "fixed", 100).config_hash  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ("vector_weight: -0.1", "vector_weight must be a number >= 0"),
        ("vector_weight: 0, keyword_weight: 0", "both 0, so nothing would be retrieved"),
        ("rrf_k: -1", "rrf_k must be a number >= 0"),
        ("similarity_threshold: 1.5", "must lie in \\[-1, 1\\]"),
        ("similarity_threshold: 0.3, vector_weight: 0, keyword_weight: 1", "vector_weight is 0"),
        (
            "top_k: 8, reranker: models/ce, rerank_depth: 5",
            "rerank_depth \\(5\\) must be an integer >= top_k",
        ),
        ("query_rewrite_prompt: '  '", "query_rewrite_prompt must be a non-empty string"),
        ("version: 0", "version must be an integer >= 1"),
    ],
)
def test_bad_profiles_name_the_file_profile_and_field(tmp_path: Path, fields: str, message: str):
    path = write(tmp_path, f"profiles:\n  - {{name: p, {fields}}}\n")
    with pytest.raises(ConfigError, match=message) as err:
        load_profiles(path)
    assert f"{path}: profiles[0]: retrieval profile 'p': " in str(err.value)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ("keyword_weight: many", "keyword_weight must be a number, got 'many'"),
        ("query_rewrite_enabled: 'yes'", "query_rewrite_enabled must be true or false, got 'yes'"),
        ("reranker: 3", "reranker must be a string or null, got 3"),
        ("top_k: 2.5", "top_k must be an integer, got 2.5"),
        ("similarity_threshold: .nan", "similarity_threshold must be a number or null, got nan"),
        ("name: null", "name must be a string, got null"),
    ],
)
def test_wrong_types_in_profiles_name_the_file_and_key(tmp_path: Path, fields: str, message: str):
    path = write(tmp_path, f"profiles:\n  - {{name: p, {fields}}}\n")
    with pytest.raises(ConfigError) as err:
        load_profiles(path)
    assert str(err.value) == f"{path}: profiles[0].{message}"


def test_profile_fields_load_and_normalise(tmp_path: Path):
    path = write(
        tmp_path,
        "profiles:\n"
        "  - {name: h, top_k: 3, vector_weight: 1, keyword_weight: 0.5, rrf_k: 10, similarity_threshold: 0,\n"
        "     reranker: none, judge_model: gpt-4o, query_rewrite_enabled: true}\n",
    )
    (profile,) = load_profiles(path)
    assert profile.vector_weight == 1.0 and isinstance(profile.vector_weight, float)
    assert profile.similarity_threshold == 0.0 and profile.reranker is None
    assert profile.retrievers == ("knn", "bm25") and profile.is_fused
    assert profile.candidate_depth == 20  # fused: each side gives at least 20 candidates
    assert profile.judge_model == "gpt-4o" and profile.query_rewrite_enabled


def test_profile_hash_tracks_what_changes_results():
    base = RetrievalProfile("p", 5)  # type: ignore[arg-type]
    same = [
        RetrievalProfile("q", 5, description="renamed"),  # type: ignore[arg-type]
        RetrievalProfile("p", 5, vector_weight=1),  # type: ignore[arg-type]  # 1 == 1.0
        RetrievalProfile("p", 5, rrf_k=10),  # type: ignore[arg-type]  # no fusion: rrf_k unused
        RetrievalProfile("p", 5, rerank_depth=50),  # type: ignore[arg-type]  # no reranker
        RetrievalProfile("p", 5, query_rewrite_prompt="other"),  # type: ignore[arg-type]  # rewrite off
        RetrievalProfile("p", 5, version=7),  # type: ignore[arg-type]
    ]
    assert {p.config_hash for p in same} == {base.config_hash}
    different = [
        RetrievalProfile("p", 6),  # type: ignore[arg-type]
        RetrievalProfile("p", 5, keyword_weight=0.5),  # type: ignore[arg-type]
        RetrievalProfile("p", 5, similarity_threshold=0.2),  # type: ignore[arg-type]
        RetrievalProfile("p", 5, reranker="models/ce"),  # type: ignore[arg-type]
        RetrievalProfile("p", 5, query_rewrite_enabled=True),  # type: ignore[arg-type]
        RetrievalProfile("p", 5, system_prompt="Be brief."),  # type: ignore[arg-type]
    ]
    hashes = {p.config_hash for p in different}
    assert len(hashes) == len(different) and base.config_hash not in hashes
    fused = RetrievalProfile("p", 5, keyword_weight=0.5)  # type: ignore[arg-type]
    assert fused.config_hash != RetrievalProfile("p", 5, keyword_weight=0.5, rrf_k=10).config_hash  # type: ignore[arg-type]


def test_bundled_profiles_compare_dense_keyword_and_hybrid():
    root = Path(__file__).resolve().parents[3] / "data"
    profiles = load_profiles(root / "retrieval_profiles.yaml")
    assert {p.retrievers for p in profiles} >= {("knn",), ("bm25",), ("knn", "bm25")}
    hybrid = next(p for p in profiles if p.is_fused)
    assert (hybrid.vector_weight, hybrid.keyword_weight, hybrid.rrf_k) == (0.6, 0.4, 60.0)
    assert not any(p.query_rewrite_enabled or p.reranker for p in profiles)  # offline by default


PUBLISHED_SEPARATORS = ("\n\n", "\n", ".", "?", "!", " ", "")


@pytest.mark.parametrize(
    ("config", "pinned"),
    [
        (ChunkConfig("fixed-200-0", "fixed", 200, 0), "4685fb34af20ef0a"),  # type: ignore[arg-type]
        (ChunkConfig("recursive-400-50", "recursive", 400, 50), "9c8c5e6a80d00f96"),  # type: ignore[arg-type]
        (ChunkConfig("token-128", "token", 128, 0), "c4a0414837e22c83"),  # type: ignore[arg-type]
        (ChunkConfig("s", "semantic", 300), "d3dcc8c13ffc0214"),  # type: ignore[arg-type]
        (ChunkConfig("r", "recursive", 250, 125, PUBLISHED_SEPARATORS), "361c563d6b841d28"),  # type: ignore[arg-type]
        # the new settings written out at their defaults mean the same config
        (ChunkConfig("t", "token", 128, 0, tokenizer="minilm", length="characters"), "c4a0414837e22c83"),  # type: ignore[arg-type]
    ],
)
def test_configs_written_before_tokenizer_and_length_keep_their_hash(config: ChunkConfig, pinned: str):
    """The hashes these configs had before ``tokenizer`` and ``length`` existed: a change would turn
    every partition of every workspace stale."""
    assert config.config_hash == pinned


def test_tokenizer_and_length_change_the_hash_when_set():
    minilm = ChunkConfig("t", "token", 200)  # type: ignore[arg-type]
    cl100k = ChunkConfig("t", "token", 200, tokenizer="cl100k_base")  # type: ignore[arg-type]
    by_chars = ChunkConfig("r", "recursive", 200)  # type: ignore[arg-type]
    by_minilm = ChunkConfig("r", "recursive", 200, length="tokens")  # type: ignore[arg-type]
    by_cl100k = ChunkConfig("r", "recursive", 200, length="tokens", tokenizer="cl100k_base")  # type: ignore[arg-type]
    hashes = [c.config_hash for c in (minilm, cl100k, by_chars, by_minilm, by_cl100k)]
    assert len(set(hashes)) == len(hashes)
    assert [c.counts_tokens for c in (minilm, cl100k, by_chars, by_minilm, by_cl100k)] == [
        True,
        True,
        False,
        True,
        True,
    ]


def test_token_settings_load_from_yaml_with_the_published_separators(tmp_path: Path):
    path = write(
        tmp_path,
        "chunk_configs:\n"
        "  - name: rec\n    chunker: recursive\n    chunk_size: 250\n    chunk_overlap: 125\n"
        "    length: tokens\n    tokenizer: cl100k_base\n"
        '    separators: ["\\n\\n", "\\n", ".", "?", "!", " ", ""]\n'
        "  - {name: tok, chunker: token, chunk_size: 200, tokenizer: tokenizers/mine.json}\n",
    )
    rec, tok = load_chunk_configs(path)
    assert rec == ChunkConfig(
        "rec", "recursive", 250, 125, PUBLISHED_SEPARATORS, tokenizer="cl100k_base", length="tokens"
    )  # type: ignore[arg-type]
    assert tok.tokenizer == "tokenizers/mine.json" and tok.length == "characters"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "{name: a, chunker: token, chunk_size: 10, tokenizer: cl100k}",
            "chunk_configs\\[0\\]: chunk config 'a': tokenizer must be minilm or cl100k_base, or the "
            "path of a Hugging Face tokenizer.json file .*; got 'cl100k'",
        ),
        (
            "{name: a, chunker: token, chunk_size: 10, tokenizer: 7}",
            "chunk_configs\\[0\\].tokenizer must be a string, got 7",
        ),
        (
            "{name: a, chunker: recursive, chunk_size: 10, length: words}",
            "chunk_configs\\[0\\].length must be one of characters, tokens; got 'words'",
        ),
        (
            "{name: a, chunker: fixed, chunk_size: 10, tokenizer: cl100k_base}",
            "chunk config 'a': tokenizer is used by the token chunker and by recursive with length: "
            "tokens only, so it would change nothing here; remove it",
        ),
        (
            "{name: a, chunker: recursive, chunk_size: 10, tokenizer: cl100k_base}",
            "chunk config 'a': tokenizer .* would change nothing here; set length: tokens",
        ),
        (
            "{name: a, chunker: semantic, chunk_size: 10, tokenizer: my/tokenizer.json}",
            "chunk config 'a': tokenizer .* would change nothing here; remove it",
        ),
        (
            "{name: a, chunker: token, chunk_size: 10, length: tokens}",
            "chunk config 'a': length applies to the recursive chunker only \\(token counts tokens by "
            "itself\\); remove length",
        ),
        (
            "{name: a, chunker: fixed, chunk_size: 10, length: tokens}",
            "chunk config 'a': length applies to the recursive chunker only",
        ),
    ],
)
def test_bad_token_settings_name_the_config_and_field(tmp_path: Path, entry: str, message: str):
    path = write(tmp_path, f"chunk_configs:\n  - {entry}\n")
    with pytest.raises(ConfigError, match=message) as err:
        load_chunk_configs(path)
    assert str(path) in str(err.value)


def test_a_profile_fits_a_chunk_set_only_with_a_top_k_it_can_fill():
    profile = RetrievalProfile(ProfileName("p"), top_k=5, reranker="models/ce", rerank_depth=30)
    profile.check_fits(5, "c")  # the reranker then re-orders every chunk: the same as a depth of 5
    with pytest.raises(ConfigError, match="'p': top_k is 5, but chunk config 'c' has 4 chunks, so no"):
        profile.check_fits(4, "c")
