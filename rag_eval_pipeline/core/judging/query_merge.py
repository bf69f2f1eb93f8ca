"""Queries merged: duplicates and near-duplicates become one query, their counts added, the other texts
kept as its ``variants``; and every imported file's contribution kept apart, so importing a file again
replaces what it gave instead of adding it twice.

**Duplicates**: the same ``query_id_for`` (the same text after folding case and whitespace).

**Near-duplicates**: after folding, two texts whose *token sets* overlap enough. Folding: Unicode NFKC,
case folded, apostrophes dropped ("what's" -> "whats"), every other character that is not a letter or a
digit read as a space; the tokens are the words left. Two texts are near-duplicates when
- the Jaccard similarity of their token sets is at least ``NEAR_DUPLICATE_JACCARD`` (0.8): "How do I
  reset my password?" and "how do i reset my password please" (6/7) are; "How do I delete my account"
  and "How do I reset my account" (5/7) are not;
- and they agree on every token holding a digit ("python 3.11" is never "python 3.12", however long the
  rest) and on every negation (``NEGATIONS``: "not", "no", "without", ...: "backup with encryption" is
  never "backup without encryption").
Only the threshold decides, no model and nothing downloaded: the same texts merge the same way on every
machine. Misspellings ("pasword") are not merged: a near miss of a different query costs more (it would
be judged as a query it is not) than a duplicate left apart (judged twice).

Clusters are built greedily, most asked first: each query (after exact merging) joins the first cluster
whose *leading* text it is a near-duplicate of, else leads a new one. So a cluster never chains from A
to C through a B that resembles both, and the leading text, the query's text, is the most asked one.
With one exception: a query already stored keeps its text (and so its id, which judgements refer to)
while that text is still imported; stored texts lead their clusters first, in their stored order.

**Re-imports**: the judging folder keeps each file's contribution (``query_imports.jsonl``: one line per
file and text, with its count and places). Importing a file whose source name (its path, relative to the
workspace when inside it) was imported before replaces that file's records; then every query is merged
again from all files' contributions. So importing the same file twice gives the same counts as once,
and an updated export of a log replaces the old one; two different files add up.
"""

from __future__ import annotations

import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..store.files import locked, write_text_atomically
from .store import JudgingStore, json_lines, read_json_lines
from .types import ImportedQuery, QueryId, query_id_for

# exact, as a fraction: 0.8 * 5 in floating point need not be 4
NEAR_DUPLICATE_JACCARD = Fraction(4, 5)
_NUM, _DEN = NEAR_DUPLICATE_JACCARD.numerator, NEAR_DUPLICATE_JACCARD.denominator
NEGATIONS = frozenset(
    {"not", "no", "never", "without", "cannot", "cant", "dont", "doesnt", "isnt", "wont", "nor", "none"}
)
QUERY_IMPORTS_FILE = "query_imports.jsonl"
MAX_SOURCES = 10  # where a query was read ("file:line"), the first few


@dataclass(frozen=True)
class SourceQuery:
    """What one imported file said of one text: how often it was asked there, and where."""

    source: str  # the file, relative to the workspace when inside it
    text: str
    count: int
    places: tuple[str, ...]  # the line of each occurrence, with the log's id: "3" or "3 id=q-17"
    pii: tuple[str, ...] = ()  # kinds flagged and stored as is (--allow-pii)


# --- folding and similarity ----------------------------------------------------------------------------


