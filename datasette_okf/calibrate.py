"""The confidence gate's vector threshold, calibrated on each bundle at build time (docs/design.md §3).

How similar an unrelated question's nearest chunk is depends on the bundle and the
model: a bundle of everyday prose sits closer to everything than a rules
compendium. So the build asks OFF_TOPIC questions (everyday questions no bundle
of notes answers) and keeps, in `meta`, the similarity that all but one in
twenty of them stay below, plus MARGIN. A question whose best chunk clears it
looks like the bundle's business; one that does not, like theirs.
"""

from __future__ import annotations

import json
from typing import Any

from .embed import embed_texts

OFF_TOPIC = (
    "How do I descale an espresso machine?", "What is the capital of Australia?",
    "How do I change a flat tyre on a bicycle?", "What is the boiling point of water at sea level?",
    "How do I make sourdough bread at home?", "Who wrote the novel Pride and Prejudice?",
    "What is the best way to learn to play the guitar?", "How do I reset my router's password?",
    "What is the speed of light in a vacuum?", "How many calories are in a banana?",
    "How do I install Python packages with pip?", "What causes the northern lights?",
    "How do I file my income tax return?", "What is the population of Tokyo?",
    "How do I remove a red wine stain from a carpet?", "When did the Berlin Wall fall?",
    "What is the difference between a virus and a bacterium?", "How do I train a puppy to sit?",
    "Which planet has the most moons?", "How do I write a cover letter for a job application?",
    "What is the recommended tyre pressure for a family car?", "How do solar panels generate electricity?",
    "What are the rules of cricket?", "How do I grow tomatoes on a balcony?",
    "What is the exchange rate between the euro and the dollar?", "How do I fix a leaking kitchen tap?",
    "Who painted the Mona Lisa?", "What is a good stretching routine after running?",
    "How do vaccines train the immune system?", "What is the tallest mountain in Africa?",
    "How do I set up a new email account on my phone?", "What is the plot of the film Casablanca?",
    "How long should I boil an egg for a soft yolk?", "What is machine learning?",
    "How do I knit a scarf for beginners?", "What year did the first moon landing happen?",
    "How do I choose a mortgage?", "What is the chemical formula of table salt?",
    "How do I clean a cast iron pan?", "Which football club has won the most Champions League titles?",
)
PERCENTILE = 0.95
MARGIN = 0.05  # on the development sets: false rejection at most 0.043 on every set (docs/design.md §3)
METHOD = f"p{round(PERCENTILE * 100)} of {len(OFF_TOPIC)} off-topic questions + {MARGIN}"  # a new one recalibrates
BOUNDS = (0.30, 0.65)  # a threshold outside these says more about a tiny or odd bundle than about questions
RECALIBRATE_AT = 0.10  # share of chunks added or removed since the last calibration that calls for a new one


def needs_calibration(meta: dict[str, str], model_id: str, chunks: int | None) -> bool:
    """No calibration yet, another model or method, or (given the chunks there are now) a collection that grew or
    shrank by RECALIBRATE_AT."""
    gate = json.loads(meta.get("gate") or "{}")
    if gate.get("model") != model_id or gate.get("method") != METHOD or not gate.get("chunks"):
        return True
    return chunks is not None and abs(chunks - gate["chunks"]) / gate["chunks"] >= RECALIBRATE_AT


def calibrate(conn: Any, model: Any, model_id: str, chunks: int) -> dict[str, Any]:
    """The gate's calibration for the vectors in `conn`: the threshold and what it was set from."""
    similarities = sorted(
        1 - conn.execute("select min(distance) from (select distance from chunk_vectors"
                         " where embedding match ? and k = 1)", [vector]).fetchone()[0]
        for vector in embed_texts(model, list(OFF_TOPIC))
    )
    at = similarities[min(len(similarities) - 1, int(PERCENTILE * len(similarities)))]
    threshold = min(max(at + MARGIN, BOUNDS[0]), BOUNDS[1])
    return {"model": model_id, "method": METHOD, "chunks": chunks, "vector_threshold": round(threshold, 4),
            "off_topic": {"questions": len(OFF_TOPIC), "median": round(similarities[len(similarities) // 2], 4),
                          f"p{round(PERCENTILE * 100)}": round(at, 4), "max": round(similarities[-1], 4)}}
