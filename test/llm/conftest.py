"""Fixtures for the backend tests.

`chat_server`: the scripted OpenAI-compatible server (`support.chat_server`), so error paths
(timeouts, 429, 500, rejected response formats, malformed answers) are exercised through the
real client.

`llama_server`: llama.cpp (xllamacpp) serving the offline Qwen2.5-Coder-0.5B model for
the whole session — the real thing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.chat_server import ChatServer


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.close()


@pytest.fixture(scope="session")
def llama_server() -> Iterator[Any]:
    """llama.cpp serving the offline Qwen 0.5B model on loopback for the whole session.

    Fails (does not skip) when the model packages are missing: they are pinned in
    requirements/extra.txt and this is the test of the real path.
    """
    from mango.llm.local import LocalServer

    server = LocalServer("qwen0.5b", threads=2, parallel=1)  # the default context
    yield server
    server.close()
