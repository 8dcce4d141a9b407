from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent
EXAMPLES = ROOT / "examples" / "campaign"
VAULT = HERE / "fixtures" / "vault"
SHARED = Path(os.environ.get("OKF_SHARED", ROOT.parent / "shared"))
CORPORA = SHARED / "corpora"

needs_corpora = pytest.mark.skipif(
    not CORPORA.is_dir(), reason=f"shared corpora not present at {CORPORA} (CI has them)"
)


def write_bundle(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write a small bundle: {relative path: text or bytes}."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


import contextlib
import hashlib
import math
import socket
import threading

import llm


class HashEmbedding(llm.EmbeddingModel):
    """A deterministic test double: words hashed into `dims` buckets, L2-normalised."""

    supports_text = True

    def __init__(self, model_id: str, dims: int):
        self.model_id = model_id
        self.dims = dims
        self.calls = 0

    def embed_batch(self, items):
        self.calls += 1
        for text in items:
            vector = [0.0] * self.dims
            for word in str(text).lower().split():
                vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dims] += 1.0
            norm = math.sqrt(sum(v * v for v in vector)) or 1.0
            yield [v / norm for v in vector]


class _TestModels:
    def __init__(self):
        self.models = [HashEmbedding("okf-test-hash-8", 8), HashEmbedding("okf-test-hash-16", 16)]

    @llm.hookimpl
    def register_embedding_models(self, register):
        for model in self.models:
            register(model)


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def test_models(monkeypatch, tmp_path):
    """Register the hash doubles with llm; point llm-ollama at a closed port so lookups stay local."""
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{closed_port()}")
    plugin = _TestModels()
    llm.plugins.pm.register(plugin, name="okf-test-models")
    yield {m.model_id: m for m in plugin.models}
    llm.plugins.pm.unregister(name="okf-test-models")


@pytest.fixture(scope="session")
def campaign_db(tmp_path_factory):
    """examples/campaign built once with the real default model, shared by the tests that read it."""
    from datasette_okf.store import build

    path = tmp_path_factory.mktemp("campaign") / "campaign.db"
    build([EXAMPLES], path)
    return path


@pytest.fixture(scope="session")
def campaign_mentions_db(tmp_path_factory):
    """The same bundle built with --link-mentions."""
    from datasette_okf.store import build

    path = tmp_path_factory.mktemp("campaign-mentions") / "campaign.db"
    build([EXAMPLES], path, link_mentions=True)
    return path


@contextlib.contextmanager
def running_datasette(*args: str):
    """`datasette serve ARGS` on a free 127.0.0.1 port; yields its URL, stops it afterwards."""
    import subprocess
    import sys
    import time

    port = closed_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "datasette", "serve", *args, "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        else:
            pytest.fail("datasette did not start within 60 s")
        yield f"http://127.0.0.1:{port}/"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def datasette_server(campaign_db):
    """`datasette serve` of the example database (with metadata.yml) on a free 127.0.0.1 port; yields its URL."""
    with running_datasette(str(campaign_db), "--metadata", str(ROOT / "metadata.yml")) as url:
        yield url


@pytest.fixture(scope="session", autouse=True)
def _session_embedding_cache(tmp_path_factory):
    """Builds in session-scoped fixtures (campaign_db) use a throw-away vector cache too, never ~/.cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DATASETTE_OKF_CACHE", str(tmp_path_factory.mktemp("embedding-cache") / "vectors.db"))
        yield


@pytest.fixture(autouse=True)
def embedding_cache_file(monkeypatch, tmp_path_factory):
    """Every test gets its own empty vector cache (vector_cache.py), outside its tmp_path; never the user's."""
    path = tmp_path_factory.mktemp("embedding-cache") / "vectors.db"
    monkeypatch.setenv("DATASETTE_OKF_CACHE", str(path))
    return path


def wait_for_preparing() -> None:
    """Wait for every start-up thread that prepares databases (web.PREPARING): a server an earlier test started
    may still have one, which could meet a test's patched code or make a per-build state it counts on."""
    from datasette_okf.web import PREPARING

    for thread in threading.enumerate():
        if thread.name == PREPARING:
            thread.join(timeout=60)
