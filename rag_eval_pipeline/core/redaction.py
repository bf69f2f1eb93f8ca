"""Secrets never leave the process in clear: every text bound for a table, a cache database
(core/store/sqlite_store.py), metadata, a log line or the terminal goes through ``redact`` (or ``redact_value``
/ ``redact_frame`` / ``redact_exception``).

Which secrets: the values of the variables the project reads credentials from (``SECRET_VARIABLES``)
and the password inside a URL variable (``https://user:password@host``), read from the environment at
each call, so a key set after start-up is caught too. A server may echo a key whole or cut short
("Incorrect API key provided: sk-abc1234..."): every run of ``MIN_SECRET_CHARS`` or more characters of a
secret is replaced by a marker naming its variable, ``[redacted OPENAI_API_KEY]``. Two limits keep
ordinary text intact (tables hold corpus text): values shorter than ``MIN_SECRET_CHARS`` are ignored
(blanking every "admin" would protect nothing), and a partial run made only of lowercase letters and
spaces ("password" out of "dagster_password") reads as words and is left alone; the whole value always
goes. A secret that IS an ordinary word ("postgres") is blanked wherever that word appears.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import logging
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import IO, TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlsplit

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

SECRET_VARIABLES = ("OPENAI_API_KEY", "LANGSMITH_API_KEY", "QDRANT_API_KEY", "DAGSTER_PG_PASSWORD")
# Endpoints that may carry credentials in their URL (``https://user:password@gateway``).
URL_VARIABLES = ("OPENAI_BASE_URL", "QDRANT_URL", "LANGSMITH_ENDPOINT")
MIN_SECRET_CHARS = 8
_PROBE_CHARS = MIN_SECRET_CHARS // 2

T = TypeVar("T")


@dataclass(frozen=True)
class Secret:
    variable: str
    value: str

    @property
    def marker(self) -> str:
        return f"[redacted {self.variable}]"


def configured_secrets(env: Mapping[str, str] | None = None) -> tuple[Secret, ...]:
    """The secrets set in ``env`` (the process environment by default), long enough to redact."""
    env = os.environ if env is None else env
    return _secrets_of(tuple(env.get(name) or "" for name in SECRET_VARIABLES + URL_VARIABLES))


@lru_cache(maxsize=8)
def _secrets_of(values: tuple[str, ...]) -> tuple[Secret, ...]:
    found: list[Secret] = []
    named = dict(zip(SECRET_VARIABLES + URL_VARIABLES, values, strict=True))
    for name in SECRET_VARIABLES:
        found.append(Secret(name, named[name].strip()))
    for name in URL_VARIABLES:
        try:
            password = urlsplit(named[name].strip()).password
        except ValueError:  # not a URL: nothing inside it to find
            password = None
        if password:
            # a message may quote the URL as configured (percent-encoded) or the decoded password
            found.extend(Secret(name, form) for form in dict.fromkeys((password, unquote(password))))
    return tuple(s for s in found if len(s.value) >= MIN_SECRET_CHARS)


class _Scanner:
    """Finds every run of ``MIN_SECRET_CHARS``+ characters of any secret in a text.

    Every such run holds one of the secret's 4-character pieces that start at a multiple of 4 (any 8
    consecutive positions contain a whole aligned piece): ``str.find`` looks for those pieces at C speed,
    and each hit is extended both ways along the secret to the full run.
    """

    def __init__(self, secrets: tuple[Secret, ...]) -> None:
        self.probes: dict[str, list[tuple[Secret, int]]] = {}
        for secret in secrets:
            for offset in range(0, len(secret.value) - _PROBE_CHARS + 1, _PROBE_CHARS):
                piece = secret.value[offset : offset + _PROBE_CHARS]
                self.probes.setdefault(piece, []).append((secret, offset))

    def runs(self, text: str) -> list[tuple[int, int, Secret]]:
        found = []
        for piece, places in self.probes.items():
            at = text.find(piece)
            while at != -1:
                for secret, offset in places:
                    value = secret.value
                    left = 0
                    while left < min(offset, at) and text[at - left - 1] == value[offset - left - 1]:
                        left += 1
                    right = _PROBE_CHARS
                    limit = min(len(value) - offset, len(text) - at)
                    while right < limit and text[at + right] == value[offset + right]:
                        right += 1
                    start, end = at - left, at + right
                    if end - start >= MIN_SECRET_CHARS and (
                        end - start == len(value) or not _reads_as_words(text[start:end])
                    ):
                        found.append((start, end, secret))
                at = text.find(piece, at + 1)
        return found

    def redactions(self, strings: Iterable[str]) -> dict[str, str]:
        """The strings that hold a secret, each with its redacted form: one scan over them all joined
        (NUL, which no environment variable holds, keeps runs from crossing from one to the next)."""
        unique = [text for text in dict.fromkeys(strings) if len(text) >= MIN_SECRET_CHARS]
        runs = self.runs("\0".join(unique))
        if not runs:
            return {}
        starts = list(itertools.accumulate((len(text) + 1 for text in unique[:-1]), initial=0))
        hit = {unique[bisect.bisect_right(starts, start) - 1] for start, _, _ in runs}
        return {text: self.redact(text) for text in hit}

    def redact(self, text: str) -> str:
        runs = self.runs(text)
        if not runs:
            return text
        pieces: list[str] = []
        last = 0
        for start, end, secret in sorted(runs, key=lambda run: (run[0], -run[1])):
            if end <= last:
                continue  # inside a run already replaced
            if start < last:
                start = last  # overlaps the previous run: one marker stands for both
            else:
                pieces += [text[last:start], secret.marker]
            last = end
        return "".join(pieces) + text[last:]


def _reads_as_words(fragment: str) -> bool:
    """Lowercase letters and spaces only ("password", "correct horse"): a piece of a passphrase that is
    also ordinary text, left alone unless the whole secret is there; a fragment of a key is not like this
    (a random 8-character run of a mixed-case key is lowercase-only about once in a thousand)."""
    return all(c.isspace() or (c.isalpha() and c.islower()) for c in fragment)


@lru_cache(maxsize=8)
def _scanner_for(secrets: tuple[Secret, ...]) -> _Scanner:
    return _Scanner(secrets)


def _current_scanner() -> _Scanner | None:
    secrets = configured_secrets()
    return _scanner_for(secrets) if secrets else None


def redact(text: str) -> str:
    """``text`` with every configured secret (and every run of 8+ of its characters) replaced by
    ``[redacted <VARIABLE>]``; unchanged when no secret is configured."""
    if len(text) < MIN_SECRET_CHARS:
        return text
    scanner = _current_scanner()
    return scanner.redact(text) if scanner is not None else text


def secret_runs(text: str) -> list[tuple[int, int]]:
    """Where ``redact`` would replace text: the (start, end) of every run of a configured secret in
    ``text``, sorted (runs may overlap); empty when no secret is configured."""
    if len(text) < MIN_SECRET_CHARS:
        return []
    scanner = _current_scanner()
    return sorted((start, end) for start, end, _ in scanner.runs(text)) if scanner is not None else []


def redact_value(value: T) -> T:
    """``value`` with every string inside it redacted: dicts (keys too), lists, tuples, sets, numpy
    arrays of strings; numbers and other objects (subclasses of those containers too) unchanged. The
    same object when nothing changed."""
    scanner = _current_scanner()
    if scanner is None:
        return value
    dirty = scanner.redactions(_strings_in(value))
    return _replace_strings(value, dirty) if dirty else value


def redact_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the strings of its text columns (and of lists, arrays and dicts in them) redacted.
    The same frame, not a copy, when nothing needed redacting; the input is never modified. One scan over
    all of the frame's distinct strings: about 0.3 s for 18 MB of text with one API key set."""
    import pandas as pd

    scanner = _current_scanner()
    if scanner is None:
        return frame
    columns = {
        position: frame.iloc[:, position].tolist()
        for position in range(frame.shape[1])
        if pd.api.types.is_object_dtype(frame.dtypes.iloc[position])
        or pd.api.types.is_string_dtype(frame.dtypes.iloc[position])
    }
    dirty = scanner.redactions(text for values in columns.values() for v in values for text in _strings_in(v))
    if not dirty:
        return frame
    out = frame.copy()
    for position, values in columns.items():
        new = [_replace_strings(v, dirty) for v in values]
        if any(a is not b for a, b in zip(new, values, strict=True)):
            column = frame.iloc[:, position]
            out.isetitem(position, pd.Series(new, index=frame.index, dtype=column.dtype).array)
    return out


