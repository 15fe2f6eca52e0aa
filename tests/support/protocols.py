"""Whether a class implements a `typing.Protocol` of methods, checked at run time with `inspect`:
the implementations are not all type-checked, and `isinstance` against a runtime-checkable
protocol looks at names only.

`protocol_gaps(Protocol, Implementation)` lists, one sentence each, every method the class
lacks, every one that is async where the protocol's is not (or the reverse), and every one
that cannot take a call the protocol allows: each count of positional arguments from the
required ones to all of them (more, when the protocol takes `*args`), and each keyword-only
argument by name.
"""

from __future__ import annotations

import inspect
from typing import Any

EXTRA_ARGS_TRIED = 3  # what a protocol's `*args` is tried with, besides none


def protocol_methods(protocol: type) -> dict[str, Any]:
    """The protocol's own methods (not `object`'s or `Protocol`'s), by name."""
    return {
        name: member
        for name, member in vars(protocol).items()
        if callable(member) and not (name.startswith("__") and name.endswith("__"))
    }


def _signature(cls: type, name: str) -> inspect.Signature:
    """The method's signature as called on an instance (no `self`)."""
    raw = inspect.getattr_static(cls, name)
    function = raw.__func__ if isinstance(raw, staticmethod | classmethod) else raw
    signature = inspect.signature(function)
    if isinstance(raw, staticmethod):
        return signature
    return signature.replace(parameters=list(signature.parameters.values())[1:])


def _is_async(cls: type, name: str) -> bool:
    raw = inspect.getattr_static(cls, name)
    return inspect.iscoroutinefunction(getattr(raw, "__func__", raw))


def _calls_allowed(signature: inspect.Signature) -> list[tuple[int, list[str]]]:
    """(positional count, keyword names) of each call the protocol's signature accepts."""
    params = list(signature.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(p.default is p.empty for p in positional)
    keywords = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
    counts = list(range(required, len(positional) + 1))
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        counts += [len(positional) + extra for extra in range(1, EXTRA_ARGS_TRIED + 1)]
    return [(count, keywords) for count in counts]


def protocol_gaps(protocol: type, implementation: type) -> list[str]:
    """What keeps `implementation` from implementing `protocol` (empty: nothing)."""
    gaps = []
    for name in protocol_methods(protocol):
        where = f"{implementation.__qualname__}.{name}"
        try:
            inspect.getattr_static(implementation, name)
        except AttributeError:
            gaps.append(f"{where} is missing ({protocol.__qualname__} needs it)")
            continue
        if _is_async(protocol, name) != _is_async(implementation, name):
            wanted = "async" if _is_async(protocol, name) else "a plain method"
            gaps.append(f"{where} must be {wanted}, as in {protocol.__qualname__}")
        wanted_sig, actual = _signature(protocol, name), _signature(implementation, name)
        for count, keywords in _calls_allowed(wanted_sig):
            try:
                actual.bind(*range(count), **dict.fromkeys(keywords))
            except TypeError as exc:
                gaps.append(
                    f"{where}{actual} cannot be called with {count} positional "
                    f"argument(s){' and ' + ', '.join(keywords) if keywords else ''}, "
                    f"as {protocol.__qualname__}.{name}{wanted_sig} may be ({exc})"
                )
                break
    return gaps
