"""Warehouse files read once per process while they are unchanged.

An evaluation's steps read the same Parquet files again and again: each partition run reads the chunk set
of its config, the questions and the corpus, and the four steps after ``retrieval_results`` each read it
back through the IO manager. Decoding a file is most of the cost of reading it (``read_parquet`` then
``to_pandas``: about 0.2 CPU s of a demo partition's run). A file is known unchanged by its
``os.stat`` signature: the warehouse replaces a file by renaming a new one over it (a new inode), and
any write in place changes its size or modification time; the warehouse's own writes also drop the
frame (``forget``), since file times are coarse.

Readers get a shallow copy: pandas' copy-on-write (the default since pandas 3) copies a column only when
either side changes it, so no reader sees another's changes and none pays a copy it does not need.
Values inside cells (a list in an object column) are shared: the warehouse's readers never change those.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

# Parquet bytes kept at most (the decoded frames are a few times larger): the demo's whole warehouse of
# current files is about 3 MB, a 1.5 M-character corpus' chunk sets about 20 MB.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class FileSignature:
    """What changes when a file is replaced or written in place."""

    device: int
    inode: int
    size: int
    modified_ns: int
    changed_ns: int

    @classmethod
    def of(cls, path: Path) -> FileSignature:
        stat = os.stat(path)
        return cls(stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


class FrameCache:
    """The frames of recently read files, least recently used dropped first once their files' bytes
    exceed ``max_bytes``. Thread-safe; a file larger than ``max_bytes`` is read every time."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._frames: OrderedDict[str, tuple[FileSignature, pd.DataFrame]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.reads = 0  # files decoded (misses)

    def read(self, path: Path, read: Callable[[Path], pd.DataFrame]) -> pd.DataFrame:
        """``read(path)``, or a copy of what it returned before while the file is unchanged. Errors of
        ``os.stat`` and of ``read`` (a missing or damaged file) propagate and nothing is kept."""
        key = os.path.abspath(path)
        before = FileSignature.of(path)
        with self._lock:
            kept = self._frames.get(key)
            if kept is not None and kept[0] == before:
                self._frames.move_to_end(key)
                return kept[1].copy(deep=False)
        frame = read(path)
        try:  # a file replaced or removed while it was read is not kept
            keep = before.size <= self.max_bytes and FileSignature.of(path) == before
        except FileNotFoundError:
            keep = False
        with self._lock:
            self.reads += 1
            if keep:
                self._forget(key)
                self._frames[key] = (before, frame)
                self._bytes += before.size
                while self._bytes > self.max_bytes:
                    self._forget(next(iter(self._frames)))
        return frame.copy(deep=False)

    def forget(self, path: Path) -> None:
        """Drops ``path``'s frame: its writer in this process calls it, as file times are coarse (a few
        ms) and a freed inode may be the next file's, so a rewrite can keep the signature."""
        with self._lock:
            self._forget(os.path.abspath(path))

    def _forget(self, key: str) -> None:
        kept = self._frames.pop(key, None)
        if kept is not None:
            self._bytes -= kept[0].size


# The process's one cache: every Warehouse reads through it (``Warehouse.read_file``).
PROCESS_FRAMES = FrameCache()
