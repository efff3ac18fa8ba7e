"""The incremental findings cache of the static pass (``.fusionlint_cache/``).

``store``: the directory, atomic versioned files. ``recording``: the cross-file facts one file's
analysis reads, and checking that they still hold. ``session``: one run's use of it.
The confirm pass keeps its own results cache (``fusionlint/confirm/cache.py``).
"""