def fold(text: str) -> tuple[str, ...]:
    """The tokens of ``text`` as near-duplicates compare them (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    kept = []
    for char in text:
        if char in "'’‘`´":
            continue
        kept.append(char if char.isalnum() else " ")
    return tuple("".join(kept).split())


def near_duplicates(a: str, b: str) -> bool:
    """Whether two texts are near-duplicates (the rule of the module docstring)."""
    return _similar(frozenset(fold(a)), frozenset(fold(b)))


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
    if not a or not b:  # no word at all ("???"): only an exact duplicate merges
        return False
    if len(a & b) * _DEN < _NUM * len(a | b):
        return False
    return not any(_guarded(token) for token in a ^ b)  # no number or negation in one only


def _guarded(token: str) -> bool:
    """A token two near-duplicates must share: a negation, or anything holding a digit."""
    return token in NEGATIONS or any(c.isdigit() for c in token)


# --- merging -------------------------------------------------------------------------------------------


@dataclass
class _Group:
    texts: Counter[str]
    sources: list[str]
    pii: set[str]

    @property
    def count(self) -> int:
        return sum(self.texts.values())


def merge_queries(
    contributions: Iterable[SourceQuery], stored: Sequence[ImportedQuery] = ()
) -> list[ImportedQuery]:
    """Every text of ``contributions`` merged into queries (duplicates, then near-duplicates), most
    asked first (ties by id). ``stored``: the queries stored before, whose texts keep leading their
    clusters (so their ids stay)."""
    exact: dict[QueryId, _Group] = {}
    for item in contributions:
        group = exact.setdefault(query_id_for(item.text), _Group(Counter(), [], set()))
        group.texts[item.text] += item.count
        group.sources.extend(f"{item.source}:{place}" for place in item.places)
        group.pii.update(item.pii)
    stored_rank = {q.query_id: rank for rank, q in enumerate(stored)}
    stored_text = {q.query_id: q.text for q in stored}

    def order(item: tuple[QueryId, _Group]) -> tuple[int, int, str]:
        query_id, group = item
        return (stored_rank.get(query_id, len(stored_rank)), -group.count, query_id)

    ordered = sorted(exact.items(), key=order)
    token_sets = [
        frozenset(fold(_leading_text(group, stored_text.get(query_id)))) for query_id, group in ordered
    ]
    rarity = Counter(token for tokens in token_sets for token in tokens)
    clusters: list[tuple[QueryId, frozenset[str], list[_Group]]] = []
    # (prefix token, leader size) -> the clusters whose leader has that token in its prefix
    index: dict[tuple[str, int], list[int]] = defaultdict(list)
    for (query_id, group), tokens in zip(ordered, token_sets, strict=True):
        prefix = _prefix(tokens, rarity)
        home = _find_cluster(tokens, prefix, clusters, index)
        if home is None:
            for token in prefix:
                index[token, len(tokens)].append(len(clusters))
            clusters.append((query_id, tokens, [group]))
        else:
            clusters[home][2].append(group)
    merged = [_merged(query_id, groups, stored_text.get(query_id)) for query_id, _, groups in clusters]
    return sorted(merged, key=lambda q: (-q.count, q.query_id))


def _prefix(tokens: frozenset[str], rarity: Mapping[str, int]) -> tuple[str, ...]:
    """The rarest ``|x| - ceil(t |x|) + 1`` tokens of ``x`` (rarest first, ties by token): two sets of
    Jaccard similarity >= t share at least ``ceil(t max(|x|, |y|))`` tokens, so their prefixes, cut
    from the same global order, share one (prefix filtering, as in Bayardo et al.'s All-Pairs). Only
    leaders sharing a prefix token need comparing: thousands of queries all holding "how" stay cheap."""
    t = NEAR_DUPLICATE_JACCARD
    must_share = -(-len(tokens) * t.numerator // t.denominator)  # ceil, in integers
    return tuple(sorted(tokens, key=lambda token: (rarity[token], token))[: len(tokens) - must_share + 1])


def _find_cluster(
    tokens: frozenset[str],
    prefix: Sequence[str],
    clusters: Sequence[tuple[QueryId, frozenset[str], list[_Group]]],
    index: Mapping[tuple[str, int], list[int]],
) -> int | None:
    """The first cluster (in creation order) whose leader is a near-duplicate of ``tokens``; only the
    leaders sharing a prefix token can be (``_prefix``)."""
    size = len(tokens)
    # Jaccard >= t needs t |larger| <= |smaller|: only leaders of these sizes can be near
    sizes = range(-(-size * _NUM // _DEN), size * _DEN // _NUM + 1)
    candidates = sorted({c for token in prefix for n in sizes for c in index.get((token, n), ())})
    return next((c for c in candidates if _similar(tokens, clusters[c][1])), None)


def _leading_text(group: _Group, stored: str | None) -> str:
    """The stored text while it is still imported, else the most asked text (ties: the smaller)."""
    if stored is not None and stored in group.texts:
        return stored
    return min(group.texts.items(), key=lambda item: (-item[1], item[0]))[0]


def _merged(query_id: QueryId, groups: Sequence[_Group], stored: str | None) -> ImportedQuery:
    texts: Counter[str] = Counter()
    for group in groups:
        texts.update(group.texts)
    text = _leading_text(groups[0], stored)
    variants = tuple(t for t, _ in sorted(texts.items(), key=lambda item: (-item[1], item[0])) if t != text)
    sources = [s for group in groups for s in group.sources][:MAX_SOURCES]
    pii = sorted({p for group in groups for p in group.pii})
    return ImportedQuery(query_id_for(text), text, sum(texts.values()), variants, tuple(sources), tuple(pii))


# --- each file's contribution --------------------------------------------------------------------------


def read_contributions(folder: Path) -> list[SourceQuery]:
    return read_json_lines(
        folder / QUERY_IMPORTS_FILE,
        lambda obj: SourceQuery(
            str(obj["source"]),
            str(obj["text"]),
            int(obj["count"]),
            tuple(str(n) for n in obj.get("places", ())),
            tuple(str(p) for p in obj.get("pii", ())),
        ),
        "rag-eval queries import",
    )


def contributions_of(
    source: str, queries: Iterable[tuple[str, int, str, Sequence[str]]]
) -> list[SourceQuery]:
    """One file's queries (text, count, place, pii kinds) as its contribution: one record per text."""
    counts: dict[str, int] = {}
    places: dict[str, list[str]] = defaultdict(list)
    pii: dict[str, set[str]] = defaultdict(set)
    for text, count, place, kinds in queries:
        counts[text] = counts.get(text, 0) + count
        places[text].append(place)
        pii[text].update(kinds)
    return [SourceQuery(source, t, c, tuple(places[t]), tuple(sorted(pii[t]))) for t, c in counts.items()]


@dataclass(frozen=True)
class ImportResult:
    queries: tuple[ImportedQuery, ...]  # every stored query after the import
    replaced: int  # records of this source that an earlier import had stored (now replaced)


def import_contribution(
    store: JudgingStore, source: str, contribution: Sequence[SourceQuery]
) -> ImportResult:
    """Replace ``source``'s contribution in the store's folder and store every query merged again,
    under the contributions' lock (two imports at once take turns)."""
    path = store.folder / QUERY_IMPORTS_FILE
    with locked(path):
        before = read_contributions(store.folder)
        stored = store.read_queries()
        if not before and stored:
            before = _from_stored(stored)  # queries stored before contributions were kept: one source
        others = [c for c in before if c.source != source]
        replaced = len(before) - len(others)
        after = others + list(contribution)
        queries = merge_queries(after, stored)
        write_text_atomically(path, json_lines(_to_json(c) for c in after))
        store.write_queries(queries)
    return ImportResult(tuple(queries), replaced)


STORED_BEFORE = "(queries.jsonl before query_imports.jsonl)"


def _from_stored(stored: Sequence[ImportedQuery]) -> list[SourceQuery]:
    """Queries stored with no record of their files: kept as one source, each with its count (its
    variants, whose own counts are unknown, each asked once out of it)."""
    found = []
    for query in stored:
        variants = query.variants[: max(query.count - 1, 0)]
        found.append(SourceQuery(STORED_BEFORE, query.text, query.count - len(variants), (), query.pii))
        found.extend(SourceQuery(STORED_BEFORE, v, 1, (), query.pii) for v in variants)
    return found


def _to_json(item: SourceQuery) -> dict[str, Any]:
    return {
        "source": item.source,
        "text": item.text,
        "count": item.count,
        "places": list(item.places),
        "pii": list(item.pii),
    }


def total_traffic(queries: Iterable[ImportedQuery]) -> int:
    return sum(q.count for q in queries)
