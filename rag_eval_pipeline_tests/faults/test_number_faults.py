"""Numbers that must not depend on accidents (issue 30), through `rag-eval` on the tiny project: a k no
chunk set can fill is refused with its reason, and does not hang the diagnostics."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline_tests.faults.entry_points import rag_eval

pytestmark = pytest.mark.slow

PROFILES = Path("data/retrieval_profiles.yaml")
FIXED_60_CHUNKS = 9  # the tiny corpus cut by fixed-60-0


def add_profile(project: Path, entry: str) -> Path:
    path = project / PROFILES
    path.write_text(path.read_text(encoding="utf-8") + entry, encoding="utf-8")
    return path


def test_a_top_k_beyond_the_chunks_is_refused_naming_profile_field_and_count(tiny_project: Path):
    """`top_k: 100000` with `rerank_depth: 100000` was accepted and hung the run in the diagnostics;
    one more than the chunks was accepted too, its k silently meaning fewer."""
    profiles = add_profile(tiny_project, "  - {name: wide, top_k: 10}\n")
    run = rag_eval(tiny_project, "run", "--chunk-configs", "fixed-60-0", "--profiles", "top2,wide")
    assert run.returncode == 2, run.stdout + run.stderr
    assert (
        f"{profiles}: retrieval profile 'wide': top_k is 10, but chunk config 'fixed-60-0' has "
        f"{FIXED_60_CHUNKS} chunks, so no retrieval can return 10: set top_k to at most {FIXED_60_CHUNKS}"
    ) in run.stderr
    assert "Traceback" not in run.stderr
    # nothing already computed is lost: the chunks, and the other profile's evaluation
    current = tiny_project / "data" / "warehouse" / "current"
    assert len(pd.read_parquet(current / "chunks" / "chunk_config=fixed-60-0.parquet")) == FIXED_60_CHUNKS
    assert (current / "retrieval_metrics" / "chunk_config=fixed-60-0" / "profile=top2.parquet").is_file()
    assert not (current / "retrieval_results" / "chunk_config=fixed-60-0" / "profile=wide.parquet").exists()

    add_profile(tiny_project, "  - {name: huge, top_k: 100000, rerank_depth: 100000}\n")
    run = rag_eval(tiny_project, "run", "--chunk-configs", "fixed-60-0", "--profiles", "huge", timeout=300)
    assert run.returncode == 2, run.stdout + run.stderr
    assert (
        "retrieval profile 'huge': top_k is 100000, but chunk config 'fixed-60-0' has 9 chunks" in run.stderr
    )
