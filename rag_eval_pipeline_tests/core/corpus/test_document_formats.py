"""The per-format readers: which extensions are documents, and the text an HTML page is reduced to."""

import pytest

from rag_eval_pipeline.core.corpus.document_formats import (
    KNOWN_EXTENSIONS,
    NO_EXTENSION,
    count_by_extension,
    describe_skipped,
    extension_of,
    format_of,
    read_html,
)

PAGE = """<!DOCTYPE html>
<html lang="en"><head><title>Pump manual</title><meta charset="utf-8">
<style>p { color: red }</style><script>var tracking = "head";</script></head>
<body>
<!-- a comment nobody reads -->
<h1>Pumps &amp; valves</h1>
<p>The main   pump
   runs at <b>1,450</b>&nbsp;rpm &lt;nominal&gt;.<br>It is serviced every 90&#160;days.</p>
<script>document.write("tracking");</script>
<ul>
  <li>Inspect the seals
  <li>Check the bearings:
    <ul><li>front bearing</li><li><p>rear bearing</p><p>(grease it)</p></li></ul>
  </li>
  <li>Log the café visit</li>
</ul>
<table>
  <caption>Ports</caption>
  <tr><th>Name</th><th>Port</th></tr>
  <tr><td>api</td><td>8080</td></tr>
  <tr><td><p>db</p><p>replica</p></td><td>5432</td></tr>
</table>
<pre>
def pump():
    return "on"
</pre>
<div hidden>not shown</div><template><p>a template</p></template><noscript>Enable JavaScript</noscript>
<p>Zoë Ångström wrote this — 2024.</p>
</body></html>
"""

PAGE_TEXT = (
    "Pumps & valves\n\n"
    "The main pump runs at 1,450 rpm <nominal>.\n"
    "It is serviced every 90 days.\n\n"
    "Inspect the seals\n"
    "Check the bearings:\n"
    "front bearing\n"
    "rear bearing\n"
    "(grease it)\n"
    "Log the café visit\n\n"
    "Ports\n"
    "Name | Port\n"
    "api | 8080\n"
    "db replica | 5432\n\n"
    'def pump():\n    return "on"\n\n'
    "Zoë Ångström wrote this — 2024."
)


def test_a_page_is_reduced_to_the_text_a_reader_sees():
    assert read_html(PAGE) == PAGE_TEXT


def test_the_reduction_is_deterministic_and_keeps_no_markup_or_script():
    text = read_html(PAGE)
    assert read_html(PAGE) == text
    for hidden in ("tracking", "color", "Pump manual", "comment", "not shown", "a template", "JavaScript"):
        assert hidden not in text
    assert "<b>" not in text and "&amp;" not in text and "\xa0" not in text


@pytest.mark.parametrize(
    ("html", "text"),
    [
        # unclosed paragraphs, items and cells are closed as a browser closes them
        ("<p>one<p>two", "one\n\ntwo"),
        ("<ul><li>a<li>b</ul>after", "a\nb\n\nafter"),
        ("<table><tr><td>a<td>b<tr><td>c</table>", "a | b\nc"),
        # inline markup joins words without adding spaces; block markup separates them
        ("<p>re<em>use</em>d</p><div>next</div>", "reused\n\nnext"),
        # definition lists: each term and description on its own line
        ("<dl><dt>RPO</dt><dd>15 minutes</dd></dl>", "RPO\n15 minutes"),
        # a page that is only text, and XHTML with an XML declaration
        ("plain words, no markup", "plain words, no markup"),
        ('<?xml version="1.0" encoding="utf-8"?><html><body><p>x &gt; y</p></body></html>', "x > y"),
        # a table nested in a cell stays in its row
        (
            "<table><tr><td>out<table><tr><td>in1</td><td>in2</td></tr></table></td><td>z</td></tr></table>",
            "out in1 | in2 | z",
        ),
    ],
)
def test_html_structure(html: str, text: str):
    assert read_html(html) == text


def test_a_deep_page_does_not_exhaust_the_stack():
    assert read_html("<div>" * 5000 + "deep" + "</div>" * 5000) == "deep"


def test_extensions_name_the_format_case_insensitively():
    assert KNOWN_EXTENSIONS == (".md", ".markdown", ".txt", ".rst", ".html", ".htm")
    names = {ext: getattr(format_of(f"a/b{ext.upper()}"), "name", None) for ext in KNOWN_EXTENSIONS}
    assert names == {
        ".md": "markdown",
        ".markdown": "markdown",
        ".txt": "text",
        ".rst": "restructuredtext",
        ".html": "html",
        ".htm": "html",
    }
    assert format_of("report.pdf") is None and format_of("Makefile") is None
    assert extension_of("Makefile") == NO_EXTENSION and extension_of("a/B.PDF") == ".pdf"
    # only HTML's text differs from its file
    assert [f.name for f in map(format_of, ("a.md", "a.txt", "a.rst", "a.html")) if f and not f.verbatim] == [
        "html"
    ]


def test_verbatim_readers_keep_the_text_as_written():
    text = "Title\n=====\r\n\n* item  with  spaces\n\ttab\n"
    for name in ("a.md", "a.markdown", "a.txt", "a.rst"):
        fmt = format_of(name)
        assert fmt is not None and fmt.read(text) == text


def test_skipped_files_are_counted_per_extension_and_named_up_to_a_limit():
    paths = [f"scans/{i:02}.pdf" for i in range(11)] + ["sheet.docx", "Makefile"]
    assert count_by_extension(paths) == {".pdf": 11, NO_EXTENSION: 1, ".docx": 1}
    message = describe_skipped(paths)
    assert message.startswith(
        "skipped 13 files with extensions the corpus does not read (.pdf 11, (no extension) 1, .docx 1): "
    )
    assert "scans/09.pdf (+3 more)" in message and "scans/10.pdf" not in message
    assert ".md, .markdown, .txt, .rst, .html, .htm" in message
