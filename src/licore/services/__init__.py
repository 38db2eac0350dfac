"""Use cases: one module a family. Each takes `Deps` and runs one unit of work."""
