"""The observed state of a corpus folder: what the document sensor compares between ticks."""

import os
from pathlib import Path

import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.corpus.corpus_state import (
    CorpusCursor,
    CorpusState,
    FileState,
    diff_states,
    scan_corpus_folder,
)
from rag_eval_pipeline.core.errors import CorpusError
from rag_eval_pipeline_tests.conftest import TINY_DOCS, write_tiny_project


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_tiny_project(tmp_path / "project") / "data" / "corpus"


def bump_mtime(path: Path) -> None:
    """A later mtime without touching the content (what `touch` does)."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))


def test_scan_sees_what_the_corpus_loads_and_hashes_like_it(folder: Path):
    (folder / "notes.pdf").write_text("an unknown extension: not loaded, not watched", encoding="utf-8")
    (folder / ".draft.md").write_text("hidden: not loaded, not watched", encoding="utf-8")
    (folder / "alpha" / "bom.md").write_bytes("\ufeffA document saved with a BOM.\n".encode())
    (folder / "beta" / "page.html").write_text("<p>An <b>HTML</b> page.</p>", encoding="utf-8")
    scan = scan_corpus_folder(folder)
    corpus = Corpus.from_folder(folder)
    assert corpus.skipped == ("notes.pdf",) and "beta/page.html" in corpus
    assert sorted(scan.state.files) == sorted(d.doc_id for d in corpus)
    assert {p: f.sha256 for p, f in scan.state.files.items()} == {d.doc_id: d.sha256 for d in corpus}
    assert scan.state.corpus_sha256 == corpus.sha256
    assert sorted(scan.hashed) == sorted(scan.state.files)  # nothing known yet: every file read


def test_rescan_rehashes_only_files_whose_size_or_mtime_changed(folder: Path):
    first = scan_corpus_folder(folder).state
    assert scan_corpus_folder(folder, previous=first).hashed == ()
    bump_mtime(folder / "alpha/valves.md")
    (folder / "beta/staff.md").write_text(TINY_DOCS["beta/staff.md"] + "More.\n", encoding="utf-8")
    rescan = scan_corpus_folder(folder, previous=first)
    assert sorted(rescan.hashed) == ["alpha/valves.md", "beta/staff.md"]
    # a hash is reused on size + mtime alone: a stale hash in the previous state survives a rescan
    fake = {
        **first.files,
        "alpha/pumps.md": FileState(
            first.files["alpha/pumps.md"].size, first.files["alpha/pumps.md"].mtime_ns, "0" * 64
        ),
    }
    assert (
        scan_corpus_folder(folder, previous=CorpusState(fake)).state.files["alpha/pumps.md"].sha256
        == "0" * 64
    )


def test_diff_names_added_changed_removed_and_ignores_a_touch(folder: Path):
    before = scan_corpus_folder(folder).state
    bump_mtime(folder / "alpha/pumps.md")
    touched = scan_corpus_folder(folder, previous=before).state
    assert touched.files["alpha/pumps.md"].mtime_ns != before.files["alpha/pumps.md"].mtime_ns
    assert not diff_states(before, touched)
    assert touched.corpus_sha256 == before.corpus_sha256

    (folder / "alpha/valves.md").write_text("# Valves\n\nRewritten.\n", encoding="utf-8")
    (folder / "beta/staff.md").unlink()
    (folder / "gamma").mkdir()
    (folder / "gamma/new.md").write_text("# New\n\nA new document.\n", encoding="utf-8")
    changes = diff_states(touched, scan_corpus_folder(folder, previous=touched).state)
    assert changes.added == ("gamma/new.md",)
    assert changes.changed == ("alpha/valves.md",)
    assert changes.removed == ("beta/staff.md",)
    assert changes.documents == ("alpha/valves.md", "beta/staff.md", "gamma/new.md")


def test_an_html_page_changes_with_its_text_not_with_its_markup(folder: Path):
    page = folder / "beta" / "page.html"
    page.write_text("<p>Night shift starts at 22:00.</p>", encoding="utf-8")
    before = scan_corpus_folder(folder).state
    page.write_text('<p class="note">Night shift <em>starts</em> at 22:00.</p>', encoding="utf-8")
    restyled = scan_corpus_folder(folder, previous=before)
    assert restyled.hashed == ("beta/page.html",) and not diff_states(before, restyled.state)
    page.write_text("<p>Night shift starts at 23:00.</p>", encoding="utf-8")
    edited = scan_corpus_folder(folder, previous=restyled.state).state
    assert diff_states(restyled.state, edited).changed == ("beta/page.html",)
    assert edited.corpus_sha256 == Corpus.from_folder(folder).sha256


def test_cursor_round_trips_and_refuses_garbage_with_a_remedy(folder: Path):
    cursor = CorpusCursor(scan_corpus_folder(folder).state, requests=3)
    again = CorpusCursor.from_json(cursor.to_json())
    assert again == cursor
    for bad in ("not json", '{"version": 99, "files": {}}', '{"version": 1, "files": {"a.md": [1]}}'):
        with pytest.raises(CorpusError, match="Reset cursor"):
            CorpusCursor.from_json(bad)


def test_missing_folder_is_an_error(tmp_path: Path):
    with pytest.raises(CorpusError, match="does not exist"):
        scan_corpus_folder(tmp_path / "nowhere")


def test_the_scan_refuses_a_link_leading_out_as_the_corpus_does(folder: Path, tmp_path: Path):
    outside = tmp_path / "outside.md"
    outside.write_text("SECRET", encoding="utf-8")
    (folder / "x.md").symlink_to(outside)
    with pytest.raises(CorpusError, match="x.md is a symbolic link to .*outside the corpus folder"):
        scan_corpus_folder(folder)
