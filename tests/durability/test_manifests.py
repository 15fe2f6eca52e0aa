"""A tampered manifest is `SnapshotCorrupt` (422), never a TypeError: every field that holds a
number must be a non-negative integer, every digest 64 hex digits; the listing shows such a
version with an error instead of failing."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minisphere.durability.constants import SNAPSHOT_MAX_MANIFEST_BYTES
from minisphere.durability.restores import restore_snapshot
from minisphere.durability.snapshots.layout import manifest_key
from minisphere.durability.snapshots.manifest import (
    MANIFEST_COUNTS,
    MANIFEST_DIGESTS,
    MANIFEST_REQUIRED,
    list_snapshots,
    read_manifest,
)
from minisphere.durability.snapshots.publish import take_snapshot
from minisphere.errors import SnapshotCorrupt
from minisphere.http.statuses import error_response
from tests.durability.helpers import file_sha, fill

NOT_A_COUNT = st.one_of(
    st.text(max_size=8),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.integers(max_value=-1),
)
NOT_A_DIGEST = st.one_of(
    st.integers(), st.none(), st.text(max_size=70), st.just("A" * 64), st.just("g" * 64)
)


@pytest.fixture(scope="module")
def snapshotted(tmp_path_factory):
    """One real snapshot in a local store, and the live file it came from."""
    from minisphere.durability.stores import LocalDirSnapshotStore

    folder = tmp_path_factory.mktemp("manifests")
    store = LocalDirSnapshotStore(folder / "snapshots")
    live = folder / "workspace.db"
    fill(live, ["a fact worth keeping", "another one"])
    manifest = take_snapshot(live, store, "ws-tamper")
    manifest.pop("tookMs")
    return store, live, manifest


def tamper(store, manifest: dict, **changes) -> None:
    store.put_bytes(
        manifest_key("ws-tamper", manifest["version"]),
        json.dumps(dict(manifest, **changes)).encode(),
    )


def assert_refused_as_corrupt(store, live, manifest) -> None:
    before = file_sha(live)
    with pytest.raises(SnapshotCorrupt) as caught:
        restore_snapshot(store, "ws-tamper", live, manifest["version"])
    assert error_response(caught.value)[0] == 422
    assert file_sha(live) == before
    (listed,) = list_snapshots(store, "ws-tamper")
    assert listed["version"] == manifest["version"] and "unreadable manifest" in listed["error"]


SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(field=st.sampled_from(MANIFEST_COUNTS), value=NOT_A_COUNT)
def test_manifest_count_that_is_not_an_integer_is_corrupt_not_a_type_error(
    snapshotted, field, value
):
    store, live, manifest = snapshotted
    try:
        tamper(store, manifest, **{field: value})
        assert_refused_as_corrupt(store, live, manifest)
    finally:
        tamper(store, manifest)


@SETTINGS
@given(field=st.sampled_from(MANIFEST_DIGESTS), value=NOT_A_DIGEST)
def test_manifest_digest_that_is_not_hex_is_corrupt(snapshotted, field, value):
    store, live, manifest = snapshotted
    try:
        tamper(store, manifest, **{field: value})
        assert_refused_as_corrupt(store, live, manifest)
    finally:
        tamper(store, manifest)


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 50_000 + b"]" * 50_000,  # nested past the parser's stack
        b'{"version": "' + b"x" * SNAPSHOT_MAX_MANIFEST_BYTES + b'"}',  # past the size cap
        None,  # another workspace's manifest
        "compression",  # a compression this build cannot read
    ],
    ids=["nested", "oversized", "foreign", "compression"],
)
def test_manifest_nested_oversized_or_foreign_is_corrupt_and_listed(snapshotted, raw):
    store, live, manifest = snapshotted
    key = manifest_key("ws-tamper", manifest["version"])
    try:
        if raw is None:
            tamper(store, manifest, workspace="ws-someone-else")
        elif raw == "compression":
            tamper(store, manifest, compression="zstd")
        else:
            store.put_bytes(key, raw)
        assert_refused_as_corrupt(store, live, manifest)
    finally:
        tamper(store, manifest)
    assert read_manifest(store, "ws-tamper", manifest["version"]) == manifest


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


@SETTINGS
@given(whole=JSON_VALUES.filter(lambda value: not isinstance(value, dict)))
def test_manifest_that_is_not_an_object_is_corrupt(snapshotted, whole):
    store, live, manifest = snapshotted
    key = manifest_key("ws-tamper", manifest["version"])
    try:
        store.put_bytes(key, json.dumps(whole).encode())
        assert_refused_as_corrupt(store, live, manifest)
    finally:
        tamper(store, manifest)


@SETTINGS
@given(
    lacking=st.sets(st.sampled_from(MANIFEST_REQUIRED), min_size=1),
    version=st.none() | st.sampled_from(["20990101T000000000Z-000001", ""]) | JSON_VALUES,
)
def test_manifest_lacking_a_field_or_describing_another_version_is_corrupt(
    snapshotted, lacking, version
):
    """Each refusal alone: a manifest of another version, or (of this one) lacking fields."""
    store, live, manifest = snapshotted
    key = manifest_key("ws-tamper", manifest["version"])
    changed = (
        dict(manifest, version=version)
        if version != manifest["version"]
        else {name: value for name, value in manifest.items() if name not in lacking}
    )
    try:
        store.put_bytes(key, json.dumps(changed).encode())
        assert_refused_as_corrupt(store, live, manifest)
        with pytest.raises(SnapshotCorrupt, match=r"does not describe this version|lacks"):
            read_manifest(store, "ws-tamper", manifest["version"])
    finally:
        tamper(store, manifest)
