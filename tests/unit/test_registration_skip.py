"""``topology.skip.missing.kryo.registrations``: a registered class or serializer that does not import is skipped
with a warning naming it (Storm's behaviour) instead of failing; off by default."""

from __future__ import annotations

import logging

import pytest

from storm_py.config import defaults
from storm_py.errors import ConfigError
from storm_py.protocol import registration

HERE = __name__
MISSING = "no_such_module_xyz:Thing"
SKIP = "topology.skip.missing.kryo.registrations"


class Point:
    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y


def test_off_by_default_a_missing_class_fails_naming_it() -> None:
    assert defaults()[SKIP] is False
    with pytest.raises(ConfigError, match=f"unknown class '{MISSING}'"):
        registration.registrations({"topology.kryo.register": [MISSING, f"{HERE}:Point"]})
    with pytest.raises(ConfigError, match=f"unknown class '{MISSING}'"):
        registration.registrations({"topology.kryo.register": [MISSING], SKIP: False})


def test_a_missing_class_is_skipped_with_a_warning_naming_it(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="storm_py.protocol.registration"):
        regs = registration.registrations({"topology.kryo.register": [f"{HERE}:Point", MISSING], SKIP: True})
    # the missing class keeps its place in the name order: Point's code is the same wherever the other imports
    assert [(r.name, r.code, r.cls) for r in regs] == [(f"{HERE}:Point", registration.FIRST_CODE + 1, Point)]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and MISSING in warned[0] and SKIP in warned[0]


def test_a_missing_serializer_skips_its_class(caplog: pytest.LogCaptureFixture) -> None:
    conf = {"topology.kryo.register": [{f"{HERE}:Point": "no_such_module_xyz:PointSer"}], SKIP: True}
    with caplog.at_level(logging.WARNING, logger="storm_py.protocol.registration"):
        assert registration.registrations(conf) == []
    (warned,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "no_such_module_xyz:PointSer" in warned and f"{HERE}:Point" in warned


def test_skipping_leaves_other_bad_entries_refused() -> None:
    """Only what does not import is skipped: a name of no class form is still refused, by name."""
    with pytest.raises(ConfigError, match="'Point' is not a class name"):
        registration.registrations({"topology.kryo.register": ["Point"], SKIP: True})
