"""Mutation fuzzing of the reader, `segmentlog verify` and `segmentlog dump` (issue #16).

originals.py builds the valid logs and what each read of them returns; mutations.py damages
copies of them (seeded, reproducible); oracle.py runs the three tools on each mutant in worker
processes under a time and memory limit and classifies what they did; run.py is `make fuzz`.
"""
