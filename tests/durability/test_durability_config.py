"""Durability settings from the environment: defaults, S3, refusals."""
import pytest

from minisphere.config import ConfigError, load_config
from minisphere.durability_config import DurabilityConfig, load_durability_config
from minisphere.snapshot_store import LocalDirSnapshotStore, S3SnapshotStore


def test_defaults_are_a_local_store_under_the_data_folder(tmp_path):
    config = load_durability_config(tmp_path, {})
    assert config.store == "local" and config.snapshot_dir == str(tmp_path / "snapshots")
    assert isinstance(config.make_store(), LocalDirSnapshotStore)
    assert config.snapshot_every_writes == 1000 and config.hibernate_idle_s == 600
    assert DurabilityConfig.from_dict(config.to_dict()) == config


def test_s3_settings(tmp_path):
    config = load_durability_config(tmp_path, {
        "MINISPHERE_SNAPSHOT_STORE": "s3", "MINISPHERE_S3_BUCKET": "b",
        "MINISPHERE_S3_PREFIX": "/team/ms/", "MINISPHERE_S3_ENDPOINT_URL": "http://127.0.0.1:9",
        "MINISPHERE_S3_REGION": "us-east-1", "MINISPHERE_MAX_RESIDENT": "8",
        "MINISPHERE_SNAPSHOT_EVERY_S": "2.5"})
    assert config.s3_prefix == "team/ms/" and config.max_resident == 8
    assert config.snapshot_every_s == 2.5
    store = config.make_store()
    assert isinstance(store, S3SnapshotStore) and store.prefix == "team/ms/"
    assert config.describe() == "s3://b/team/ms/ at http://127.0.0.1:9"


@pytest.mark.parametrize("env, words", [
    ({"MINISPHERE_SNAPSHOT_STORE": "s3"}, "needs MINISPHERE_S3_BUCKET"),
    ({"MINISPHERE_SNAPSHOT_STORE": "ftp"}, "local or s3"),
    ({"MINISPHERE_MAX_RESIDENT": "0"}, "between"),
    ({"MINISPHERE_SNAPSHOT_EVERY_WRITES": "many"}, "must be a number"),
])
def test_bad_settings_refuse_to_start(tmp_path, env, words):
    with pytest.raises(ConfigError, match=words):
        load_config({"MINISPHERE_DATA_DIR": str(tmp_path / "d"),
                     "MINISPHERE_ADMIN_TOKEN": "x" * 20, **env})
    assert not (tmp_path / "d").exists()          # nothing created for a refused config
