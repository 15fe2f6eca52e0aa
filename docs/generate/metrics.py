"""operate/metrics.md: every Prometheus metric the service defines, read from the ingress's
metrics module without importing Ray (its `metrics.Counter/Gauge/Histogram(...)` calls)."""

from __future__ import annotations

import ast
import contextlib

from docs.generate import ROOT, notice
from docs.generate.markdown import table

SOURCE = "actors/ingress/metrics.py"
KINDS = {"Counter": "counter", "Gauge": "gauge", "Histogram": "histogram"}
RAY_PREFIX = "ray_"  # Ray's metrics agent prefixes every application metric


def defined_metrics() -> tuple[list[dict], dict[str, object]]:
    """Each metric's name, type, description, tags and boundaries; the module's constants."""
    tree = ast.parse((ROOT / SOURCE).read_text(encoding="utf-8"))
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:  # NAME: type = value
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            with contextlib.suppress(ValueError):
                constants[target.id] = ast.literal_eval(value)
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in KINDS
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            keywords = {kw.arg: kw.value for kw in node.keywords}

            def value(key, default=None, keywords=keywords):
                if key not in keywords:
                    return default
                if isinstance(keywords[key], ast.Name):
                    return constants[keywords[key].id]
                return ast.literal_eval(keywords[key])

            found.append(
                {
                    "name": RAY_PREFIX + node.args[0].value,
                    "type": KINDS[node.func.attr],
                    "description": value("description", ""),
                    "tags": value("tag_keys", ()),
                    "boundaries": value("boundaries"),
                }
            )
    return found, constants


def pages() -> dict[str, str]:
    found, constants = defined_metrics()
    rows = [
        [
            f"`{m['name']}`",
            m["type"],
            ", ".join(f"`{t}`" for t in m["tags"]) or "",
            m["description"]
            + (
                f" (bucket bounds {', '.join(map(str, m['boundaries']))})"
                if m["boundaries"]
                else ""
            ),
        ]
        for m in found
    ]
    text = f"""{notice(SOURCE)}
# Metrics and logs

## Prometheus metrics

Each node's Ray metrics agent serves Prometheus on the node's metrics port: Ray Serve's own
`ray_serve_*` metrics and these, defined by the ingress replicas:

{table(["metric", "type", "tags", "what"], rows)}

The gauges are set by every ingress replica, polled from the directory every
{constants["METRICS_POLL_S"]:g} s: take the maximum over replicas. The snapshot age is the oldest
last-snapshot age among resident workspaces that hold writes not yet in a snapshot (0 when
everything is snapshotted; at most {constants["SNAPSHOT_AGE_SAMPLE"]} resident workspaces are
asked per poll). The replication lag is the longest time a resident workspace's replica has
been behind its file (0 when every replica is current): `async` mode's loss window, and in
`sync` mode a replica that cannot be reached. Per workspace, the same figures are under
`durability` in `GET /v1/workspaces/{{id}}`.

## Request logs

With `MINISPHERE_ACCESS_LOG=1`, one JSON line per request on the `minisphere.requests` logger:
workspace, method, status, outcome, latency, request id; never content, queries or tokens; and
Serve's own line per request. Off by default: under Serve each line costs the ingress replica
about a millisecond of CPU (Serve routes a replica's stderr through a logger that walks the
stack for every line; `bench/results/call-cost.md`), a fifth of a call's whole cost. The
metrics above count every request either way.

## Timings on every answer

Every answer carries a `Server-Timing` header with ingress, rpc, actor, queue, engine, (for
embedded writes) prepare, (when the token check had to ask the directory) auth and (when the
call had to wait for its workspace's actor: a wake, or an attempt on an actor that had
hibernated) activate times, in milliseconds. A bound recall that used the query vector the
ingress sent ahead to the embedder also has a `query-ahead` part (no duration). A recall's
answer also has `timings`, ms per stage of its pipeline ([How recall ranks](../concepts/recall.md)).
"""
    return {"operate/metrics.md": text}
