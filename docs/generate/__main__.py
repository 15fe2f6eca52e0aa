"""`python -m docs.generate [--check]`: see the package docstring."""

from __future__ import annotations

import sys

from docs.generate import stale_pages, write_pages


def main(argv: list[str]) -> int:
    if argv[:1] == ["--check"]:
        stale = stale_pages()
        for path in stale:
            print(f"out of date: docs/{path} (run python -m docs.generate)")
        return 1 if stale else 0
    for path in write_pages():
        print(f"wrote docs/{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
