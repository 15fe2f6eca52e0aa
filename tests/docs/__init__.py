"""The documentation site: generated pages equal to what the code makes, every name of the
code present in its reference, a strict build whose every internal link resolves, the README."""
