"""A kernel package under test (suites/data/example_repo/README.md)."""
