"""The bare queries benchmarks compare context_for against, in the same run: what a plain SQLite user would run."""

# The 10 chunks nearest a question by a full vec0 scan: no fusion, no walk.
NEAREST_CHUNKS_SQL = """
select chunks.id as chunk_id, chunks.concept_id, chunks.heading, chunk_vectors.distance
from chunk_vectors join chunks on chunks.id = chunk_vectors.rowid
where chunk_vectors.embedding match okf_embed(:q) and k = :k
order by chunk_vectors.distance
""".strip()
