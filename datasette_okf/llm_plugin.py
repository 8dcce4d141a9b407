"""The llm plugin: the embedded default embedding model (and, later, `llm okf`)."""

import llm

from .embed import DEFAULT_ALIASES, OKFMiniLM


@llm.hookimpl
def register_embedding_models(register):
    register(OKFMiniLM(), aliases=DEFAULT_ALIASES)
