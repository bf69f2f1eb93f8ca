"""Settings from the environment, and every way LangSmith can fail: one LangSmithError, fast, keyless."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator

import langsmith
import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.langsmith import (
    ExperimentRow,
    LangSmithError,
    LangSmithSettings,
    download_dataset,
    log_experiment,
    upload_dataset,
)
from rag_eval_pipeline.core.langsmith.errors import describe_failure
from rag_eval_pipeline.core.questions.datasets import TokenLevelDataset
from rag_eval_pipeline_tests.langsmith_server import API_KEY, Fault, LangSmithState, langsmith_server

OTHER_KEY = "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"


@pytest.fixture
def server() -> Iterator[tuple[str, LangSmithState]]:
    with langsmith_server() as pair:
        yield pair


def test_from_env_without_a_key_is_none_so_langsmith_is_skipped() -> None:
    assert LangSmithSettings.from_env({}) is None
    assert LangSmithSettings.from_env({"LANGSMITH_API_KEY": "  ", "LANGSMITH_ENDPOINT": "http://x"}) is None


def test_from_env_with_a_key() -> None:
    settings = LangSmithSettings.from_env({"LANGSMITH_API_KEY": f" {API_KEY}\n"})
    assert settings is not None
    assert settings.api_key == API_KEY
    assert settings.api_url == "https://api.smith.langchain.com"
    assert settings.resolved_web_url == "https://smith.langchain.com"
    assert settings.workspace_id is None

    custom = LangSmithSettings.from_env(
        {
            "LANGSMITH_API_KEY": API_KEY,
            "LANGSMITH_ENDPOINT": "https://eu.api.smith.langchain.com/",
            "LANGSMITH_WORKSPACE_ID": "ws-1",
        }
    )
    assert custom is not None
    assert (custom.api_url, custom.workspace_id) == ("https://eu.api.smith.langchain.com", "ws-1")
    assert custom.resolved_web_url == "https://eu.smith.langchain.com"
    assert API_KEY not in repr(custom) and API_KEY not in str(custom)

    with pytest.raises(
        LangSmithError, match=r"api_url 'smith.example' is not an http\(s\) URL; fix LANGSMITH_ENDPOINT"
    ):
        LangSmithSettings.from_env({"LANGSMITH_API_KEY": API_KEY, "LANGSMITH_ENDPOINT": "smith.example"})
    with pytest.raises(LangSmithError, match=r"API key holds spaces") as raised:
        LangSmithSettings(api_key="lsv2 pasted twice")
    assert "pasted" not in str(raised.value)


@pytest.mark.parametrize(
    ("api_url", "web_url", "expected"),
    [
        ("http://localhost:1980/api/v1", None, "http://localhost:1980"),  # self-hosted: same host and port
        ("https://langsmith.corp.example/api", None, "https://langsmith.corp.example"),
        ("https://langsmith-api.corp.example", None, "https://langsmith-api.corp.example"),
        (
            "https://langsmith-api.corp.example",
            "https://langsmith.corp.example/",
            "https://langsmith.corp.example",
        ),
    ],
)
def test_web_url_for_links(api_url: str, web_url: str | None, expected: str) -> None:
    assert LangSmithSettings(api_key=API_KEY, api_url=api_url, web_url=web_url).resolved_web_url == expected


def test_client_starts_no_background_thread_and_uses_the_settings(server: tuple[str, LangSmithState]) -> None:
    url, _ = server
    before = set(threading.enumerate())
    client = LangSmithSettings(api_key=API_KEY, api_url=url, web_url="https://ls.example").client()
    # no new thread (one of an earlier test may end meanwhile: client() imports the SDK on first use)
    assert set(threading.enumerate()) - before == set()
    assert client.tracing_queue is None
    assert (client.api_url, client.api_key) == (url, API_KEY)
    assert client.read_project(project_name="default").url.startswith("https://ls.example/o/")
    client.close()


def free_port() -> int:
    """A port nobody listens on: bound, then released."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


Operation = Callable[[langsmith.Client], object]


