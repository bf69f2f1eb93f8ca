from __future__ import annotations

import io
import logging

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.core.redaction import (
    SECRET_VARIABLES,
    URL_VARIABLES,
    RedactedError,
    RedactingStream,
    configured_secrets,
    install_log_redaction,
    redact,
    redact_exception,
    redact_frame,
    redact_value,
)

KEY = "sk-proj-Q8r2Zt7LmN4vX9aB1cD5eF6gH"
LANGSMITH = "lsv2_pt_0123456789abcdef0123456789abcdef_deadbeef"
MARK = "[redacted OPENAI_API_KEY]"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SECRET_VARIABLES + URL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return KEY


def test_a_secret_is_replaced_by_a_marker_naming_its_variable(key: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("LANGSMITH_API_KEY", LANGSMITH)
    text = f"Incorrect API key provided: {key}. Also {LANGSMITH}!"
    assert redact(text) == f"Incorrect API key provided: {MARK}. Also [redacted LANGSMITH_API_KEY]!"


def test_a_truncated_echo_of_eight_characters_or_more_is_caught_and_seven_are_not(key: str):
    assert redact(f"key {key[:12]}... refused") == f"key {MARK}... refused"
    assert redact(f"key ****{key[-8:]} refused") == f"key ****{MARK} refused"
    assert redact(f"middle:{key[9:20]}:end") == f"middle:{MARK}:end"
    seven = key[3:10]
    assert redact(f"only {seven} here") == f"only {seven} here"


def test_a_passphrase_is_redacted_whole_but_its_ordinary_words_elsewhere_are_left_alone(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "dagster_password")
    assert redact("login with dagster_password failed") == "login with [redacted DAGSTER_PG_PASSWORD] failed"
    assert redact("reset the password of the dagster user") == "reset the password of the dagster user"
    assert redact("echo: dagster_pa...") == "echo: [redacted DAGSTER_PG_PASSWORD]..."  # not only letters


def test_runs_of_two_secrets_and_repeated_runs_are_all_replaced(key: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("LANGSMITH_API_KEY", LANGSMITH)
    text = f"{key}{LANGSMITH[:10]} and again {key[5:]}, {key}"
    assert redact(text) == f"{MARK}[redacted LANGSMITH_API_KEY] and again {MARK}, {MARK}"


def test_secrets_are_read_from_the_environment_at_call_time(monkeypatch: pytest.MonkeyPatch):
    text = f"echo {KEY}"
    assert redact(text) is text  # nothing configured: the same string back
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert redact(text) == f"echo {MARK}"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other-key-entirely-9999")
    assert redact(text) == text


def test_secrets_too_short_to_mean_anything_are_ignored(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "admin")
    assert configured_secrets() == ()
    assert redact("the admin user logged in as admin") == "the admin user logged in as admin"


def test_the_password_inside_a_url_variable_is_a_secret_in_both_spellings(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("QDRANT_URL", "https://reader:s3cret%2Fpass-word@qdrant.example.com:6333")
    assert {s.value for s in configured_secrets()} == {"s3cret%2Fpass-word", "s3cret/pass-word"}
    assert redact("auth s3cret/pass-word failed") == "auth [redacted QDRANT_URL] failed"
    assert (
        redact("GET https://reader:s3cret%2Fpass-word@qdrant")
        == "GET https://reader:[redacted QDRANT_URL]@qdrant"
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "not a url [")  # nothing to find, and no crash
    assert redact("plain text that is long enough") == "plain text that is long enough"


def test_a_postgres_password_with_spaces_and_slashes_is_caught(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "pa ss/w0rd with space")
    assert redact("FATAL: password pa ss/w0rd with space rejected") == (
        "FATAL: password [redacted DAGSTER_PG_PASSWORD] rejected"
    )


def test_redact_value_walks_containers_and_keeps_untouched_objects(key: str):
    value = {"error": {"message": f"bad {key}"}, "n": 3, "tags": [key[:10], "ok"], key: (1, f"x{key}")}
    assert redact_value(value) == {
        "error": {"message": f"bad {MARK}"},
        "n": 3,
        "tags": [MARK, "ok"],
        MARK: (1, f"x{MARK}"),
    }
    clean = {"a": ["no secret here at all"], "b": 2.5}
    assert redact_value(clean) is clean
    array = np.array([f"k={key}", "fine and long"], dtype=object)
    assert redact_value(array).tolist() == [f"k={MARK}", "fine and long"]


def test_redact_frame_redacts_text_and_list_columns_and_leaves_the_input_alone(key: str):
    frame = pd.DataFrame(
        {
            "detail": [f"refused: {key}", "fine and long enough", None],
            "raw": [[f"a {key}"], [], ["plain text here"]],
            "score": [1.0, 2.0, 3.0],
            "name": pd.Series(["x", f"{key}", "y"], dtype="string"),
        }
    )
    out = redact_frame(frame)
    assert out["detail"].tolist()[:2] == [f"refused: {MARK}", "fine and long enough"]
    assert pd.isna(out["detail"][2]) and out["detail"].dtype == frame["detail"].dtype
    assert out["raw"].tolist() == [[f"a {MARK}"], [], ["plain text here"]]
    assert out["name"].tolist() == ["x", MARK, "y"] and str(out["name"].dtype) == "string"
    assert out["score"].tolist() == [1.0, 2.0, 3.0]
    assert frame["detail"][0] == f"refused: {key}"  # the caller's frame is not modified
    untouched = pd.DataFrame({"a": ["nothing secret in here"], "b": [1]})
    assert redact_frame(untouched) is untouched
    # one scan over the joined strings: a run never spans two cells
    split = pd.DataFrame({"a": [key[:7], key[7:14]]})
    assert redact_frame(split) is split


def test_an_exception_is_redacted_in_place_with_its_chain(key: str):
    try:
        try:
            raise ValueError(f"server said: {key}")
        except ValueError as inner:
            raise RuntimeError(f"call failed with {key[:9]}") from inner
    except RuntimeError as exc:
        raised = exc
        clean = redact_exception(exc)
    assert clean is raised and type(clean) is RuntimeError and clean.__traceback__ is not None
    assert str(clean) == f"call failed with {MARK}"
    assert str(clean.__cause__) == f"server said: {MARK}"


def test_an_exception_whose_message_is_not_its_args_is_replaced(key: str):
    class Unusual(Exception):
        def __init__(self, content: bytes) -> None:
            super().__init__()
            self._content = content

        def __str__(self) -> str:
            return f"unexpected response: {self._content.decode()}"

    clean = redact_exception(Unusual(f"Incorrect API key {key}".encode()))
    assert isinstance(clean, RedactedError)
    assert str(clean) == f"Unusual: unexpected response: Incorrect API key {MARK}"


def test_log_records_carry_redacted_messages_and_tracebacks(key: str):
    install_log_redaction()
    install_log_redaction()  # idempotent: one factory, not two stacked
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("rag_eval_pipeline_tests.redaction")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("gateway said %s", f"Incorrect API key provided: {key}")
        try:
            raise PermissionError(f"401 {key}")
        except PermissionError:
            logger.exception("call failed")
    finally:
        logger.removeHandler(handler)
    written = stream.getvalue()
    assert key[:8] not in written
    assert f"gateway said Incorrect API key provided: {MARK}" in written
    assert f"PermissionError: 401 {MARK}" in written


def test_a_redacting_stream_redacts_each_write_and_is_otherwise_the_stream(key: str):
    target = io.StringIO()
    stream = RedactingStream(target)
    assert stream.write(f"key={key}\n") == len(f"key={key}\n")
    stream.writelines(["a line without secrets\n", f"{key[:10]}\n"])
    stream.flush()
    assert target.getvalue() == f"key={MARK}\na line without secrets\n{MARK}\n"
    assert stream.isatty() is False and stream.getvalue() == target.getvalue()
