"""streamparse projects unchanged: a project folder (``config.json``, ``topologies/NAME.py`` with streamparse's
``Topology`` DSL, ``src/``, ``virtualenvs/NAME.txt``) read and translated into a storm_py topology whose Python
components are pystorm processes started by ``streamparse_run`` over the multilang protocol, as on Storm.
"""

from storm_py.streamparse.project import Project, find_project
from storm_py.streamparse.translate import build_topology

__all__ = ["Project", "build_topology", "find_project"]
