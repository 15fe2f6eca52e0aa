"""`minisphere export` and `minisphere import`: a workspace as JSONL (and its raw SQLite file).

Offline, on a workspace file (the service need not run; do not import into a file a running
service has open — use the service then):

    minisphere export notes --path data/workspaces/notes/workspace.db -o notes.jsonl
    minisphere export notes --data-dir data --raw notes.db        # consistent copy of the file
    minisphere import notes notes.jsonl --data-dir data

Through the running service (admin token; routes `GET /v1/workspaces/{id}/export` and
`POST /v1/workspaces/{id}/import`):

    minisphere export notes -o notes.jsonl
    minisphere import notes notes.jsonl

Progress goes to stderr; an interrupted import is resumed by running the same command again.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

import httpx

from minisphere.cli.common import NO_TOKEN, Subparsers, admin_token, connection_flags, fail
from minisphere.cli.progress import ProgressLine

IMPORT_CHUNK_LINES = 500
HTTP_TIMEOUT_S = 300.0


def _workspace_file(args: argparse.Namespace) -> Path | None:
    if args.path:
        return Path(args.path)
    if args.data_dir:
        from minisphere.control.auth import check_workspace_id

        return (
            Path(args.data_dir) / "workspaces" / check_workspace_id(args.workspace) / "workspace.db"
        )
    return None


def _open_out(target: str | None) -> tuple[TextIO, bool]:
    if not target or target == "-":
        return sys.stdout, False
    return Path(target).open("w", encoding="utf-8", newline="\n"), True


def _export(args: argparse.Namespace) -> int:
    from minisphere.engine.clock import SystemClock
    from minisphere.errors import MiniSphereError
    from minisphere.transfer import export_file, export_raw

    path = _workspace_file(args)
    try:
        if args.raw:
            if path is None:
                return fail("--raw needs the workspace file: give --path or --data-dir")
            bar = ProgressLine(f"copy {args.workspace}", unit="pages")
            result = export_raw(path, args.raw, progress=bar)
            bar.finish(f"{result['bytes']} bytes -> {result['path']}")
            if not args.output:
                return 0
        out, close = _open_out(args.output)
        bar = ProgressLine(f"export {args.workspace}", unit="records")
        try:
            if path is not None:
                lines = export_file(path, out, now_ms=SystemClock().now_ms(), progress=bar)
            else:
                lines = _export_service(args, out, bar)
        finally:
            if close:
                out.close()
        bar.finish(f"{lines} lines" + (f" -> {args.output}" if close else ""))
        return 0
    except MiniSphereError as exc:
        return fail(exc.message)
    except httpx.TransportError as exc:
        return fail(f"cannot reach {args.url}: {exc}")
    except OSError as exc:
        return fail(str(exc))


def _http(args: argparse.Namespace) -> httpx.Client:
    from minisphere.errors import TransferError

    token = admin_token(args)
    if not token:
        raise TransferError(NO_TOKEN)
    return httpx.Client(
        base_url=args.url, timeout=HTTP_TIMEOUT_S, headers={"Authorization": f"Bearer {token}"}
    )


def _service_error(response: httpx.Response) -> str:
    try:
        error = response.json()["error"]
        return f"{response.status_code} {error['code']}: {error['message']}"
    except (ValueError, KeyError, TypeError):
        return f"{response.status_code}: {response.text[:200]}"


def _export_service(args: argparse.Namespace, out: TextIO, bar: ProgressLine) -> int:
    from minisphere.errors import TransferError

    lines, total = 0, 0
    with _http(args) as http, http.stream("GET", f"/v1/workspaces/{args.workspace}/export") as r:
        if r.status_code != 200:
            r.read()
            raise TransferError(_service_error(r))
        for line in r.iter_lines():
            if not line:
                continue
            if lines == 0:
                counts = json.loads(line).get("counts", {})
                total = counts.get("entries", 0) + counts.get("edges", 0)
            out.write(line + "\n")
            lines += 1
            if lines % IMPORT_CHUNK_LINES == 0:
                bar(lines - 1, total)
    bar(max(lines - 1, 0), total)
    return lines


def _import(args: argparse.Namespace) -> int:
    from minisphere.errors import MiniSphereError
    from minisphere.files import sha256_file
    from minisphere.transfer import import_file

    source = Path(args.file)
    if not source.is_file():
        return fail(f"no such file: {source}")
    path = _workspace_file(args)
    bar = ProgressLine(f"import {args.workspace}", unit="records")
    try:
        if path is not None:
            from minisphere.engine.workspace import Workspace

            if not path.is_file() and not args.create:
                return fail(f"no workspace file at {path} (add --create to make a new one)")
            path.parent.mkdir(parents=True, exist_ok=True)
            with Workspace(path) as ws:
                report = import_file(ws, source, batch_lines=args.batch, progress=bar)
        else:
            report = _import_service(args, source, sha256_file(source)[:32], bar)
    except MiniSphereError as exc:
        bar.finish()
        return fail(exc.message)
    except httpx.TransportError as exc:
        return fail(f"cannot reach {args.url}: {exc}")
    except OSError as exc:
        return fail(str(exc))
    bar.finish(json.dumps(report, sort_keys=True))
    if not report.get("complete", False):
        return fail(
            f"the file holds {report.get('lines')} records but its header announces "
            f"{report.get('expected')}: it looks truncated"
        )
    return 0


def _import_service(
    args: argparse.Namespace, source: Path, key: str, bar: ProgressLine
) -> dict[str, Any]:
    from minisphere.errors import TransferError

    url = f"/v1/workspaces/{args.workspace}/import"
    with _http(args) as http, Path(source).open(encoding="utf-8", newline="\n") as handle:
        header = handle.readline().rstrip("\n")
        total = json.loads(header).get("counts", {}) if header.strip() else {}
        total = total.get("entries", 0) + total.get("edges", 0)
        chunk: list[str]
        report: dict[str, Any]  # the service's answer to the last chunk (JSON)
        chunk, first, done, report = [], 1, 0, {}
        lines = (line.rstrip("\n") for line in handle if line.strip())
        while True:
            line = next(lines, None)
            if line is not None:
                chunk.append(line)
            if len(chunk) < args.batch and line is not None:
                continue
            final = line is None
            response = http.post(
                url,
                params={"key": key, "first": first, "final": "true" if final else "false"},
                content="\n".join([header, *chunk]).encode("utf-8"),
                headers={"Content-Type": "application/x-ndjson"},
            )
            if response.status_code != 200:
                raise TransferError(_service_error(response))
            report = response.json()
            done, first, chunk = done + len(chunk), first + len(chunk), []
            bar(done, total)
            if final:
                return report


def register(subparsers: Subparsers) -> None:
    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("workspace", help="workspace id")
        parser.add_argument("--path", help="the workspace's SQLite file (offline mode)")
        parser.add_argument(
            "--data-dir", help="data folder: uses <dir>/workspaces/<ws>/workspace.db (offline mode)"
        )
        connection_flags(parser, workspace=False)

    export = subparsers.add_parser(
        "export", help="write a workspace as JSONL (and/or a raw SQLite copy with --raw)"
    )
    common(export)
    export.add_argument("-o", "--output", help="JSONL file (default: stdout)")
    export.add_argument("--raw", help="also write a consistent copy of the SQLite file here")
    export.set_defaults(func=_export)

    load = subparsers.add_parser("import", help="load a JSONL export (resumable, skips duplicates)")
    common(load)
    load.add_argument("file", help="JSONL file written by `minisphere export`")
    load.add_argument(
        "--batch",
        type=int,
        default=IMPORT_CHUNK_LINES,
        help="records per transaction / per request",
    )
    load.add_argument(
        "--create",
        action="store_true",
        help="offline: create the workspace file if it does not exist",
    )
    load.set_defaults(func=_import)
