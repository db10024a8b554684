"""Storm's multilang protocol: bolts and spouts whose work is done by another process (``storm.py``, ``storm.js``,
pystorm, any program speaking the protocol over stdin/stdout), with Storm's JSON framing or pystorm's msgpack.

Subclass :class:`ShellBolt` or :class:`ShellSpout` with the command and declare the output fields::

    class SplitSentence(ShellBolt):
        def __init__(self):
            super().__init__("python3", "splitsentence.py")

        def declare_output_fields(self, declarer):
            declarer.declare(["word"])
"""

from storm_py.multilang.bolt import ShellBolt
from storm_py.multilang.spout import ShellSpout

__all__ = ["ShellBolt", "ShellSpout"]
