"""How far a question set can be trusted: the question-set health report (plain Python, no Dagster).

Every answer of the leaderboard is only as good as the questions it is measured on. Each measure is a
function of its own module, on the questions, the corpus and (for separation) every setup's
per-question objective:

- ``duplicates.py``: near-duplicate pairs, questions whose embeddings' cosine is at or above a
  threshold (the generators' ``dedup_threshold``), and the groups they form;
- ``lexical.py``: the lexical overlap between a question and its reference (the share of the
  question's content terms found in the reference text), and keyword-trivial questions: every content
  term in the reference AND BM25 ranks a passage of the reference first;
- ``coverage.py``: the share of documents, and of sections under Markdown headings, that some question
  is about, and the largest ones no question is about;
- ``references.py``: the reference's length in characters, and the markup it holds (include
  directives, admonitions, HTML, link lines, fenced code), as the passage chooser classifies lines;
- ``separation.py``: the questions no setup answers and those every setup answers fully (more
  generally, those every setup scores the same: they cannot separate setups), and the effective
  sample size.

``report.py`` puts them together (``assess``), says where the set is weak and what to do
(``health_warnings``) and lays the result out as the asset's row and the per-question table.
"""
