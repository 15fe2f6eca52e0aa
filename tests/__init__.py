"""The tests, a package mirroring the tree (see the README's Layout)."""
