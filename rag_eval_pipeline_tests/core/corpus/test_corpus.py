from pathlib import Path

import pytest

from rag_eval_pipeline.core.chunking.base import chunk_corpus
from rag_eval_pipeline.core.chunking.recursive import RecursiveCharacterChunker
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.corpus.document_formats import count_by_extension
from rag_eval_pipeline.core.errors import CorpusError
from rag_eval_pipeline.core.generation.excerpts import locate_excerpt
from rag_eval_pipeline.core.types import DocumentId
from rag_eval_pipeline_tests.conftest import REPO


def test_from_folder_uses_posix_relative_ids_groups_and_keeps_newlines(tmp_path: Path):
    (tmp_path / "ops" / "deep").mkdir(parents=True)
    (tmp_path / "ops" / "deep" / "a.md").write_bytes("line one\r\nline two é\n".encode())
    (tmp_path / "top.md").write_text("top level", encoding="utf-8")
    (tmp_path / "other.txt").write_text("plain text", encoding="utf-8")
    corpus = Corpus.from_folder(tmp_path)
    assert [d.doc_id for d in corpus] == ["ops/deep/a.md", "other.txt", "top.md"]
    assert corpus["ops/deep/a.md"].text == "line one\r\nline two é\n"  # no newline translation
    assert corpus["ops/deep/a.md"].group == "ops"
    assert corpus["top.md"].group == ""
    # an explicit glob still narrows the files; the extension says how each is read
    assert [d.doc_id for d in Corpus.from_folder(tmp_path, glob="**/*.txt")] == ["other.txt"]
    assert [d.doc_id for d in Corpus.from_folder(tmp_path, glob="*")] == ["other.txt", "top.md"]


def test_corpus_hash_changes_with_content(tmp_path: Path):
    (tmp_path / "a.md").write_text("one", encoding="utf-8")
    before = Corpus.from_folder(tmp_path).sha256
    (tmp_path / "a.md").write_text("two", encoding="utf-8")
    assert Corpus.from_folder(tmp_path).sha256 != before


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe not utf-8 \x80", "is not valid UTF-8"),
        (b"PK\x03\x04\x00\x00binary", "looks binary"),
        (b"  \n\t\n", "is empty"),
    ],
)
def test_bad_files_name_the_file_and_the_remedy(tmp_path: Path, content: bytes, message: str):
    (tmp_path / "good.md").write_text("fine", encoding="utf-8")
    (tmp_path / "bad.md").write_bytes(content)
    with pytest.raises(CorpusError, match=message) as err:
        Corpus.from_folder(tmp_path)
    assert "bad.md" in str(err.value)


def test_missing_folder_and_no_match(tmp_path: Path):
    with pytest.raises(CorpusError, match="does not exist"):
        Corpus.from_folder(tmp_path / "nope")
    with pytest.raises(CorpusError, match="no file"):
        Corpus.from_folder(tmp_path)


def test_a_link_leading_out_of_the_folder_is_refused_naming_it(tmp_path: Path):
    corpus, outside = tmp_path / "corpus", tmp_path / "outside"
    (corpus / "ops").mkdir(parents=True)
    outside.mkdir()
    (corpus / "a.md").write_text("inside", encoding="utf-8")
    (outside / "secret.md").write_text("SECRET", encoding="utf-8")
    (corpus / "x.md").symlink_to(outside / "secret.md")
    with pytest.raises(CorpusError) as err:
        Corpus.from_folder(corpus)
    message = str(err.value)
    assert f"{corpus / 'x.md'} is a symbolic link to {outside / 'secret.md'}" in message
    assert "outside the corpus folder" in message and "remove the link" in message
    (corpus / "x.md").unlink()
    (corpus / "ops" / "linked").symlink_to(outside)  # a linked folder leads out as well
    with pytest.raises(CorpusError, match="ops/linked is a symbolic link to"):
        Corpus.from_folder(corpus, glob="ops/*/*.md")


