from pathlib import Path

import pytest

from rag_eval_pipeline.core.corpus import Corpus
from rag_eval_pipeline.core.errors import CorpusError


def test_from_folder_uses_posix_relative_ids_groups_and_keeps_newlines(tmp_path: Path):
    (tmp_path / "ops" / "deep").mkdir(parents=True)
    (tmp_path / "ops" / "deep" / "a.md").write_bytes("line one\r\nline two é\n".encode())
    (tmp_path / "top.md").write_text("top level", encoding="utf-8")
    (tmp_path / "ignored.txt").write_text("not markdown", encoding="utf-8")
    corpus = Corpus.from_folder(tmp_path)
    assert [d.doc_id for d in corpus] == ["ops/deep/a.md", "top.md"]
    assert corpus["ops/deep/a.md"].text == "line one\r\nline two é\n"  # no newline translation
    assert corpus["ops/deep/a.md"].group == "ops"
    assert corpus["top.md"].group == ""
    assert len(Corpus.from_folder(tmp_path, glob="**/*.txt")) == 1


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
