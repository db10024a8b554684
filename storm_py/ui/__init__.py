"""This package owns the web UI: static HTML, CSS and JavaScript (no build step, no CDN) and their lookup.

The pages read Storm UI's REST API (``/api/v1/...``) of the server that serves them; nimbus and ``storm-py ui``
serve them at ``/`` with :func:`asset`.  The rest of what the UI shows lives here too: the API's JSON shapes
(:mod:`storm_py.ui.api_views`, the statistics' JSON in :mod:`storm_py.ui.stats_views`, over the figures of
:mod:`storm_py.metrics.reports`) and the charts' time series (:mod:`storm_py.ui.series`), while
:mod:`storm_py.nimbus.api` keeps the routes; and the ``storm-py ui`` process (:mod:`storm_py.ui.daemon`).
This module itself imports nothing of storm_py.
"""

from __future__ import annotations

from importlib import resources

#: Content types of the files shipped.
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "application/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}

#: Pages served at the root (``/`` is the cluster page).
PAGES = ("index.html", "topology.html", "component.html", "log.html")


def asset(path: str) -> tuple[bytes, str] | None:
    """The bytes and content type of the UI file at URL ``path`` (``/``, ``/topology.html``, ``/static/x.js``).

    Only names of shipped files match (no directories, no ``..``); anything else is ``None``.
    """
    name = path.split("?", 1)[0].lstrip("/") or "index.html"
    if name.startswith("static/"):
        name = name[len("static/"):]
    elif name not in PAGES:
        return None
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None
    suffix = name[name.rfind("."):] if "." in name else ""
    content_type = CONTENT_TYPES.get(suffix)
    if content_type is None:
        return None
    file = resources.files(__name__).joinpath("static", name)
    if not file.is_file():
        return None
    return file.read_bytes(), content_type
