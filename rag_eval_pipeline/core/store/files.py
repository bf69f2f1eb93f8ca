"""Writing the project's files so a killed process leaves the old version or the new, never half; so a
failed write (full disk, read-only file system) leaves no temporary file behind and says which path and
why; and so two processes that update one file take turns.

Every writer of the project (Parquet tables, JSONL datasets, reports, ledgers, the BM25 index folder)
goes through ``write_atomically`` / ``replace_folder_atomically`` here: one place picks the temporary
name (``.<name>.<host>.<pid>.<thread>.tmp`` next to the target, so the rename stays on one file system, and
two writers never share one: threads of a process, or processes of two machines on a shared folder, which
can have the same pid), flushes it to
disk, renames it, removes it on failure, and turns an ``OSError`` into a ``StorageError`` that names the
target, the operation and the OS error.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..errors import StorageError

_REMEDIES = {
    errno.ENOSPC: "free space on that disk",
    errno.EDQUOT: "free space on that disk (the user's quota is used up)",
    errno.EROFS: "make that file system writable",
    errno.EACCES: "give this user write permission there",
    errno.EPERM: "give this user write permission there",
}


def os_reason(error: OSError) -> str:
    """``[Errno 28] No space left on device``: the standard text, also for libraries (pyarrow) that
    put their own words around the errno."""
    if error.errno:
        return f"[Errno {error.errno}] {os.strerror(error.errno)}"
    return str(error) or type(error).__name__


def storage_error(
    path: str | os.PathLike[str], operation: str, error: OSError, note: str = ""
) -> StorageError:
    """The ``StorageError`` for ``error`` while doing ``operation`` on ``path``, with the usual remedy."""
    if isinstance(error, StorageError):
        return error
    remedy = _REMEDIES.get(error.errno or 0, "")
    return StorageError(path, operation, os_reason(error) + note, remedy, error.errno)


def file_system_type(path: Path) -> str | None:
    """The type of the file system holding ``path`` or its nearest existing folder ("ext4", "tmpfs",
    ...), from /proc/self/mountinfo: the mount with the longest mount point above it, the last one of
    a stack. None where that cannot be told (no /proc)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    place = next((p for p in (path, *path.parents) if p.exists()), path).resolve()
    found, depth = None, -1
    for line in lines:
        fields, _, tail = line.partition(" - ")
        parts, kinds = fields.split(" "), tail.split(" ")
        if len(parts) < 5 or not kinds[0]:
            continue
        # spaces, tabs, newlines and backslashes in a mount point are written as octal escapes
        mount = Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), parts[4]))
        if (place == mount or mount in place.parents) and len(mount.parts) >= depth:
            found, depth = kinds[0], len(mount.parts)
    return found


def make_folder(folder: Path) -> Path:
    """``mkdir -p``, failing with a ``StorageError`` that names the folder."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise storage_error(folder, "create folder", exc) from exc
    return folder


def write_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """``write(temporary_path)``, then the temporary file flushed to disk and renamed over ``path``. On
    any failure the temporary file is removed, ``path`` keeps its old content, and an ``OSError`` is
    raised again as a ``StorageError`` naming ``path``."""
    write_files_atomically([(path, write)])


def writer_token() -> str:
    """``<host>.<pid>.<thread>``: who writes a temporary file. The pid alone is shared by the threads of a
    Dask worker and, on a folder shared by several machines or containers, by processes of other hosts."""
    return f"{socket.gethostname()}.{os.getpid()}.{threading.get_ident()}"


def write_files_atomically(writes: Sequence[tuple[Path, Callable[[Path], object]]]) -> None:
    """Several files replaced only when all were written (see ``write_atomically``): each ``write`` gets
    its own temporary path; the renames run last to first, so put the file readers look at first (a
    table's current version) first. The error names the file whose write failed."""
    temporaries: list[Path] = []
    target = writes[0][0] if writes else Path()
    try:
        for target, write in writes:
            make_folder(target.parent)
            temporaries.append(target.with_name(f".{target.name}.{writer_token()}.tmp"))
            write(temporaries[-1])
            _fsync(temporaries[-1])
        for (target, _), temporary in reversed(list(zip(writes, temporaries, strict=True))):
            os.replace(temporary, target)
    except BaseException as exc:  # an interrupt too must not leave temporary files behind
        note = "".join(_remove(temporary) for temporary in temporaries)
        if isinstance(exc, OSError):
            raise storage_error(target, "write", exc, note) from exc
        raise


def write_text_atomically(path: Path, text: str) -> None:
    """UTF-8 text, replacing ``path`` whole or not at all."""
    write_atomically(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


def replace_folder_atomically(folder: Path, fill: Callable[[Path], object]) -> None:
    """``fill(staging_folder)``, then the staging folder swapped in for ``folder``: readers see the old
    folder or the new one, whole. On any failure the staging folder is removed, ``folder`` is left as it
    was, and an ``OSError`` is raised again as a ``StorageError`` naming ``folder``."""
    make_folder(folder.parent)
    staging = folder.with_name(f".{folder.name}.{writer_token()}.tmp")
    retired = folder.with_name(f".{folder.name}.{writer_token()}.old")
    try:
        if os.path.lexists(staging):  # a leftover of a killed process that had our host, pid and thread
            shutil.rmtree(staging)
        staging.mkdir()
        fill(staging)
        for file in sorted(p for p in staging.rglob("*") if p.is_file()):
            _fsync(file)
        if folder.exists():
            folder.rename(retired)
        try:
            staging.rename(folder)
        except BaseException:
            if retired.exists() and not folder.exists():
                retired.rename(folder)
            raise
    except BaseException as exc:
        note = _remove_tree(staging)
        if isinstance(exc, OSError):
            raise storage_error(folder, "replace folder", exc, note) from exc
        raise
    try:
        if os.path.lexists(retired):
            shutil.rmtree(retired)
    except OSError as exc:  # the new folder is in place; only the old copy is left over
        raise storage_error(retired, "remove the old folder", exc) from exc


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``<path>.lock`` for a read-modify-write of ``path``."""
    make_folder(path.parent)
    lock_path = path.with_name(path.name + ".lock")
    try:
        lock = open(lock_path, "w")  # noqa: SIM115 (closed by the with below)
    except OSError as exc:
        raise storage_error(lock_path, "create lock file", exc) from exc
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _fsync(path: Path) -> None:
    """Content on disk before the rename, so a crash cannot leave a renamed but empty file; a disk that
    fills up only when flushing (delayed allocation, network file systems) fails here, not later."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(temporary: Path) -> str:
    """Remove a temporary file; '' when gone, else a note for the error message (never silent)."""
    try:
        if os.path.lexists(temporary):  # unlink of a missing name fails with EROFS on a read-only disk
            temporary.unlink()
    except OSError as exc:
        return f" (and the temporary file {temporary} could not be removed: {os_reason(exc)}; delete it)"
    return ""


def _remove_tree(folder: Path) -> str:
    try:
        if os.path.lexists(folder):
            shutil.rmtree(folder)
    except OSError as exc:
        return f" (and {folder} could not be removed: {os_reason(exc)}; delete it)"
    return ""
