"""The llm plugin entry point (`llm` group in setup.cfg).

It registers nothing yet: the embedding model (issue 3) and `llm okf` (issue 6)
land here. The entry point exists now so installs made today pick them up.
"""
