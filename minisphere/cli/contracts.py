"""`minisphere contracts …`: pin, verify, push-evidence, verify-evidence.

    minisphere contracts verify [--dir D] [--json]
    minisphere contracts pin [--dir D] [--force]
    minisphere contracts push-evidence [--bucket B] [--prefix P] [--endpoint-url URL]
                                       [--dir D] [--all-versions]
    minisphere contracts verify-evidence (same options)

Exit status 0 on success, 1 when a check fails or a change is refused, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from minisphere.cli.common import Subparsers, fail, with_contracts_dir
from minisphere.contract.pins import (
    check_engine,
    check_routes,
    contract_file_name,
    contract_files,
    find_contracts_dir,
    format_pin,
    load_surface,
    orphan_pins,
    pin_path,
    pinned_contracts,
    read_pin,
)
from minisphere.errors import ContractPinError, MiniSphereError
from minisphere.files import sha256_file, write_in_one_step

if TYPE_CHECKING:  # imported by the evidence commands alone, where they run
    from minisphere.contract.evidence import EvidenceTarget


def _register_evidence(commands: Subparsers) -> None:
    for name, func, text in (
        (
            "push-evidence",
            cmd_push_evidence,
            "upload contract files + pins to S3 under <prefix>/contracts/, then re-verify",
        ),
        (
            "verify-evidence",
            cmd_verify_evidence,
            "download the evidence objects and re-hash them against the local pins",
        ),
    ):
        p = with_contracts_dir(commands.add_parser(name, help=text))
        p.add_argument("--bucket", default=None, help="bucket (default $MINISPHERE_S3_BUCKET)")
        p.add_argument("--prefix", default=None, help="key prefix (default $MINISPHERE_S3_PREFIX)")
        p.add_argument(
            "--endpoint-url",
            default=None,
            help="S3 endpoint (default $MINISPHERE_S3_ENDPOINT_URL, else AWS)",
        )
        p.add_argument(
            "--all-versions",
            action="store_true",
            help="every pinned version, not only the active one",
        )
        p.set_defaults(func=func)


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "contracts",
        help="pinned contracts: pin, verify, push evidence",
        description="Pinned contracts (contracts/NAME@version.md + .surface.json, each with a "
        ".sha256 pin). Amend by copying to a new version, editing, then `pin`, "
        "`verify`, `push-evidence`.",
    )
    commands = parser.add_subparsers(dest="contracts_command", required=True)

    verify = with_contracts_dir(
        commands.add_parser(
            "verify", help="check every pin, the surface file, and the engine against the surface"
        )
    )
    verify.add_argument("--json", action="store_true", help="print the pinned records as JSON")
    verify.set_defaults(func=cmd_verify)

    pin = with_contracts_dir(
        commands.add_parser(
            "pin", help="write pins for new contract files (after an intentional amendment)"
        )
    )
    pin.add_argument(
        "--force",
        action="store_true",
        help="also re-pin a version whose bytes changed (only for a version that "
        "was never published)",
    )
    pin.set_defaults(func=cmd_pin)
    _register_evidence(commands)


# ---- verify -----------------------------------------------------------------------------------


def cmd_verify(args: argparse.Namespace) -> int:
    from minisphere.engine.methods import METHODS

    try:
        records = pinned_contracts(args.contracts_dir)
        surface = load_surface(args.contracts_dir, records)
        check_routes(surface, METHODS)  # the engine's method table stands in for the routes
        check_engine(surface)
    except MiniSphereError as exc:
        return fail(exc.message)
    if args.json:
        print(json.dumps(records, indent=2))
        return 0
    for record in records:
        mark = "*" if record["active"] else " "
        print(f"ok {mark} {record['sha256']}  {record['file']}")
    print(
        f"{len(records)} contract file(s) match their pins; the engine's "
        f"{len(surface['methods'])} methods agree with {surface['contract']}@"
        f"{surface['version']} (* = active)"
    )
    return 0


# ---- pin --------------------------------------------------------------------------------------


def check_pinnable(path: Path) -> str | None:
    """A reason not to pin this file, or None. Catches a renamed-but-not-edited version."""
    meta = contract_file_name(path)
    if meta["role"] == "surface":
        try:
            doc = json.loads(path.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return f"{path.name} is not valid JSON ({exc})"
        declared = f"{doc.get('contract')}@{doc.get('version')}"
        if declared != f"{meta['name']}@{meta['version']}":
            return (
                f'{path.name} declares {declared}; set "contract" and "version" to match '
                "the file name"
            )
        text = f"{meta['name']}@{meta['version']}.md"
        if doc.get("text") != text:
            return f"{path.name} points at text {doc.get('text')!r}, expected {text!r}"
        if not isinstance(doc.get("methods"), dict) or not doc["methods"]:
            return f"{path.name} lists no methods"
    else:
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            return f"{path.name} is not UTF-8 text"
        mention = re.compile(rf"{re.escape(meta['name'])}\s*@\s*{re.escape(meta['version'])}\b")
        if not mention.search(text):
            return (
                f"{path.name} never names {meta['name']}@{meta['version']}; update the "
                "version inside the text"
            )
    return None


def cmd_pin(args: argparse.Namespace) -> int:
    try:
        directory = find_contracts_dir(args.contracts_dir)
    except MiniSphereError as exc:
        return fail(exc.message)
    problems, writes, report = [], [], []
    for orphan in orphan_pins(directory):
        problems.append(
            f"{orphan.name} pins a file that does not exist; restore the file or "
            "delete the pin by hand"
        )
    for path in contract_files(directory):
        reason = check_pinnable(path)
        if reason:
            problems.append(reason)
            continue
        new = sha256_file(path)
        pin = pin_path(path)
        if not pin.exists():
            writes.append((pin, format_pin(new, path.name)))
            report.append(f"new       {new}  {path.name}")
            continue
        try:
            old = read_pin(pin, path.name)
        except ContractPinError as exc:
            if not args.force:
                problems.append(f"{exc.message} (use --force to rewrite it)")
                continue
            old = "(malformed)"
        if old == new:
            report.append(f"unchanged {new}  {path.name}")
        elif args.force:
            writes.append((pin, format_pin(new, path.name)))
            report.append(f"re-pinned {path.name}: old {old} -> new {new} (--force)")
        else:
            problems.append(
                f"{path.name} is pinned as {old} but its bytes now hash to {new}. A pinned "
                "version is immutable: copy it to a new version (e.g. @0.2), edit that, and pin "
                "again; use --force only for a version that was never published"
            )
    for line in report:
        print(line)
    if problems:
        for problem in problems:
            print(f"refused: {problem}", file=sys.stderr)
        print("no pins were written", file=sys.stderr)
        return 1
    for pin, text in writes:
        write_in_one_step(pin, text.encode("utf-8"))
    print(f"{len(writes)} pin(s) written in {directory}" if writes else "all pins up to date")
    if writes:
        print("next: `minisphere contracts verify`, then `minisphere contracts push-evidence`")
    return 0


# ---- evidence ---------------------------------------------------------------------------------


def _target(args: argparse.Namespace) -> EvidenceTarget:
    from minisphere.contract.evidence import EvidenceTarget

    return EvidenceTarget.from_settings(args.bucket, args.prefix, args.endpoint_url)


def cmd_push_evidence(args: argparse.Namespace) -> int:
    from minisphere.contract.evidence import push_evidence

    try:
        target = _target(args)
        results = push_evidence(target, args.contracts_dir, all_versions=args.all_versions)
    except MiniSphereError as exc:
        return fail(exc.message)
    for item in results:
        print(f"{item['status']:<9} {item['sha256']}  {item['key']}")
    uploaded = sum(1 for item in results if item["status"] == "uploaded")
    print(
        f"{uploaded} uploaded, {len(results) - uploaded} unchanged; read back and verified "
        f"in {target.describe()}"
    )
    return 0


def cmd_verify_evidence(args: argparse.Namespace) -> int:
    from minisphere.contract.evidence import verify_evidence

    try:
        target = _target(args)
        checked = verify_evidence(target, args.contracts_dir, all_versions=args.all_versions)
    except MiniSphereError as exc:
        return fail(exc.message)
    for item in checked:
        print(f"ok {item['sha256']}  {item['key']}")
    print(f"{len(checked)} contract file(s) and their pins match in {target.describe()}")
    return 0