@pytest.fixture
def operations(token_dataset: TokenLevelDataset, corpus: Corpus) -> dict[str, Operation]:
    rows = [ExperimentRow(e.question_id, {}, {"mrr": 1.0}) for e in token_dataset]
    return {
        "upload": lambda c: upload_dataset(c, token_dataset, "golden"),
        "download": lambda c: download_dataset(c, "golden", corpus),
        "experiment": lambda c: log_experiment(c, "golden", "exp", rows, {}),
    }


@pytest.mark.parametrize("operation", ["upload", "download", "experiment"])
@pytest.mark.parametrize(
    ("fault", "advice"),
    [
        ("server-error", "answered with a server error: LangSmith may be down"),
        ("bad-gateway", "answered with a server error (HTTP 502): LangSmith may be down"),
        ("forbidden", "the API key may not do this (HTTP 403): check LANGSMITH_WORKSPACE_ID"),
        ("unauthorized", "the API key was refused (HTTP 401): check LANGSMITH_API_KEY"),
        ("unreachable", "cannot connect to http://127.0.0.1:"),
        ("slow", "did not answer in time"),
    ],
)
def test_every_failure_is_one_quick_langsmith_error_without_the_key(
    server: tuple[str, LangSmithState],
    operations: dict[str, Operation],
    caplog: pytest.LogCaptureFixture,
    operation: str,
    fault: str,
    advice: str,
) -> None:
    url, state = server
    key = API_KEY
    if fault == "server-error":
        state.faults.append(Fault(status=500, times=100))
    elif fault == "bad-gateway":
        state.faults.append(Fault(status=502, times=100))
    elif fault == "forbidden":
        state.faults.append(Fault(status=403, times=100))
    elif fault == "unauthorized":
        key = OTHER_KEY
    elif fault == "unreachable":
        url = f"http://127.0.0.1:{free_port()}"
    elif fault == "slow":
        state.faults.append(Fault(status=200, delay_s=3.0, times=100))
    client = LangSmithSettings(api_key=key, api_url=url, timeout_s=0.5, max_retries=1).client()

    caplog.set_level(logging.DEBUG)
    started = time.perf_counter()
    with pytest.raises(LangSmithError) as raised:
        operations[operation](client)
    elapsed = time.perf_counter() - started
    client.close()

    message = str(raised.value)
    assert advice in message
    assert message.startswith("LangSmith: ")
    assert elapsed < 2.5, f"{fault} took {elapsed:.1f} s"
    for secret in (key, key[:12], key[-12:]):
        assert secret not in message
        assert secret not in repr(raised.value)
        assert secret not in caplog.text
    assert "API Key" not in message  # the SDK's masked-key line stays out
    assert raised.value.__cause__ is None and raised.value.__suppress_context__  # no chained SDK error


def test_a_password_in_the_endpoint_url_never_reaches_a_failure_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    endpoint = "https://team:Gw7pass-Wq92xZ@langsmith.example.com/api"
    monkeypatch.setenv("LANGSMITH_ENDPOINT", endpoint)
    message = describe_failure("upload", endpoint, API_KEY, ConnectionError(f"cannot reach {endpoint}"))
    assert "Gw7pass-Wq92xZ" not in message and "Gw7pass" not in message
    assert "https://team:[redacted LANGSMITH_ENDPOINT]@langsmith.example.com/api" in message


def test_gateway_errors_are_retried_a_bounded_number_of_times(
    server: tuple[str, LangSmithState], token_dataset: TokenLevelDataset
) -> None:
    url, state = server
    client = LangSmithSettings(api_key=API_KEY, api_url=url, max_retries=2).client()
    state.faults.append(Fault(status=503, method="GET", path="/datasets", times=1))
    assert upload_dataset(client, token_dataset, "golden").created == 4  # one 503, then success

    state.requests.clear()
    state.faults.append(Fault(status=503, method="GET", path="/datasets", times=100))
    with pytest.raises(LangSmithError, match="503"):
        upload_dataset(client, token_dataset, "golden")
    assert state.requests.count(("GET", "/datasets")) == 3  # the first try and max_retries=2 more
    client.close()
