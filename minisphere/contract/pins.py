"""Contract files pinned by SHA-256, checked at startup.

Layout of the contracts directory:

    MINI_SPHERE_CONTRACT@0.1.md                    the contract text
    MINI_SPHERE_CONTRACT@0.1.md.sha256             its pin: "<hex>  <file name>\\n" (sha256sum)
    MINI_SPHERE_CONTRACT@0.1.surface.json          the machine-readable surface
    MINI_SPHERE_CONTRACT@0.1.surface.json.sha256   its pin

Every file named `NAME@version.md` or `NAME@version.surface.json` is a contract file; every
`*.sha256` is a pin. Other files (a README, say) are ignored. The *active* contract is the highest
version of `CONTRACT_NAME` present; its text and surface file must both exist.

Where the directory is found (first hit wins):

1. the `contracts_dir` argument of the functions below;
2. the environment variable `MINISPHERE_CONTRACTS_DIR`;
3. `contracts/` next to the `minisphere` package — the repository checkout, which is what an
   editable install (`pip install -e .`) and a source tree see;
4. `<sys.prefix>/share/minisphere/contracts` — where a plain `pip install .` (a wheel) puts
   them: pyproject.toml declares the pinned files as data files.

Service integration: `minisphere.contract.startup.verified_contracts()` runs at ingress
startup and in each workspace actor's constructor; a `MiniSphereError` means "do not start".
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypedDict

from minisphere.errors import ContractPinError, ContractSurfaceError
from minisphere.files import sha256_file
from minisphere.settings import PROJECT_ROOT, env_value

CONTRACT_NAME = "MINI_SPHERE_CONTRACT"
ENV_CONTRACTS_DIR = "MINISPHERE_CONTRACTS_DIR"
PIN_SUFFIX = ".sha256"

_CONTRACT_FILE = re.compile(
    r"^(?P<name>[A-Z][A-Z0-9_]*)@(?P<version>\d+(?:\.\d+)*)\.(?P<role>md|surface\.json)$"
)
_PIN_LINE = re.compile(r"^(?P<hex>[0-9a-fA-F]{64}) [ *](?P<file>.+)$")
_ROLE = {"md": "text", "surface.json": "surface"}


# ---- locating --------------------------------------------------------------------------------


def find_contracts_dir(contracts_dir: str | os.PathLike[str] | None = None) -> Path:
    """The contracts directory (see the module docstring for the search order)."""
    if contracts_dir is not None:
        candidates = [("argument", Path(contracts_dir))]
    elif env_value(ENV_CONTRACTS_DIR):
        candidates = [(ENV_CONTRACTS_DIR, Path(env_value(ENV_CONTRACTS_DIR)))]
    else:
        candidates = [
            ("repository", PROJECT_ROOT / "contracts"),
            ("installed data", Path(sys.prefix) / "share" / "minisphere" / "contracts"),
        ]
    for _, path in candidates:
        if path.is_dir():
            return path
    where = ", ".join(f"{path} ({origin})" for origin, path in candidates)
    raise ContractPinError(
        f"contracts directory not found; looked in {where}. Set "
        f"{ENV_CONTRACTS_DIR} to the directory holding the pinned contracts"
    )


class ContractFileName(TypedDict):
    name: str
    version: str
    role: str  # text | surface


class PinnedContract(TypedDict):
    """One pinned contract file, its pin verified."""

    name: str
    version: str
    sha256: str
    file: str
    role: str  # text | surface
    active: bool


def parse_contract_file_name(file_name: str) -> ContractFileName | None:
    """`NAME@1.2.md` -> {name, version, role: text|surface}; None for other files."""
    match = _CONTRACT_FILE.match(file_name)
    if match is None:
        return None
    return {"name": match["name"], "version": match["version"], "role": _ROLE[match["role"]]}


def contract_file_name(path: Path) -> ContractFileName:
    """The name parts of a file `contract_files` listed (any other file is a ValueError)."""
    meta = parse_contract_file_name(path.name)
    if meta is None:
        raise ValueError(f"{path.name} is not a contract file name")
    return meta


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


# ---- hashing and pins ------------------------------------------------------------------------


def pin_path(path: Path) -> Path:
    return path.with_name(path.name + PIN_SUFFIX)


def format_pin(hex_digest: str, file_name: str) -> str:
    return f"{hex_digest}  {file_name}\n"


def read_pin(pin: Path, file_name: str) -> str:
    """The lower-case hex digest recorded in a pin file; a malformed pin is a pin error."""
    try:
        text = pin.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ContractPinError(
            f"contract {file_name}: pin file {pin.name} is missing "
            f"(in {pin.parent}); run `minisphere contracts pin` after an "
            "intentional change",
            file=file_name,
        ) from None
    lines = [line for line in text.splitlines() if line.strip()]
    match = _PIN_LINE.match(lines[0].strip()) if len(lines) == 1 else None
    if match is None:
        raise ContractPinError(
            f"contract {file_name}: pin file {pin.name} is malformed; expected "
            f"one line '<64 hex>  {file_name}'",
            file=file_name,
        )
    if match["file"] != file_name:
        raise ContractPinError(
            f"contract {file_name}: pin file {pin.name} names {match['file']!r} instead",
            file=file_name,
        )
    return match["hex"].lower()


def contract_files(directory: Path) -> list[Path]:
    """Contract files in the directory, sorted by name then version."""
    found = [
        p
        for p in directory.iterdir()
        if p.is_file() and parse_contract_file_name(p.name) is not None
    ]
    return sorted(
        found,
        key=lambda p: (
            contract_file_name(p)["name"],
            version_key(contract_file_name(p)["version"]),
            p.name,
        ),
    )


def orphan_pins(directory: Path) -> list[Path]:
    """Pins whose contract file is missing."""
    return sorted(
        p
        for p in directory.iterdir()
        if p.name.endswith(PIN_SUFFIX)
        and parse_contract_file_name(p.name[: -len(PIN_SUFFIX)]) is not None
        and not (directory / p.name[: -len(PIN_SUFFIX)]).is_file()
    )


def active_version(directory: Path, name: str = CONTRACT_NAME) -> str:
    versions = {
        contract_file_name(p)["version"]
        for p in contract_files(directory)
        if contract_file_name(p)["name"] == name
    }
    if not versions:
        raise ContractPinError(
            f"no {name}@<version>.md in {directory}; the service cannot start "
            "without its pinned contract",
            file=f"{name}@<version>.md",
        )
    return max(versions, key=version_key)


def _record(path: Path, digest: str, active: str) -> PinnedContract:
    meta = contract_file_name(path)
    return {
        "name": meta["name"],
        "version": meta["version"],
        "sha256": digest,
        "file": path.name,
        "role": meta["role"],
        "active": meta["name"] == CONTRACT_NAME and meta["version"] == active,
    }


def pinned_contracts(
    contracts_dir: str | os.PathLike[str] | None = None,
) -> list[PinnedContract]:
    """Verify every pin; return [{name, version, sha256, file, role, active}] per contract file.

    Raises ContractPinError when a file's bytes differ from its pin (message: file, expected
    hash, actual hash), when a pin has no file, when a file has no pin, or when the active
    contract's text or surface file is missing.
    """
    directory = find_contracts_dir(contracts_dir)
    for pin in orphan_pins(directory):
        target = pin.name[: -len(PIN_SUFFIX)]
        raise ContractPinError(
            f"contract {target} is missing from {directory}, but its pin {pin.name} "
            f"(sha256 {read_pin(pin, target)}) is present",
            file=target,
            expected=read_pin(pin, target),
        )
    active = active_version(directory)
    for role_suffix in ("md", "surface.json"):
        required = directory / f"{CONTRACT_NAME}@{active}.{role_suffix}"
        if not required.is_file():
            raise ContractPinError(
                f"contract {required.name} is missing from {directory}; "
                f"{CONTRACT_NAME}@{active} needs both its text and its "
                "surface file",
                file=required.name,
            )
    records: list[PinnedContract] = []
    for path in contract_files(directory):
        actual = sha256_file(path)
        if not pin_path(path).is_file():
            raise ContractPinError(
                f"contract {path.name} has no pin: {pin_path(path).name} is missing (file sha256 "
                f"{actual}, in {directory}); run `minisphere contracts pin` after an intentional "
                "change",
                file=path.name,
                actual=actual,
            )
        expected = read_pin(pin_path(path), path.name)
        if actual != expected:
            raise ContractPinError(
                f"contract {path.name} does not match its pin: pinned sha256 {expected}, "
                f"file sha256 {actual} (in {directory}). A contract is changed only by "
                "amendment: new version, `minisphere contracts pin`, push evidence",
                file=path.name,
                expected=expected,
                actual=actual,
            )
        records.append(_record(path, actual, active))
    return records


def active_contract(records: Iterable[PinnedContract]) -> PinnedContract:
    """The record of the active contract text — the reference a new workspace is born with."""
    for record in records:
        if record["active"] and record["role"] == "text":
            return record
    raise ContractPinError(f"no active {CONTRACT_NAME} text among the pinned contracts")


def contract_reference(record: PinnedContract) -> str:
    """`NAME@version+sha256:<hex>` — the compact form stored with a workspace."""
    return f"{record['name']}@{record['version']}+sha256:{record['sha256']}"


# ---- surface -----------------------------------------------------------------------------------


def load_surface(
    contracts_dir: str | os.PathLike[str] | None = None,
    records: list[PinnedContract] | None = None,
) -> dict[str, Any]:
    """The active contract's surface document (parsed JSON). Does not re-verify pins unless
    `records` is None."""
    directory = find_contracts_dir(contracts_dir)
    records = records if records is not None else pinned_contracts(directory)
    surface = next((r for r in records if r["active"] and r["role"] == "surface"), None)
    if surface is None:
        raise ContractPinError(f"no surface file for {CONTRACT_NAME} in {directory}")
    path = directory / surface["file"]
    try:
        doc: dict[str, Any] = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ContractSurfaceError(f"surface file {path.name} is not valid JSON: {exc}") from None
    if doc.get("contract") != surface["name"] or str(doc.get("version")) != surface["version"]:
        raise ContractSurfaceError(
            f"surface file {path.name} declares {doc.get('contract')}@{doc.get('version')}, "
            f"not {surface['name']}@{surface['version']}"
        )
    if not isinstance(doc.get("methods"), dict) or not doc["methods"]:
        raise ContractSurfaceError(f"surface file {path.name} lists no methods")
    return doc


def check_routes(surface_doc: dict[str, Any], routed_methods: Iterable[str]) -> None:
    """Both directions: nothing routed that the contract does not describe, and nothing
    described that is not routed."""
    routed = set(routed_methods)
    described = set(surface_doc["methods"])
    undescribed = sorted(routed - described)
    unrouted = sorted(described - routed)
    problems = [f"routed method {m!r} is not in the contract" for m in undescribed]
    problems += [f"contract method {m!r} is not routed" for m in unrouted]
    if problems:
        raise ContractSurfaceError(
            f"{surface_doc['contract']}@{surface_doc['version']}: the routed surface disagrees "
            "with the contract (if the contract does not describe it, we do not provide it): "
            + "; ".join(problems),
            problems,
        )


def check_engine(surface_doc: dict[str, Any]) -> None:
    """The engine's argument models, enums, edge gates and limits agree with the surface."""
    from minisphere.contract.surface import differences  # imports the engine modules (no Ray)

    problems = differences(surface_doc)
    if problems:
        raise ContractSurfaceError(
            f"{surface_doc['contract']}@{surface_doc['version']}: the engine disagrees with the "
            f"contract surface ({len(problems)} difference(s)): " + "; ".join(problems[:20]),
            problems,
        )


def verify_startup(
    routed_methods: set[str],
    *,
    contracts_dir: str | os.PathLike[str] | None = None,
    check_arguments: bool = True,
) -> list[PinnedContract]:
    """Startup gate for the ingress and for every workspace actor.

    1. every contract file matches its pin (ContractPinError otherwise);
    2. `routed_methods` equals the contract's method set — reads, writes and maintenance
       (ContractSurfaceError otherwise);
    3. unless `check_arguments=False`, the engine's argument models agree with the surface.

    Returns the pinned records [{name, version, sha256, file, role, active}] for
    `GET /v1/contracts`; `active_contract(records)` is what a new workspace records.
    """
    records = pinned_contracts(contracts_dir)
    surface_doc = load_surface(contracts_dir, records)
    check_routes(surface_doc, routed_methods)
    if check_arguments:
        check_engine(surface_doc)
    return records
