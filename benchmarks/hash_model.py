"""A fast deterministic 384-d embedding model for benchmark builds at 10k+ concepts (labelled as such).

Vectors are random projections of hashed words: they cost nothing to compute and
have the default model's dimension, so storage and KNN cost are the same; their
meaning is not, so retrieval quality is never measured with them.
"""

from __future__ import annotations

import hashlib
import sys
from functools import lru_cache

import llm
import numpy as np

MODEL_ID = "okf-bench-hash-384"


class HashEmbedding(llm.EmbeddingModel):
    model_id = MODEL_ID
    batch_size = 256
    supports_text = True

    def embed_batch(self, items):
        out = np.zeros((len(items), 384), dtype=np.float32)
        for row, text in enumerate(items):
            for word in str(text).lower().split()[:300]:
                out[row] += _word_vector(word)
        out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-9, None)
        return (vector.tolist() for vector in out)


@lru_cache(maxsize=200_000)
def _word_vector(word: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
    return np.random.default_rng(seed).standard_normal(384, dtype=np.float32)


class _Plugin:
    @llm.hookimpl
    def register_embedding_models(self, register):
        register(HashEmbedding())


def register() -> None:
    llm.plugins.pm.register(_Plugin(), name="okf-bench-hash")


if __name__ == "__main__":  # python benchmarks/hash_model.py BUNDLE DB: build with this model
    from datasette_okf.store import build

    register()
    report = build([sys.argv[1]], sys.argv[2], model=MODEL_ID, embedding_cache=False)  # time the model, not a cache
    print(report.embedding)
