"""Storage kept in Python dicts: the ports' reference implementation, for tests and
embedders that need no persistence. It passes the same contract suite as the databases."""
