"""Wheels written by hand for the dependency tests (no build backend, no index): a module, its metadata, a RECORD."""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path


def make_wheel(out: Path, name: str, version: str, files: Mapping[str, str], requires: tuple[str, ...] = (),
               tag: str = "py3-none-any") -> Path:
    """Write ``<name>-<version>-<tag>.whl`` holding ``files`` (archive path -> text) into ``out``."""
    dist = f"{name}-{version}.dist-info"
    meta = "".join([f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                    *(f"Requires-Dist: {r}\n" for r in requires)])
    members = {**files, f"{dist}/METADATA": meta,
               f"{dist}/WHEEL": f"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: {tag}\n"}
    record = "".join(f"{path},,\n" for path in members) + f"{dist}/RECORD,,\n"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for member, text in {**members, f"{dist}/RECORD": record}.items():
            zf.writestr(member, text)
    return path


#: A topology app's spout ``One`` (``from storm_py import Spout``): it emits ``[4]`` once, on field ``n``.
ONE_NUMBER_SPOUT = '''
class One(Spout):
    def open(self, conf, context, collector):
        self.collector, self.sent = collector, False

    def next_tuple(self):
        if not self.sent:
            self.sent = True
            self.collector.emit([4], 1)

    def declare_output_fields(self, declarer):
        declarer.declare(["n"])
'''

#: A topology app's ``build``: spout ``One`` into bolt ``Probe``.
ONE_INTO_PROBE = '''
def build(conf):
    builder = TopologyBuilder()
    builder.set_spout("one", One(), 1)
    builder.set_bolt("probe", Probe(), 1).shuffle_grouping("one")
    return builder.create_topology()
'''
