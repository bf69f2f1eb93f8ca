"""The README's commands run as written from a checkout: the own-documents block (activate the venv,
`init`, `cd`, `run`) in a fresh shell whose HOME holds the documents, as a new user types it. The
documentation pages (docs/) write their commands the same way."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rag_eval_pipeline_tests.cli.test_workspace import write_documents
from rag_eval_pipeline_tests.conftest import REPO
from rag_eval_pipeline_tests.faults.entry_points import rag_eval_env

README = REPO / "README.md"
DOCS_PAGES = sorted((REPO / "docs").rglob("*.md"))


def bash_block_after(heading: str) -> list[str]:
    """The command lines (comments cut) of the first ```bash block below ``heading``."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    block = re.search(r"```bash\n(.*?)```", text[start:], re.S)
    assert block is not None, heading
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_commands_are_written_one_way_for_an_activated_venv() -> None:
    """`rag-eval` after `cd` elsewhere only runs from an active venv: no block of the README or of a
    documentation page mixes the forms, and both say how to activate it before the first command."""
    for source in [README, *DOCS_PAGES]:
        for block in re.findall(r"```bash\n(.*?)```", source.read_text(encoding="utf-8"), re.S):
            for line in block.splitlines():
                assert not line.lstrip().startswith(".venv/bin/rag-eval"), f"{source.name}: {line}"
    text = README.read_text(encoding="utf-8")
    assert "source .venv/bin/activate" in text.split("## Evaluate your own documents")[0]
    assert "source .venv/bin/activate" in (REPO / "docs" / "getting-started.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_own_documents_block_runs_as_written(tmp_path: Path) -> None:
    lines = bash_block_after("## Evaluate your own documents")
    assert lines[0] == "source .venv/bin/activate", lines
    assert any(line.startswith("rag-eval init ~/eval/handbook --corpus ~/docs/handbook") for line in lines)
    write_documents(tmp_path / "docs" / "handbook")
    # the checkout's venv is the one running this test (CI: .venv; a developer's worktree may share one)
    activate = Path(sys.prefix) / "bin" / "activate"
    script = ["set -euo pipefail", f"source {activate}"]
    for line in lines[1:]:
        if line == "rag-eval ui":  # it serves until stopped: that it is a command here is enough
            line += " --help"
        elif line.endswith("rag-eval run"):  # one setup of the template's 16 keeps the test cheap
            line += " --chunk-configs recursive-400-50 --profiles dense-top5"
        script.append(line)
    env = rag_eval_env(REPO)
    del env["RAG_EVAL_PROJECT_DIR"]
    env.update(HOME=str(tmp_path), PATH=os.defpath)  # a new shell: nothing of this one on the PATH
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)], cwd=REPO, env=env, capture_output=True, text=True, timeout=1200
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Recommended:" in done.stdout
    assert (tmp_path / "eval" / "handbook" / "rag-eval.yaml").is_file()
