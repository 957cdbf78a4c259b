"""The OpenAI-compatible embedder against a real HTTP server on 127.0.0.1.

The server is a small stand-in for a hosted API or Ollama (the boundary we cannot
reach here): it answers /embeddings with the hashing embedder's vectors, or
misbehaves on request, so every path of the client runs for real.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from memory.embedders import make_embedder
from memory.embedders.hashing import HashingEmbedder
from memory.embedders.http_settings import HttpEmbedderSettings
from memory.errors import EmbedderError
from tests.memory.conftest import serving


class FakeEmbeddingServer(ThreadingHTTPServer):
    """Named fake: speaks the OpenAI /embeddings shape; ``mode`` selects a failure."""

    mode = "ok"
    requests: list[dict[str, Any]]
    auth: list[str | None]


class Handler(BaseHTTPRequestHandler):
    server: FakeEmbeddingServer

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        self.server.auth.append(self.headers.get("Authorization"))
        mode = self.server.mode
        if mode == "error":
            self.send_response(500)
            self.end_headers()
            return
        if mode == "garbage":
            payload = b"<html>not json</html>"
        elif mode == "wrong-shape":
            payload = json.dumps({"data": [{"nothing": 1}]}).encode()
        else:
            vectors = HashingEmbedder(64).embed_documents(body["input"])
            # Out of order on purpose: the client must sort by index.
            data = [{"index": i, "embedding": (v * 3).tolist()} for i, v in enumerate(vectors)][::-1]
            payload = json.dumps({"data": data, "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    srv = FakeEmbeddingServer(("127.0.0.1", 0), Handler)
    srv.requests, srv.auth = [], []
    yield from serving(srv)


def settings(srv: FakeEmbeddingServer, **kw: Any) -> HttpEmbedderSettings:
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    return HttpEmbedderSettings(openai_url=url, openai_model="test-embed", **kw)


def test_embeds_in_order_normalised_with_the_key_sent(
    server: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key is read from the variable the settings name, when the embedder is built."""
    monkeypatch.setenv("TEST_EMBED_KEY", "k-123")
    embedder = make_embedder("openai", settings(server, openai_api_key_env="TEST_EMBED_KEY"))
    assert (embedder.id, embedder.dim) == ("openai-test-embed-64", 64)  # dimension probed from the server
    texts = ["alpha beta", "gamma delta", "alpha beta gamma"]
    got = embedder.embed_documents(texts)
    expected = HashingEmbedder(64).embed_documents(texts)
    assert np.allclose(got, expected, atol=1e-6)  # sorted by index and scaled back to unit length
    assert server.auth[-1] == "Bearer k-123"
    assert server.requests[-1] == {"model": "test-embed", "input": texts}


def test_a_secret_never_leaves_for_the_embedding_endpoint(server: FakeEmbeddingServer) -> None:
    """Issue 27: a confidential crystal ("staging db password: ...") was sent whole to the endpoint."""
    embedder = make_embedder("openai", settings(server))
    texts = [
        "staging db password: Tr0ub4dor&3 for the nightly job",
        "card 4111 1111 1111 1111 expires 04/29",
        "the deploy runs on Tuesdays",
    ]
    embedder.embed_documents(texts)
    sent = server.requests[-1]["input"]
    assert sent[2] == "the deploy runs on Tuesdays"  # ordinary text goes as it is
    for text in sent[:2]:
        assert "Tr0ub4dor" not in text and "4111 1111" not in text and "[a secret]" in text
    assert "staging db" in sent[0] and "nightly job" in sent[0]  # the topic stays findable


@pytest.mark.parametrize(
    ("mode", "message"), [("error", "failed"), ("garbage", "non-JSON"), ("wrong-shape", "unexpected shape")]
)
def test_a_misbehaving_endpoint_gives_a_clear_error(server: FakeEmbeddingServer, mode: str, message: str) -> None:
    embedder = make_embedder("openai", settings(server))
    server.mode = mode
    with pytest.raises(EmbedderError, match=message):
        embedder.embed_documents(["x"])


def test_unreachable_endpoint_and_missing_settings() -> None:
    with pytest.raises(EmbedderError, match="failed"):
        make_embedder("openai", HttpEmbedderSettings(openai_url="http://127.0.0.1:9/v1", openai_model="m"))
    with pytest.raises(EmbedderError, match="openai_url"):
        make_embedder("openai", HttpEmbedderSettings())
    with pytest.raises(EmbedderError, match="unknown embedder"):
        make_embedder("word2vec")
