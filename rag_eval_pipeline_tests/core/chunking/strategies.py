"""Hypothesis strategies: arbitrary unicode, prose-like text, and documents that repeat a passage."""

from __future__ import annotations

from hypothesis import strategies as st

from rag_eval_pipeline.core.settings.configs import DEFAULT_SEPARATORS

_prose_alphabet = st.sampled_from([*"ab cd\n.!?é日 ", "\n\n", ". ", "word ", "x\u0301", "\u200b", "\t"])
prose = st.lists(_prose_alphabet, max_size=80).map("".join)

passage = st.one_of(
    st.sampled_from(["The same sentence. ", "Para one.\n\n", "repeat ", "Tokenization is fun! "]),
    st.text(min_size=1, max_size=25),
)


@st.composite
def repeated_passages(draw: st.DrawFn) -> str:
    """A passage 2-5 times, optionally framed: copies that chunk ids and offsets must tell apart."""
    body = draw(passage)
    joiner = draw(st.sampled_from(["", " ", "\n", "\n\n"]))
    copies = joiner.join([body] * draw(st.integers(2, 5)))
    return draw(st.sampled_from(["", "Intro. "])) + copies + draw(st.sampled_from(["", " end"]))


texts = st.one_of(st.text(max_size=200), prose, repeated_passages())


@st.composite
def size_and_overlap(draw: st.DrawFn, max_size: int = 60) -> tuple[int, int]:
    size = draw(st.integers(1, max_size))
    return size, draw(st.integers(0, size - 1))


separators = st.one_of(
    st.just(DEFAULT_SEPARATORS),
    st.lists(st.sampled_from(["\n\n", "\n", ". ", " ", "", "a", "ab", "日"]), max_size=5, unique=True).map(
        tuple
    ),
)

# Where cl100k_base merges across whitespace (runs of spaces and newlines, "\n\n" against words) or splits
# one character into byte tokens (emoji, rare CJK, flags), plus text that looks like a special token.
_token_alphabet = st.sampled_from(
    [
        *"ab Zé日本語한\n\t.,!?'",
        *["  ", "   ", "\n\n", "\n\n\n", " \n", "\n ", "word", " word", "The", "123456", "'s"],
        *["“", "”", "‘", "’", "…", "😀", "👍🏽", "🇫🇷", "鬱", "𝔘", "e\u0301", "x\u0301\u0302", "\u200b"],
        "<|endoftext|>",
    ]
)
token_texts = st.one_of(st.lists(_token_alphabet, max_size=60).map("".join), st.text(max_size=120))
