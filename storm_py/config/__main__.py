"""``python -m storm_py.config`` prints ``defaults.yaml`` as rendered from the key table (``keys.py``)."""

import sys

from storm_py.config.keys import render_defaults_yaml

sys.stdout.write(render_defaults_yaml())
