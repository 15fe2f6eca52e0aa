"""The tests, a package mirroring the tree (see docs/architecture/index.md)."""
