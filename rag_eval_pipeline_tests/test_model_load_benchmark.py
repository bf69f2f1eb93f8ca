"""benchmarks/model_load.py --quick: both backends load in fresh processes and embed a few demo passages;
every line of the report is printed (no timing is asserted), and the ONNX process never imports torch."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "model_load.py"


@pytest.mark.slow
def test_the_quick_run_prints_load_speed_and_agreement_of_both_backends(onnx_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=SCRIPT.parents[1],
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = done.stdout
    assert re.search(
        r"^  onnx +[\d.]+ CPU s  \(whole process +[\d.]+ CPU s; torch imported: no\)$", text, re.M
    )
    assert re.search(
        r"^  torch +[\d.]+ CPU s  \(whole process +[\d.]+ CPU s; torch imported: yes\)$", text, re.M
    )
    assert re.search(r"^embedding 20 demo passages", text, re.M)
    for backend in ("onnx", "torch"):
        assert re.search(rf"^  {backend} +[\d.]+ passages per CPU s, +[\d.]+ per wall s$", text, re.M)
    cosine = re.search(r"max \|cos - 1\| between onnx and torch over the 20 passages: (\S+)$", text, re.M)
    assert cosine is not None and float(cosine.group(1)) < 1e-4
