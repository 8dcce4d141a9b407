"""ContextOptions: every knob of context_for, with its default and its bounds, in one place.

The JSON API, the question page, `datasette okf context`, `llm okf` and the MCP
tool all build their options here, from the plugin configuration first and the
caller's own values on top, so one question gets one answer whichever way it is
asked. A bad value is a BadOption naming the parameter.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .graph import check_predicate_weights

MODES = ("hybrid", "vector", "keyword", "graph-walk")
SEED_LISTS = ("title", "fts", "vector", "dated")


class BadOption(ValueError):
    """An option out of its bounds or of the wrong type; `parameter` names it."""

    def __init__(self, parameter: str, message: str):
        super().__init__(message)
        self.parameter = parameter


@dataclass(frozen=True)
class ContextOptions:
    mode: str = "hybrid"
    k: int = 10  # rows per seed list (hybrid: at least 20); in vector and keyword modes also the notes kept
    budget: int = 3000  # tokens of context: notes within three quarters, more of the seeds in the rest
    hops: int = 1  # of the walk, in hybrid mode: the second round (bridge) reaches further, by what notes say
    max_seeds: int = 5  # seeds kept after fusion, in hybrid mode
    vector_k: int = 60  # nearest chunks the vector list reads
    cap: int | None = None  # most notes the walk adds (None: as many as there are seeds, and retrieve.WALK_EXTRA)
    vector_threshold: float | None = None  # cosine a vector hit needs to be confident (None: the model's own)
    coverage_threshold: float = 0.5  # share of the question's words the top keyword match must cover
    historical: bool | None = None  # follow superseded notes as they were (None: when the question asks)
    predicate_weights: dict[str, dict[str, float]] = field(default_factory=dict)  # per intent, over graph.py's
    fusion_weights: dict[str, float] = field(default_factory=dict)  # per seed list, over title 2, fts 1, vector 1, dated 2
    binary_from: int = 20_000  # chunks from which vector candidates come from 1-bit codes
    today: str | None = None  # ISO date staleness is judged at (None: now)

    # What a request or a command line may set, and the plugin configuration besides.
    PER_REQUEST = ("mode", "k", "budget", "hops", "max_seeds")
    CONFIGURABLE = PER_REQUEST + ("vector_threshold", "coverage_threshold", "predicate_weights", "fusion_weights")

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise BadOption("mode", f"mode must be one of {', '.join(MODES)}")
        for name, (low, high) in BOUNDS.items():
            value = getattr(self, name)
            if value is None and name in OPTIONAL:
                continue
            number = int if name in WHOLE else float
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or (number is int and value != int(value)):
                raise BadOption(name, f"{name} must be a {'whole number' if number is int else 'number'}")
            if not low <= value <= high:
                raise BadOption(name, f"{name} must be between {low} and {high}")
        if not isinstance(self.fusion_weights, dict) or not all(
                key in SEED_LISTS and isinstance(value, (int, float)) and not isinstance(value, bool)
                for key, value in self.fusion_weights.items()):
            raise BadOption("fusion_weights", f"fusion_weights maps {', '.join(SEED_LISTS)} to numbers")
        if not isinstance(self.predicate_weights, dict):
            raise BadOption("predicate_weights", "predicate_weights maps each intent to {pattern: factor}")
        try:
            check_predicate_weights(self.predicate_weights)
        except ValueError as error:
            raise BadOption("predicate_weights", str(error).removeprefix("graph_expand: ")) from None

    @property
    def candidates(self) -> int:
        """Chunks taken from the 1-bit codes before the exact re-rank."""
        return max(200, 4 * self.vector_k)

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> ContextOptions:
        """Defaults from the plugin configuration (`plugins: datasette-okf:`); other keys there are not ours."""
        return cls(**{key: value for key, value in (config or {}).items() if key in cls.CONFIGURABLE})

    def with_(self, **values: Any) -> ContextOptions:
        """These options with `values` on top, the ones given as None left as they are."""
        return replace(self, **{key: value for key, value in values.items() if value is not None})

    def with_request(self, args: Mapping[str, str]) -> ContextOptions:
        """These options with a request's query-string values on top (text, so whole numbers are parsed)."""
        values: dict[str, Any] = {}
        for name in self.PER_REQUEST:
            raw = args.get(name)
            if raw in (None, ""):
                continue
            if name == "mode":
                values[name] = raw
                continue
            try:
                values[name] = int(raw)
            except ValueError:
                raise BadOption(name, f"{name} must be a whole number") from None
        return replace(self, **values)


BOUNDS: dict[str, tuple[float, float]] = {
    "k": (1, 100), "budget": (100, 20000), "hops": (0, 3), "max_seeds": (1, 50), "vector_k": (1, 1000),
    "cap": (0, 1000), "vector_threshold": (-1, 1), "coverage_threshold": (0, 1), "binary_from": (0, 10**12),
}
WHOLE = {"k", "budget", "hops", "max_seeds", "vector_k", "cap", "binary_from"}
OPTIONAL = {"cap", "vector_threshold"}
