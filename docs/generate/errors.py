"""reference/errors.md: every named error of `minisphere.errors`, its code and HTTP status
(`minisphere.http.statuses`, the one error -> status table)."""

from __future__ import annotations

import inspect

from docs.generate import notice
from docs.generate.markdown import first_paragraph, table
from minisphere import errors
from minisphere.http.statuses import STATUS


def named_errors() -> list[type]:
    """Every `MiniSphereError` class of the errors module, in the order it defines them."""
    classes = [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, errors.MiniSphereError)
        and cls is not errors.MiniSphereError
        and cls.__module__ == errors.__name__
    ]
    return sorted(classes, key=lambda cls: inspect.getsourcelines(cls)[1])


def status_of(cls: type) -> int:
    return next((STATUS[base] for base in cls.__mro__ if base in STATUS), 500)


def pages() -> dict[str, str]:
    rows = [
        [
            f"`{cls.code}`",
            status_of(cls),
            f"`{cls.__name__}`",
            f"`{cls.__mro__[1].__name__}`",
            "yes" if cls.public_message is not None else "",
            first_paragraph(cls.__doc__),
        ]
        for cls in named_errors()
    ]
    text = f"""{notice("minisphere/errors.py and minisphere/http/statuses.py")}
# Error codes

Every error answer is `{{"error": {{"code", "message"}}}}`. The `code` is stable and the same
for every caller; the status comes from one table (`minisphere/http/statuses.py`), matched
along the class hierarchy, so a subclass answers its parent's status unless it is listed
itself. A named error nobody listed is a client error (400); anything that is not a named
error is a bug and answers `internal` (500) with the details only in the service's log.

"withheld" marks errors whose message may name deployment details (a bucket, an endpoint, a
path): a workspace token or an unauthenticated caller is told a generic message instead, the
admin token gets the details.

{table(["code", "status", "class", "parent", "withheld", "meaning"], rows)}
"""
    return {"reference/errors.md": text}
