"""Personal data and secrets in queries: found, by kind, and redacted; ordinary numbers left alone."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.judging.pii import find_pii, pii_kinds, redact_pii


@pytest.mark.parametrize(
    ("text", "kinds", "redacted"),
    [
        ("mail jane.doe+rag@example.co.uk now", ("e-mail",), "mail [e-mail] now"),
        ("call +44 20 7946 0958", ("phone",), "call [phone]"),
        ("call (555) 123-4567 today", ("phone",), "call [phone] today"),
        ("ring 5551234567", ("phone",), "ring [phone]"),
        ("card 4111 1111 1111 1111 declined", ("card-number",), "card [card-number] declined"),
        ("card 4111-1111-1111-1112 declined", (), "card 4111-1111-1111-1112 declined"),  # fails Luhn: no card
        ("my key sk-proj-abcdEFGH1234ijklMNOP5678 fails", ("key",), "my key [key] fails"),
        ("token lsv2_pt_0123456789abcdef0123456789abcdef_0123456789", ("key",), "token [key]"),
        ("aws AKIAIOSFODNN7EXAMPLE", ("key",), "aws [key]"),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
            ("key",),
            "jwt [key]",
        ),
        ("Authorization: Bearer abcdefghijklmnop1234", ("key",), "Authorization: [key]"),
        ("secret 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", ("key",), "secret [key]"),
        ("b64 dGhpc2lzYXNlY3JldHRva2VuMTIzNDU2Nzg5MA==", ("key",), "b64 [key]"),
        ("jane@example.com or +1 415 555 0100", ("e-mail", "phone"), "[e-mail] or [phone]"),
    ],
)
def test_personal_data_is_found_and_redacted(text: str, kinds: tuple[str, ...], redacted: str) -> None:
    assert pii_kinds(text) == kinds
    assert redact_pii(text) == redacted


@pytest.mark.parametrize(
    "text",
    [
        "how long do we keep raw events?",
        "release of 2026-12-02",
        "the node at 192.168.100.200",
        "upgrade to 1.2.3 or python 3.11",
        "order 123456789",  # 9 bare digits: as often an order number as a phone number
        "port 8080 and 443",
        "error 0x80070005",
        "10000000 rows a day",
        "commit 3f2a9c1",
        "ThisIsALongCamelCaseIdentifierWithoutDigits",
    ],
)
def test_ordinary_numbers_and_words_are_not_flagged(text: str) -> None:
    assert find_pii(text) == ()
    assert redact_pii(text) == text


def test_a_secret_configured_in_the_environment_is_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QDRANT_API_KEY", "plainlowercasesecretvalue")  # no pattern would catch it
    assert pii_kinds("why does plainlowercasesecretvalue fail") == ("key",)
    assert redact_pii("why does plainlowercasesecretvalue fail") == "why does [key] fail"
