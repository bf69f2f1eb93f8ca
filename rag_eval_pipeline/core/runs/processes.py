"""Which process is doing the work, recorded so that another process can later tell whether it is still
alive: a run whose process was killed (SIGKILL, OOM, a closed laptop) never reports its own end.

A pid alone is not enough: pids are reused. The identity adds the host (a pid means nothing elsewhere),
the boot id (a reboot ends every process) and the process start time from /proc (a reused pid starts
later). Where /proc is missing (macOS), liveness falls back to ``kill(pid, 0)``.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")
_SEPARATOR = ":"  # host names cannot contain it; the boot id and the numbers neither


@dataclass(frozen=True)
class ProcessIdentity:
    host: str
    pid: int
    boot_id: str = ""  # "" where the system does not say
    start_ticks: str = ""  # field 22 of /proc/<pid>/stat, "" where there is no /proc

    @staticmethod
    def current() -> ProcessIdentity:
        return ProcessIdentity.of_pid(os.getpid())

    @staticmethod
    def of_pid(pid: int) -> ProcessIdentity:
        """A process of this machine (this one, or a child it started)."""
        return ProcessIdentity(socket.gethostname(), pid, _boot_id(), _start_ticks(pid) or "")

    def to_text(self) -> str:
        return _SEPARATOR.join((self.host, str(self.pid), self.boot_id, self.start_ticks))

    @staticmethod
    def parse(text: str) -> ProcessIdentity | None:
        """None for a value this module did not write."""
        parts = text.rsplit(_SEPARATOR, 3)
        if len(parts) != 4 or not parts[1].isdigit():
            return None
        return ProcessIdentity(parts[0], int(parts[1]), parts[2], parts[3])

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"

    def is_gone(self) -> bool | None:
        """True when the process has certainly ended, False when it (or a process it cannot be told
        from) still runs, None when this machine cannot tell (the process ran on another host)."""
        if self.host != socket.gethostname():
            return None
        if self.boot_id and self.boot_id != _boot_id():
            return True  # the machine rebooted since
        if self.start_ticks and _PROC.is_dir():
            return _start_ticks(self.pid) != self.start_ticks  # None (no such pid) or a reused pid
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False  # someone else's process holds the pid
        return False


def _boot_id() -> str:
    try:
        return (_PROC / "sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return ""


def _start_ticks(pid: int) -> str | None:
    """The start time of a live process; None when there is none (a zombie counts as ended: it only
    waits for its parent to collect its exit status)."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")"
    fields = stat[stat.rfind(")") + 2 :].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return fields[19]  # field 22 of the line; fields[0] is field 3
