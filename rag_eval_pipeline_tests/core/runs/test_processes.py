import dataclasses
import subprocess
import sys
from pathlib import Path

from rag_eval_pipeline.core.runs.processes import ProcessIdentity


def test_this_process_is_alive_and_its_identity_survives_the_round_trip() -> None:
    me = ProcessIdentity.current()
    assert me.is_gone() is False
    assert ProcessIdentity.parse(me.to_text()) == me
    assert me.start_ticks and me.boot_id  # Linux: /proc is there


def test_an_ended_process_is_gone_and_a_reused_pid_is_not_taken_for_it() -> None:
    me = ProcessIdentity.current()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        identity = ProcessIdentity(me.host, child.pid, me.boot_id, _start_ticks_of(child.pid))
        assert identity.is_gone() is False
    finally:
        child.kill()
        child.wait()
    assert identity.is_gone() is True
    # the same pid with another start time (a process that took the pid over) is not the one recorded
    assert dataclasses.replace(me, start_ticks=str(int(me.start_ticks) - 1)).is_gone() is True


def test_a_reboot_ends_every_process_and_another_host_cannot_tell() -> None:
    me = ProcessIdentity.current()
    assert dataclasses.replace(me, boot_id="another-boot").is_gone() is True
    assert dataclasses.replace(me, host="elsewhere.example.com").is_gone() is None


def test_values_it_did_not_write_are_not_identities() -> None:
    assert ProcessIdentity.parse("") is None
    assert ProcessIdentity.parse("host:not-a-pid:boot:1") is None
    assert ProcessIdentity.parse("a.b-c:12:boot:34") == ProcessIdentity("a.b-c", 12, "boot", "34")


def _start_ticks_of(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    return stat[stat.rfind(")") + 2 :].split()[19]
