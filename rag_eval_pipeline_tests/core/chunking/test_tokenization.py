"""How a chunk config's tokenizer is chosen and what it gives: token starts, counts, fingerprints."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from rag_eval_pipeline.core.chunking import TokenChunker
from rag_eval_pipeline.core.chunking.tokenization import (
    CL100K_OFFLINE,
    HuggingFaceTokenizer,
    TextTokenizer,
    TiktokenTokenizer,
    cl100k_tokenizer,
    load_tokenizer,
    minilm_tokenizer,
)
from rag_eval_pipeline.core.errors import ConfigError

from .helpers import assert_tiles, doc

cl100k = tiktoken.get_encoding(CL100K_OFFLINE)


def word_level(*words: str) -> Tokenizer:
    tokenizer = Tokenizer(
        WordLevel({"[UNK]": 0, **{w: i for i, w in enumerate(words, 1)}}, unk_token="[UNK]")
    )
    tokenizer.pre_tokenizer = Whitespace()
    return tokenizer


def test_the_offline_encoding_is_cl100k_base() -> None:
    """Token ids OpenAI publishes for cl100k_base (tiktoken's own doctest: "hello world")."""
    assert cl100k.encode_ordinary("hello world") == [15339, 1917]
    assert cl100k.n_vocab == 100277
    assert cl100k_tokenizer().count_tokens(["hello world", "", "tiktoken is great!"]) == [2, 0, 6]


def test_cl100k_starts_are_where_each_token_begins() -> None:
    text = "Chunking  matters.\n\nA lot  \n"
    starts = cl100k_tokenizer().token_starts(text)
    pieces = [cl100k.decode([t]) for t in cl100k.encode_ordinary(text)]
    assert starts == [sum(len(p) for p in pieces[:i]) for i in range(len(pieces))]
    assert [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)] == pieces


def test_byte_tokens_of_one_character_share_its_offset() -> None:
    text = "a😀b👍🏽鬱"  # 😀 is 2 byte tokens, 👍🏽 6 over its 2 code points, 鬱 3
    assert cl100k_tokenizer().token_starts(text) == [0, 1, 1, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5]


def test_special_token_text_is_plain_text() -> None:
    text = "before <|endoftext|> after"
    starts = cl100k_tokenizer().token_starts(text)
    assert len(starts) > 4 and cl100k_tokenizer().count_tokens([text]) == [len(starts)]
    chunks = TokenChunker(2, 0, cl100k_tokenizer()).chunk_document(doc(text))
    assert_tiles(doc(text), chunks)
    assert "<|endoftext|>" in "".join(c.text for c in chunks)


def test_surrogates_are_refused_rather_than_cut_on_wrong_offsets() -> None:
    with pytest.raises(ValueError, match="surrogate"):
        cl100k_tokenizer().token_starts("a\ud83d\ude00b")


def test_minilm_counts_and_starts_agree() -> None:
    tokenizer = minilm_tokenizer()
    text = "Tokenization matters, a lot!"
    assert tokenizer.count_tokens([text, "   "]) == [len(tokenizer.token_starts(text)), 0]
    assert tokenizer.token_starts(text)[:2] == [0, 5]  # "token", "##ization"


def test_fingerprints_differ_by_vocabulary_and_are_stable() -> None:
    assert isinstance(cl100k_tokenizer(), TextTokenizer) and isinstance(minilm_tokenizer(), TextTokenizer)
    assert cl100k_tokenizer().fingerprint.startswith("tiktoken:cl100k_base:")
    assert cl100k_tokenizer().fingerprint != minilm_tokenizer().fingerprint
    assert (
        HuggingFaceTokenizer(word_level("one", "two")).fingerprint
        != HuggingFaceTokenizer(word_level("one", "three")).fingerprint
    )
    ranks = {bytes([b]): b for b in range(256)}
    pattern = r"\S+|\s+"

    def bpe(merges: dict[bytes, int]) -> TiktokenTokenizer:
        encoding = tiktoken.Encoding("toy", pat_str=pattern, mergeable_ranks=merges, special_tokens={})
        return TiktokenTokenizer(encoding, "toy")

    base = bpe({**ranks, b"ab": 256})
    assert base.fingerprint == bpe({**ranks, b"ab": 256}).fingerprint
    assert base.fingerprint != bpe({**ranks, b"ba": 256}).fingerprint
    assert base.fingerprint != bpe({**ranks, b"ab": 256, b"abc": 257}).fingerprint


def test_a_tokenizer_file_is_found_relative_to_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tokenizers").mkdir()
    word_level("one", "two").save(str(tmp_path / "tokenizers/words.json"))
    loaded = load_tokenizer("tokenizers/words.json", tmp_path)
    assert loaded.count_tokens(["one two three"]) == [3]
    assert loaded.fingerprint == HuggingFaceTokenizer(word_level("one", "two")).fingerprint
    assert load_tokenizer(str(tmp_path / "tokenizers/words.json")).fingerprint == loaded.fingerprint
    monkeypatch.chdir(tmp_path)  # without a root, relative to the working directory
    assert load_tokenizer("tokenizers/words.json").fingerprint == loaded.fingerprint
    # an edited file is read again
    word_level("one", "two", "three").save(str(tmp_path / "tokenizers/words.json"))
    assert load_tokenizer("tokenizers/words.json", tmp_path).fingerprint != loaded.fingerprint


def test_a_missing_or_broken_tokenizer_file_names_the_config(tmp_path: Path) -> None:
    where = "chunk config 'mine': tokenizer"
    with pytest.raises(
        ConfigError, match=r"chunk config 'mine': tokenizer: the tokenizer file .*none.json does not exist"
    ):
        load_tokenizer("none.json", tmp_path, where)
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"'mine': tokenizer: .*broken.json is not a Hugging Face tokenizer.json"
    ):
        load_tokenizer("broken.json", tmp_path, where)
