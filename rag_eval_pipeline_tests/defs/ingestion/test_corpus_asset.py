"""The corpus asset on a folder of mixed formats: documents per format and the skipped files, in its
metadata and in one warning."""

import logging
from pathlib import Path

import dagster as dg

from rag_eval_pipeline.defs.ingestion.assets import corpus as corpus_asset
from rag_eval_pipeline.lib.io_managers import ParquetIOManagerFactory
from rag_eval_pipeline.lib.resources import ProjectResource
from rag_eval_pipeline_tests.conftest import latest_metadata
from rag_eval_pipeline_tests.instances import instance_for_tests


def test_the_corpus_counts_formats_and_warns_of_skipped_files(tiny_project: Path, tmp_path: Path):
    folder = tiny_project / "data/corpus"
    (folder / "beta/rota.html").write_text("<p>Mon: Zoë &amp; Tomasz</p>", encoding="utf-8")
    (folder / "alpha/notes.txt").write_text("Valve V-7 is spare.\n", encoding="utf-8")
    for i in range(11):
        (folder / f"alpha/scan{i:02}.pdf").write_bytes(b"%PDF-1.4")
    (folder / "beta/sheet.docx").write_bytes(b"PK\x03\x04")
    (folder / ".DS_Store").write_bytes(b"\0\0")
    resources = {
        "project": ProjectResource(root=str(tiny_project)),
        "io_manager": ParquetIOManagerFactory(base_dir=str(tmp_path / "warehouse")),
    }
    with instance_for_tests() as instance:
        result = dg.materialize([corpus_asset], instance=instance, resources=resources)
        assert result.success
        metadata = latest_metadata(instance, "corpus")
        logs = [e for e in instance.all_logs(result.run_id) if "corpus" in (e.step_key or "")]
    assert metadata["n_documents"] == 5
    assert metadata["documents_per_format"] == {"html": 1, "markdown": 3, "text": 1}
    assert metadata["n_skipped_files"] == 12
    assert metadata["skipped_extensions"] == ".pdf 11, .docx 1"
    (warning,) = [e.user_message for e in logs if e.level == logging.WARNING]
    assert warning.startswith(
        "skipped 12 files with extensions the corpus does not read (.pdf 11, .docx 1): alpha/scan00.pdf, "
    )
    assert "alpha/scan09.pdf (+2 more)" in warning and "beta/sheet.docx" not in warning
    assert any("loaded 5 documents (html 1, markdown 3, text 1)" in e.user_message for e in logs)
    frame = result.output_for_node("corpus")
    assert frame.set_index("doc_id").loc["beta/rota.html", "text"] == "Mon: Zoë & Tomasz"