def _strings_in(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings_in(key)
            yield from _strings_in(item)
    elif type(value) in (list, tuple, set, frozenset):  # not subclasses: records that only look like tuples
        for item in value:
            yield from _strings_in(item)
    elif isinstance(value, np.ndarray) and value.dtype.kind in "OU":
        for item in value.ravel().tolist():
            yield from _strings_in(item)


def _replace_strings(value: Any, dirty: Mapping[str, str]) -> Any:
    """``value`` rebuilt where it holds a string of ``dirty`` (mapped to its redacted form); the same
    object where it holds none."""
    if isinstance(value, str):
        return dirty.get(value, value)
    if isinstance(value, dict):
        items = [(_replace_strings(k, dirty), _replace_strings(v, dirty)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if type(value) in (list, tuple, set, frozenset):
        new = [_replace_strings(v, dirty) for v in value]
        if all(a is b for a, b in zip(new, value, strict=True)):
            return value
        return type(value)(new)
    if isinstance(value, np.ndarray) and value.dtype.kind in "OU":
        items = value.ravel().tolist()
        flat = [_replace_strings(v, dirty) for v in items]
        if all(a is b for a, b in zip(flat, items, strict=True)):
            return value
        out = np.empty(value.shape, dtype=object)
        out.ravel()[:] = flat
        return out if value.dtype.kind == "O" else out.astype(str)
    return value


class RedactedError(RuntimeError):
    """Stands in for an exception whose message held a secret but whose type builds its message from
    attributes the redaction cannot rewrite; its message names the original type."""


def redact_exception(exc: BaseException) -> BaseException:
    """``exc`` with no secret in its message, its notes, or the exceptions it chains to.

    Rewritten in place where the message comes from ``args`` (same type, same traceback, so handlers and
    exit codes still work); otherwise a ``RedactedError`` carrying the redacted text takes its place
    (in the chain, or as the return value, which the caller raises).
    """
    return _redact_exception(exc, set())


def _redact_exception(exc: BaseException, seen: set[int]) -> BaseException:
    if id(exc) in seen:
        return exc
    seen.add(id(exc))
    for link in ("__cause__", "__context__"):
        chained = getattr(exc, link)
        if chained is not None:
            setattr(exc, link, _redact_exception(chained, seen))
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        exc.__notes__ = [redact(n) if isinstance(n, str) else n for n in notes]
    try:
        text = str(exc)
    except Exception:  # a broken __str__: nothing readable to leak
        return exc
    clean = redact(text)
    if clean == text:
        return exc
    exc.args = tuple(redact_value(a) for a in exc.args)
    for attribute in ("message", "description", "detail", "body"):  # SDKs keep the text here too
        value = getattr(exc, attribute, None)
        if isinstance(value, str | dict | list):
            # a read-only property stays: the check below then puts a RedactedError in its place
            with contextlib.suppress(AttributeError):
                setattr(exc, attribute, redact_value(value))
    try:
        now = str(exc)
        rewritten = redact(now) == now
    except Exception:  # its __str__ broke on the rewritten attributes: replace it
        rewritten = False
    if rewritten:
        return exc
    replacement = RedactedError(f"{type(exc).__name__}: {clean}")
    replacement.__cause__ = exc.__cause__
    replacement.__context__ = exc.__context__
    replacement.__suppress_context__ = exc.__suppress_context__
    replacement.__traceback__ = exc.__traceback__
    return replacement


# --- log records and terminal streams ----------------------------------------------------------------

_install_lock = threading.Lock()


def _redact_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a format/args mismatch: logging reports it itself when the record is emitted
        return
    clean = redact(message)
    if clean != message:
        record.msg, record.args = clean, ()
    if record.exc_info and record.exc_info[1] is not None and configured_secrets():
        redact_exception(record.exc_info[1])
        # formatters use a cached exc_text when set: the traceback text is redacted once, here
        record.exc_text = redact(logging.Formatter().formatException(record.exc_info))


def install_log_redaction() -> None:
    """Every ``logging`` record created from now on (Dagster's ``context.log`` lines included: its log
    manager builds records through the standard factory) carries a redacted message and traceback.
    Idempotent."""
    with _install_lock:
        previous = logging.getLogRecordFactory()
        if getattr(previous, "redacts_secrets", False):
            return

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            _redact_record(record)
            return record

        factory.redacts_secrets = True  # type: ignore[attr-defined]
        logging.setLogRecordFactory(factory)


class RedactingStream:
    """A text stream that redacts what is written to it before passing it on; everything else
    (``isatty``, ``fileno``, ``encoding``, ...) is the wrapped stream's. Each ``write`` is redacted on
    its own: a secret split across two writes would pass, which ``print``, logging and tqdm never do."""

    redacts_secrets = True

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text))
        return len(text)  # what the caller handed over, as TextIO promises

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def install_stream_redaction() -> None:
    """``sys.stdout`` and ``sys.stderr`` (tracebacks and warnings included) redact what they print."""
    with _install_lock:
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            if stream is not None and not getattr(stream, "redacts_secrets", False):
                setattr(sys, name, RedactingStream(stream))
