"""Configuration (unit tier): packaged defaults, files, -c overrides, validation and the per-component whitelist."""

from __future__ import annotations

import logging

import pytest

from storm_py import Config
from storm_py.client import parse_seeds
from storm_py.config import merge_component_conf, parse_override, read_storm_config
from storm_py.config.keys import setting
from storm_py.errors import ConfigError


def test_a_misspelt_key_in_a_config_file_warns_naming_it_and_changes_nothing(tmp_path, caplog):
    f = tmp_path / "storm.yaml"
    f.write_text("topology.message.timeout.sec: 5\n")
    with caplog.at_level(logging.WARNING, logger="storm_py.config"):
        conf = read_storm_config(f)
    assert [r.getMessage() for r in caplog.records] == [
        f"unknown config key 'topology.message.timeout.sec' in config file {f}; "
        "did you mean 'topology.message.timeout.secs'?"
    ]
    assert conf["topology.message.timeout.secs"] != 5
    assert Config()["topology.message.timeout.secs"] == conf["topology.message.timeout.secs"]


def test_a_key_left_out_reads_as_in_a_full_config_and_a_given_value_wins():
    """A client given a partial conf dials where one given the whole merged config does (one default, stated
    once); a value given on the command line wins; null is "unset"; an undeclared key has no default."""
    full = read_storm_config(search_dirs=[])
    assert parse_seeds({}) == parse_seeds({"nimbus.thrift.port": None}) == parse_seeds(full)
    assert parse_seeds(read_storm_config(overrides=["nimbus.thrift.port=7000"], search_dirs=[])) == [
        ("127.0.0.1", 7000)
    ]
    assert setting({}, "topology.message.timeout.secs") == full["topology.message.timeout.secs"]
    with pytest.raises(KeyError, match=r"nimbus\.thrift\.prot"):
        setting(full, "nimbus.thrift.prot")


def test_merge_order_defaults_file_overrides(tmp_path):
    f = tmp_path / "storm.yaml"
    f.write_text("topology.workers: 3\ntopology.message.timeout.secs: 12\n")
    conf = read_storm_config(f, ["topology.workers=5", "custom.key=[1, 2]"])
    assert conf["topology.workers"] == 5
    assert conf["topology.message.timeout.secs"] == 12
    assert conf["custom.key"] == [1, 2]


def test_conf_dir_is_searched(tmp_path):
    (tmp_path / "storm.yaml").write_text("topology.debug: true\n")
    assert read_storm_config(search_dirs=[tmp_path])["topology.debug"] is True


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("- a\n- b\n", "mapping"),
        ("topology.workers: [\n", "not valid YAML"),
        ("topology.workers: 0\n", r"topology\.workers"),
    ],
)
def test_bad_config_files_name_the_problem(tmp_path, content, needle):
    f = tmp_path / "storm.yaml"
    f.write_text(content)
    with pytest.raises(ConfigError, match=needle):
        read_storm_config(f)


def test_missing_file_and_bad_override():
    with pytest.raises(ConfigError, match="cannot read config file"):
        read_storm_config("/nonexistent/storm.yaml")
    with pytest.raises(ConfigError, match="key=value"):
        parse_override("no-equals-sign")
    with pytest.raises(ConfigError, match=r"topology\.max\.spout\.pending"):
        read_storm_config(overrides=["topology.max.spout.pending=-3"], search_dirs=[])


def test_component_whitelist():
    """Only whitelisted Storm keys (and any non-Storm key) may be overridden per component."""
    merged = merge_component_conf(
        {"topology.message.timeout.secs": 30, "topology.max.spout.pending": 10},
        {"topology.message.timeout.secs": 99, "topology.max.spout.pending": 20, "my.key": 1,
         "topology.tick.tuple.freq.secs": 4},
    )
    assert merged == {"topology.message.timeout.secs": 30, "topology.max.spout.pending": 20, "my.key": 1,
                      "topology.tick.tuple.freq.secs": 4}


def test_config_helpers():
    c = Config().set_num_workers(3).set_num_ackers(0).set_message_timeout_secs(5).set_max_spout_pending(7)
    c.set_debug(True)
    assert (c["topology.workers"], c["topology.acker.executors"], c["topology.message.timeout.secs"],
            c["topology.max.spout.pending"], c["topology.debug"]) == (3, 0, 5, 7, True)
