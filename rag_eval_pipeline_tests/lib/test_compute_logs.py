"""A run's stdout and stderr land in Dagster's compute-log files and reach the terminal, every line of
them, copied by a thread: no `tail` or watcher process is started."""

import json
import subprocess
import sys
from pathlib import Path

from rag_eval_pipeline.lib.compute_logs import mirrored_to_file
from rag_eval_pipeline_tests.conftest import REPO

# A child process (its own stdout and stderr are pipes this test reads) materializes an asset that
# prints, writes past a pipe's buffer, writes to descriptor 2 as C code would, and prints a last line
# just before the step ends; Popen is refused, so a helper process would fail the run.
CHILD = r"""
import json, os, subprocess, sys
from pathlib import Path
import dagster as dg

def refused(*args, **kwargs):
    raise AssertionError(f"a process was started: {args}")

subprocess.Popen = refused
folder = Path(sys.argv[1])
text = Path(sys.argv[2]).read_text(encoding="utf-8").replace(".dagster/", f"{folder}/.dagster/")
(folder / "dagster.yaml").write_text(text, encoding="utf-8")

@dg.asset
def talkative() -> None:
    print("first line to stdout")
    print("x" * 200_000)
    os.write(2, b"written to descriptor 2\n")
    print("last line to stdout", flush=True)

with dg.DagsterInstance.from_config(str(folder)) as instance:
    manager = type(instance.compute_log_manager).__name__
    result = dg.materialize([talkative], instance=instance)
print("after the run", json.dumps({"success": result.success, "manager": manager}))
"""


def test_a_run_s_output_reaches_its_files_and_the_terminal_without_helper_processes(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), str(REPO / "dagster.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    *terminal, last = done.stdout.splitlines()
    assert json.loads(last.removeprefix("after the run ")) == {
        "success": True,
        "manager": "ThreadMirroredComputeLogManager",
    }
    # the terminal got every line, in order, the last one too
    assert terminal == ["first line to stdout", "x" * 200_000, "last line to stdout"]
    assert "written to descriptor 2" in done.stderr
    [out] = list((tmp_path / ".dagster" / "compute_logs").rglob("*.out"))
    [err] = list((tmp_path / ".dagster" / "compute_logs").rglob("*.err"))
    assert out.read_text().splitlines() == terminal  # what the UI shows for the run
    assert "written to descriptor 2" in err.read_text()
    assert list(out.parent.glob("*.complete")), "the capture is marked complete, as Dagster's"


def test_a_stream_without_a_descriptor_is_left_alone(tmp_path: Path) -> None:
    class Memory:
        def __init__(self) -> None:
            self.text = ""

        def write(self, text: str) -> int:
            self.text += text
            return len(text)

        def flush(self) -> None:
            pass

    stream = Memory()
    path = tmp_path / "run.out"
    with mirrored_to_file(stream, str(path)):  # type: ignore[arg-type]
        stream.write("kept where it was going\n")
    assert stream.text == "kept where it was going\n" and path.read_text() == ""