def test_links_inside_the_folder_and_a_linked_folder_are_fine(tmp_path: Path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.md").write_text("alpha", encoding="utf-8")
    (real / "alias.md").symlink_to("a.md")
    (tmp_path / "corpus").symlink_to(real)
    corpus = Corpus.from_folder(tmp_path / "corpus")
    assert [d.doc_id for d in corpus] == ["a.md", "alias.md"]
    assert corpus["alias.md"].text == "alpha"


# The bundled demo corpus as it loaded before other formats were read: the same documents, the same
# texts, the same hash (questions, caches and history rows are keyed by it).
DEMO_CORPUS_SHA256 = "de3cec8681f013505a6e3e6f76d6a6453d0afc6bc9583fb9f45703894bb87f46"


def test_the_demo_corpus_loads_exactly_as_before():
    folder = REPO / "data" / "corpus"
    corpus = Corpus.from_folder(folder)
    assert corpus.sha256 == DEMO_CORPUS_SHA256
    assert len(corpus) == 16 and corpus.skipped == ()
    assert corpus.documents_per_format() == {"markdown": 16}
    on_disk = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.md"))
    assert [d.doc_id for d in corpus] == on_disk
    for doc in corpus:
        assert doc.text == (folder / doc.doc_id).read_text(encoding="utf-8")
    assert Corpus.from_folder(folder, glob="**/*.md") == corpus


PARAGRAPH = "Rotate the signing key every ninety days; the old key stays valid for one week."

HTML_PAGE = (
    "<!doctype html><html><head><title>Net</title><style>p {color: red}</style></head><body>"
    "<h1>Network &amp; VPN</h1><p>The office VPN uses WireGuard on port 51820.</p>"
    f"<script>var tracking = 1;</script><p>{PARAGRAPH}</p>"
    "<ul><li>Split tunnelling is off.<ul><li>Guests use the café network.</li></ul></li></ul>"
    "<table><tr><th>Site</th><th>Link</th></tr><tr><td>Kraków</td><td>1&nbsp;Gbit/s</td></tr></table>"
    "</body></html>"
)
HTML_TEXT = (
    "Network & VPN\n\nThe office VPN uses WireGuard on port 51820.\n\n"
    f"{PARAGRAPH}\n\nSplit tunnelling is off.\nGuests use the café network.\n\n"
    "Site | Link\nKraków | 1 Gbit/s"
)

DOCUMENTS = {
    "handbook/keys.md": f"# Key rotation\n\n{PARAGRAPH}\n\n## Who\n\nZoë Ångström owns the rotation.\n",
    "handbook/ops/oncall.txt": (
        f"On-call\n\nThe on-call engineer answers pages within fifteen minutes.\n\n{PARAGRAPH}\n\n{PARAGRAPH}\n"
    ),
    "reference/backup.rst": (
        "Backups\n=======\n\nNightly backups run at 01:30 and are kept for thirty-five days.\n\n"
        "* Restores are tested every quarter.\n"
    ),
    "reference/network.HTML": HTML_PAGE,
    "notes.markdown": "Notes in the *markdown* extension.\n",
    "legacy/page.htm": "<p>An old page &mdash; still read.</p>",
}
UNKNOWN = {
    "reference/diagram.pdf": "%PDF-1.4",
    "reference/scans/a.pdf": "%PDF-1.4",
    "sheet.docx": "PK",
    "Makefile": "all:",
}
HIDDEN = {
    ".DS_Store": "\0\0binary",
    ".git/config": "[core]",
    "handbook/.draft.md": "a draft",
    ".obsidian/notes.md": "workspace notes",
}


def write_files(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


def test_every_format_is_loaded_and_spans_into_its_text_are_exact(tmp_path: Path):
    folder = write_files(tmp_path / "docs", {**DOCUMENTS, **UNKNOWN, **HIDDEN})
    corpus = Corpus.from_folder(folder)
    assert sorted(d.doc_id for d in corpus) == sorted(DOCUMENTS)
    assert corpus.documents_per_format() == {"html": 2, "markdown": 2, "restructuredtext": 1, "text": 1}
    # markdown, text and reST are their files; HTML is the page's text
    for doc_id in ("handbook/keys.md", "handbook/ops/oncall.txt", "reference/backup.rst", "notes.markdown"):
        assert corpus[doc_id].text == DOCUMENTS[doc_id]
    assert corpus["reference/network.HTML"].text == HTML_TEXT
    assert corpus["legacy/page.htm"].text == "An old page \u2014 still read."
    assert corpus["handbook/ops/oncall.txt"].group == "handbook"

    # an excerpt located in the loaded text is exact, the repeated paragraph at each of its copies
    for doc_id, excerpt in [
        ("reference/network.HTML", "Guests use the café network."),
        ("reference/network.HTML", "Kraków | 1 Gbit/s"),
        ("handbook/keys.md", "Zoë Ångström owns the rotation."),
        ("reference/backup.rst", "Restores are tested every quarter."),
    ]:
        match = locate_excerpt(DocumentId(doc_id), corpus[doc_id].text, excerpt)
        assert match is not None and match.method == "exact"
        (span,) = match.spans
        assert corpus[doc_id].text[span.start : span.end] == span.text == excerpt
    oncall = corpus["handbook/ops/oncall.txt"].text
    copies = [i for i in range(len(oncall)) if oncall.startswith(PARAGRAPH, i)]
    assert len(copies) == 2 and PARAGRAPH in corpus["reference/network.HTML"].text
    # chunks cut from the text index it exactly, HTML included (PositionAwareChunk checks the length)
    chunks = chunk_corpus(RecursiveCharacterChunker(60, 10), corpus)
    assert {c.doc_id for c in chunks} == set(DOCUMENTS)
    for chunk in chunks:
        assert corpus[chunk.doc_id].text[chunk.start : chunk.end] == chunk.text
    assert sum(c.text == PARAGRAPH[: len(c.text)] for c in chunks if c.doc_id.endswith(".txt")) >= 2


def test_unknown_extensions_are_skipped_and_counted_hidden_files_ignored(tmp_path: Path):
    folder = write_files(tmp_path / "docs", {**DOCUMENTS, **UNKNOWN, **HIDDEN})
    corpus = Corpus.from_folder(folder)
    assert corpus.skipped == ("Makefile", "reference/diagram.pdf", "reference/scans/a.pdf", "sheet.docx")
    assert count_by_extension(corpus.skipped) == {".pdf": 2, "(no extension)": 1, ".docx": 1}
    # skipped and hidden files are not part of the corpus: the same documents, the same hash
    clean = Corpus.from_folder(write_files(tmp_path / "clean", DOCUMENTS))
    assert corpus.documents == clean.documents and corpus.sha256 == clean.sha256
    assert corpus == Corpus(corpus.documents, root=corpus.root)  # skipped: not compared
    # an explicit glob: the extension filter applies to its matches
    pdfs_and_rst = Corpus.from_folder(folder, glob="reference/**/*")
    assert [d.doc_id for d in pdfs_and_rst] == ["reference/backup.rst", "reference/network.HTML"]
    assert pdfs_and_rst.skipped == ("reference/diagram.pdf", "reference/scans/a.pdf")


def test_a_glob_matching_only_unknown_extensions_says_so(tmp_path: Path):
    folder = write_files(tmp_path / "docs", {**UNKNOWN, "a.md": "fine"})
    with pytest.raises(CorpusError) as err:
        Corpus.from_folder(folder, glob="reference/**/*")
    message = str(err.value)
    assert (
        "the 2 files matching 'reference/**/*' have extensions the corpus does not read (.pdf 2)" in message
    )
    assert ".md, .markdown, .txt, .rst, .html, .htm" in message and "change the glob" in message
    only_hidden = write_files(tmp_path / "hidden", HIDDEN)
    with pytest.raises(CorpusError, match="no file in .* matches '\\*\\*/\\*'"):
        Corpus.from_folder(only_hidden)


@pytest.mark.parametrize("name", ["notes/bad.txt", "page.html", "guide.rst"])
def test_a_known_file_that_is_not_utf8_is_an_error_naming_it(tmp_path: Path, name: str):
    folder = write_files(tmp_path / "docs", {"a.md": "fine", "skipped.pdf": "x"})
    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes("caf\u00e9 in Latin-1".encode("latin-1"))
    with pytest.raises(CorpusError) as err:
        Corpus.from_folder(folder)
    assert str(err.value) == (
        f"{folder / name} is not valid UTF-8 (byte 3): re-save it as UTF-8 or remove it"
    )


def test_a_file_of_an_unknown_format_is_never_read(tmp_path: Path):
    # not UTF-8, and binary: skipped all the same
    folder = write_files(tmp_path / "docs", {"a.md": "fine"})
    (folder / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0\0\0JFIF")
    assert Corpus.from_folder(folder).skipped == ("photo.jpg",)


def test_an_html_page_without_readable_text_is_empty(tmp_path: Path):
    folder = write_files(
        tmp_path / "docs", {"a.md": "fine", "blank.html": "<html><script>x()</script></html>"}
    )
    with pytest.raises(CorpusError) as err:
        Corpus.from_folder(folder)
    assert str(err.value) == (
        f"{folder / 'blank.html'} is empty: it has no readable text once read as html: add content or "
        f"remove the file"
    )
