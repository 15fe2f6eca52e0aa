"""`minisphere contracts pin|verify`: the amendment path, run in-process on a copy of contracts/."""

import json
import re

import pytest

from minisphere.cli.main import main
from minisphere.contract.pins import CONTRACT_NAME, pinned_contracts, sha256_file
from tests.support.contracts import ACTIVE_VERSION, CONTRACT_FILES, NEXT_VERSION, SURFACE, TEXT


def run(capsys, *argv):
    code = main(["contracts", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_verify_passes_on_the_repository(capsys):
    code, out, _ = run(capsys, "verify")
    assert code == 0
    assert (
        TEXT in out
        and SURFACE in out
        and f"agree with MINI_SPHERE_CONTRACT@{ACTIVE_VERSION}" in out
    )


def test_verify_json_lists_records(capsys):
    code, out, _ = run(capsys, "verify", "--json")
    assert code == 0
    assert {r["file"] for r in json.loads(out)} == CONTRACT_FILES


def test_verify_fails_on_a_changed_byte(contracts_copy, capsys):
    (contracts_copy / TEXT).write_bytes(
        (contracts_copy / TEXT).read_bytes().replace(b"0.1", b"0.2", 1)
    )
    code, _, err = run(capsys, "verify")
    assert code == 1 and TEXT in err and "does not match its pin" in err


def test_pin_is_a_no_op_when_nothing_changed(contracts_copy, capsys):
    before = {p.name: p.read_bytes() for p in contracts_copy.glob("*.sha256")}
    code, out, _ = run(capsys, "pin")
    assert code == 0 and "all pins up to date" in out
    assert {p.name: p.read_bytes() for p in contracts_copy.glob("*.sha256")} == before


def test_pin_refuses_changed_bytes_of_a_pinned_version_then_force(contracts_copy, capsys):
    path = contracts_copy / TEXT
    old = sha256_file(path)
    path.write_text(path.read_text(encoding="utf-8") + "\nOne more sentence.\n", encoding="utf-8")
    new = sha256_file(path)
    pin_before = (contracts_copy / f"{TEXT}.sha256").read_bytes()

    code, _, err = run(capsys, "pin")
    assert code == 1
    assert old in err and new in err and "immutable" in err and "no pins were written" in err
    assert (contracts_copy / f"{TEXT}.sha256").read_bytes() == pin_before

    code, out, _ = run(capsys, "pin", "--force")
    assert code == 0 and old in out and new in out
    assert (contracts_copy / f"{TEXT}.sha256").read_text() == f"{new}  {TEXT}\n"
    assert run(capsys, "verify")[0] == 0


def bump(directory, version):
    """What an operator does: copy the active version, update the version inside both files."""
    text = (directory / TEXT).read_text(encoding="utf-8")
    (directory / f"{CONTRACT_NAME}@{version}.md").write_text(
        re.sub(
            rf"MINI_SPHERE_CONTRACT @ {re.escape(ACTIVE_VERSION)}",
            f"MINI_SPHERE_CONTRACT @ {version}",
            text,
        ),
        encoding="utf-8",
    )
    doc = json.loads((directory / SURFACE).read_text(encoding="utf-8"))
    doc.update(version=version, text=f"{CONTRACT_NAME}@{version}.md")
    (directory / f"{CONTRACT_NAME}@{version}.surface.json").write_text(
        json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def test_amendment_round_trip_new_version(contracts_copy, capsys):
    bump(contracts_copy, NEXT_VERSION)
    # before pinning, startup refuses: the new files have no pins
    assert run(capsys, "verify")[0] == 1

    code, out, _ = run(capsys, "pin")
    assert code == 0
    assert re.search(
        rf"new\s+[0-9a-f]{{64}}  {re.escape(CONTRACT_NAME)}@{re.escape(NEXT_VERSION)}\.md", out
    )
    assert "unchanged" in out  # the active version stays as it was
    assert (contracts_copy / f"{CONTRACT_NAME}@{NEXT_VERSION}.md.sha256").is_file()

    code, out, _ = run(capsys, "verify")
    assert code == 0
    active = [r for r in pinned_contracts() if r["active"]]
    assert {r["version"] for r in active} == {NEXT_VERSION}


def test_pin_refuses_a_copied_version_whose_text_was_not_updated(contracts_copy, capsys):
    (contracts_copy / f"{CONTRACT_NAME}@{NEXT_VERSION}.md").write_bytes(
        (contracts_copy / TEXT).read_bytes()
    )
    code, _, err = run(capsys, "pin")
    assert code == 1 and f"never names {CONTRACT_NAME}@{NEXT_VERSION}" in err
    assert not (contracts_copy / f"{CONTRACT_NAME}@{NEXT_VERSION}.md.sha256").exists()


def test_pin_refuses_a_surface_declaring_the_wrong_version(contracts_copy, capsys):
    (contracts_copy / f"{CONTRACT_NAME}@{NEXT_VERSION}.surface.json").write_bytes(
        (contracts_copy / SURFACE).read_bytes()
    )
    code, _, err = run(capsys, "pin")
    assert code == 1 and f"declares MINI_SPHERE_CONTRACT@{ACTIVE_VERSION}" in err


def test_pin_reports_an_orphan_pin(contracts_copy, capsys):
    (contracts_copy / TEXT).rename(contracts_copy / "moved.txt")
    code, _, err = run(capsys, "pin")
    assert code == 1 and f"{TEXT}.sha256 pins a file that does not exist" in err


def test_pin_writes_missing_pins(contracts_copy, capsys):
    expected = (contracts_copy / f"{SURFACE}.sha256").read_bytes()
    (contracts_copy / f"{SURFACE}.sha256").unlink()
    code, out, _ = run(capsys, "pin")
    assert code == 0 and "1 pin(s) written" in out
    assert (contracts_copy / f"{SURFACE}.sha256").read_bytes() == expected


def test_contracts_requires_a_subcommand(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["contracts"])
    assert caught.value.code == 2
