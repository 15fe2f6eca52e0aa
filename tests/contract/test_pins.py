"""Pins: every contract file's exact bytes are checked against its .sha256 sidecar."""

import hashlib
import re

import pytest

from minisphere.contract.pins import (
    CONTRACT_NAME,
    ContractPinError,
    active_contract,
    contract_reference,
    find_contracts_dir,
    pinned_contracts,
    sha256_file,
    verify_startup,
)
from minisphere.engine.methods import METHODS
from minisphere.errors import MiniSphereError
from tests.support.contracts import ACTIVE_VERSION, CONTRACT_FILES, SURFACE, TEXT

HEX = re.compile(r"[0-9a-f]{64}")


def flip_one_byte(path, offset=200):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_repository_contracts_are_pinned_in_sha256sum_format():
    directory = find_contracts_dir()
    for name in (TEXT, SURFACE):
        body = (directory / name).read_bytes()
        sidecar = (directory / f"{name}.sha256").read_bytes()
        assert sidecar == f"{hashlib.sha256(body).hexdigest()}  {name}\n".encode()


def test_pinned_contracts_lists_name_version_sha_file():
    records = pinned_contracts()
    by_file = {r["file"]: r for r in records}
    assert set(by_file) >= {TEXT, SURFACE}
    text = by_file[TEXT]
    assert (text["name"], text["version"], text["role"], text["active"]) == (
        CONTRACT_NAME,
        ACTIVE_VERSION,
        "text",
        True,
    )
    assert HEX.fullmatch(text["sha256"])
    assert active_contract(records) == text
    assert contract_reference(text) == f"{CONTRACT_NAME}@{ACTIVE_VERSION}+sha256:{text['sha256']}"


@pytest.mark.parametrize("name", [TEXT, SURFACE])
def test_one_changed_byte_refuses_startup_naming_file_and_both_hashes(contracts_copy, name):
    path = contracts_copy / name
    pinned = (contracts_copy / f"{name}.sha256").read_text().split()[0]
    flip_one_byte(path)
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(ContractPinError) as caught:
        verify_startup(set(METHODS))
    message = str(caught.value)
    assert name in message and pinned in message and actual in message
    assert caught.value.code == "contract_pin_mismatch"
    assert isinstance(caught.value, MiniSphereError)
    assert (caught.value.file, caught.value.expected, caught.value.actual) == (name, pinned, actual)


def test_trailing_newline_alone_is_a_mismatch(contracts_copy):
    path = contracts_copy / TEXT
    path.write_bytes(path.read_bytes() + b"\n")
    with pytest.raises(ContractPinError, match="does not match its pin"):
        pinned_contracts()


@pytest.mark.parametrize("name", [TEXT, SURFACE])
def test_missing_pin_refuses(contracts_copy, name):
    (contracts_copy / f"{name}.sha256").unlink()
    actual = sha256_file(contracts_copy / name)
    with pytest.raises(ContractPinError) as caught:
        verify_startup(set(METHODS))
    assert name in str(caught.value) and "no pin" in str(caught.value)
    assert actual in str(caught.value)


@pytest.mark.parametrize("name", [TEXT, SURFACE])
def test_missing_file_with_pin_present_refuses(contracts_copy, name):
    pinned = (contracts_copy / f"{name}.sha256").read_text().split()[0]
    (contracts_copy / name).unlink()
    with pytest.raises(ContractPinError) as caught:
        verify_startup(set(METHODS))
    assert name in str(caught.value) and "missing" in str(caught.value)
    assert pinned in str(caught.value)


def test_missing_surface_and_its_pin_still_refuses(contracts_copy):
    (contracts_copy / SURFACE).unlink()
    (contracts_copy / f"{SURFACE}.sha256").unlink()
    with pytest.raises(ContractPinError, match=re.escape(SURFACE)):
        verify_startup(set(METHODS))


def test_empty_contracts_dir_refuses(tmp_path, monkeypatch):
    monkeypatch.setenv("MINISPHERE_CONTRACTS_DIR", str(tmp_path))
    with pytest.raises(ContractPinError, match=f"no {CONTRACT_NAME}@<version>.md"):
        verify_startup(set(METHODS))


def test_missing_contracts_dir_names_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("MINISPHERE_CONTRACTS_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(ContractPinError, match="MINISPHERE_CONTRACTS_DIR"):
        pinned_contracts()


@pytest.mark.parametrize(
    "pin_text",
    ["", "not a hash\n", "ab" * 32 + "  OTHER@0.1.md\n", "ab" * 32 + "  x\n" + "cd" * 32 + "  y\n"],
)
def test_malformed_pin_refuses(contracts_copy, pin_text):
    (contracts_copy / f"{TEXT}.sha256").write_text(pin_text)
    with pytest.raises(ContractPinError, match=re.escape(TEXT)):
        pinned_contracts()


def test_uppercase_pin_and_binary_marker_are_accepted(contracts_copy):
    """Pins written by other sha256sum tools (upper-case hex, '*' binary marker) still verify."""
    digest = sha256_file(contracts_copy / TEXT)
    (contracts_copy / f"{TEXT}.sha256").write_text(f"{digest.upper()} *{TEXT}\n")
    assert any(r["file"] == TEXT for r in pinned_contracts())


def test_unrelated_files_are_ignored(contracts_copy):
    (contracts_copy / "README.md").write_text("notes\n")
    assert {r["file"] for r in pinned_contracts()} == CONTRACT_FILES


def test_hashing_streams_large_files(tmp_path):
    big = tmp_path / "big.bin"
    big.write_bytes(bytes(range(256)) * 4096 + b"tail")  # ~1 MiB, not a multiple of the chunk
    assert sha256_file(big) == hashlib.sha256(big.read_bytes()).hexdigest()


def test_explicit_dir_argument_wins_over_environment(contracts_copy, monkeypatch):
    monkeypatch.setenv("MINISPHERE_CONTRACTS_DIR", "/nonexistent")
    records = verify_startup(set(METHODS), contracts_dir=contracts_copy)
    assert {r["file"] for r in records} == CONTRACT_FILES
