"""The observed state of a corpus folder, {path: (size, mtime_ns, sha256)}: what the document sensor
keeps as its cursor, so a change is seen by content and never by the clock.

A rescan re-hashes only the files whose size or mtime differ from the previous state (a sensor tick
times out at 60 s); a file touched without a content change keeps its hash and is not a change. The
per-file hash is that of the text the corpus loads, so the state yields the same ``corpus_sha256`` as
``Corpus.sha256``: for markdown, text and reST the UTF-8 bytes without a leading BOM (no document is
decoded or loaded); an HTML file is read to its text (core/corpus/document_formats.py), so an edit of its
markup alone is no change. The files watched are those the corpus loads: a file with an unknown
extension is not watched.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import WORKSPACE_HINT, CorpusError
from ..types import sha256_hex
from .corpus import DEFAULT_CORPUS_GLOB, corpus_files, read_document_text
from .document_formats import format_of

_BOM = b"\xef\xbb\xbf"
_CURSOR_VERSION = 1


@dataclass(frozen=True)
class FileState:
    size: int
    mtime_ns: int
    sha256: str


@dataclass(frozen=True)
class CorpusState:
    """Every watched file by path relative to the corpus folder (POSIX style, = the document id)."""

    files: Mapping[str, FileState]

    @property
    def corpus_sha256(self) -> str:
        """Equal to ``Corpus.sha256`` of the folder's documents (see core/corpus/corpus.py)."""
        digest = hashlib.sha256()
        for path in sorted(self.files):
            digest.update(f"{path}\0{self.files[path].sha256}\n".encode())
        return digest.hexdigest()


@dataclass(frozen=True)
class CorpusCursor:
    """What the document sensor stores between ticks: the observed state, and how many run requests
    it has made, which is part of its run keys: returning to an earlier content (an edit undone) then
    still gets a new run, while a retried tick (same cursor) does not get a second one."""

    state: CorpusState
    requests: int = 0

    def to_json(self) -> str:
        files = self.state.files
        return json.dumps(
            {
                "version": _CURSOR_VERSION,
                "requests": self.requests,
                "files": {p: [f.size, f.mtime_ns, f.sha256] for p, f in sorted(files.items())},
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> CorpusCursor:
        """A cursor written by ``to_json``; anything else is refused with what to do."""
        try:
            obj: Any = json.loads(text)
            if obj.get("version") != _CURSOR_VERSION:
                raise ValueError(f"unknown version {obj.get('version')!r}")
            files = {
                str(path): FileState(int(size), int(mtime_ns), str(sha))
                for path, (size, mtime_ns, sha) in obj["files"].items()
            }
            return cls(CorpusState(files), int(obj.get("requests", 0)))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise CorpusError(
                f"the document sensor's cursor is not a corpus state ({exc}): reset the sensor's cursor "
                f"in the UI (Automation -> document_sensor -> Reset cursor); the next tick rescans the folder"
            ) from None


@dataclass(frozen=True)
class CorpusScan:
    state: CorpusState
    # The files whose content was read this scan (new, or size/mtime changed): the cost of the scan.
    hashed: tuple[str, ...]


@dataclass(frozen=True)
class CorpusChanges:
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    @property
    def documents(self) -> tuple[str, ...]:
        """Every path that changed in any way, sorted."""
        return tuple(sorted(self.added + self.changed + self.removed))


def scan_corpus_folder(
    root: str | Path, glob: str | None = None, previous: CorpusState | None = None
) -> CorpusScan:
    """The files ``Corpus.from_folder(root, glob)`` would load (glob None: the default, every file of a
    known format), with hashes reused from ``previous`` where size and mtime are unchanged. A missing
    folder is an error, and so is a symbolic link that leads out of it (as for the corpus, so the
    sensor's tick names the link and reads nothing outside); an empty folder is an empty state (the
    corpus asset then says what is wrong)."""
    folder = Path(root)
    if not folder.is_dir():
        raise CorpusError(
            f"corpus folder {folder} does not exist or is not a folder: set `corpus` in the workspace's "
            f"rag-eval.yaml to your documents' folder, or {WORKSPACE_HINT}"
        )
    known = previous.files if previous is not None else {}
    files: dict[str, FileState] = {}
    hashed: list[str] = []
    for file in corpus_files(folder, glob or DEFAULT_CORPUS_GLOB).files:
        rel = file.relative_to(folder).as_posix()
        stat = file.stat()
        before = known.get(rel)
        if before is not None and before.size == stat.st_size and before.mtime_ns == stat.st_mtime_ns:
            files[rel] = before
            continue
        files[rel] = FileState(stat.st_size, stat.st_mtime_ns, document_sha256(file))
        hashed.append(rel)
    return CorpusScan(CorpusState(files), tuple(hashed))


def document_sha256(file: Path) -> str:
    """``Document.sha256`` of the file as the corpus loads it: for a verbatim format the sha256 of the
    file without a leading UTF-8 BOM (the text as loaded, re-encoded), for HTML that of its text. A
    file the corpus would refuse still gets a hash (of its bytes), and the corpus asset refuses it with
    its own message."""
    fmt = format_of(file)
    if fmt is not None and not fmt.verbatim:
        try:
            return sha256_hex(read_document_text(file))
        except CorpusError:
            pass
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        head = handle.read(len(_BOM))
        if head != _BOM:
            digest.update(head)
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def diff_states(old: CorpusState, new: CorpusState) -> CorpusChanges:
    """Added, changed (same path, other content) and removed paths; a touched file is no change."""
    return CorpusChanges(
        added=tuple(sorted(set(new.files) - set(old.files))),
        changed=tuple(
            sorted(p for p in set(old.files) & set(new.files) if old.files[p].sha256 != new.files[p].sha256)
        ),
        removed=tuple(sorted(set(old.files) - set(new.files))),
    )
