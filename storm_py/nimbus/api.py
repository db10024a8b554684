"""This module owns nimbus's REST API: Storm UI's ``/api/v1`` routes plus upload and blob download.

Reads are answered by any nimbus (everything comes from the cluster state); submit, kill, activate,
deactivate and rebalance only by the leader — a standby answers ``503 not_leader`` naming the leader, which
:class:`storm_py.client.NimbusClient` follows.  Every route but the UI's files needs a token: the cluster's
``nimbus.auth.token`` or a user's, whose rights the gate (:mod:`storm_py.nimbus.access`) checks for every route
before its handler runs.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import quote

import storm_py
from storm_py import ui
from storm_py.clock import Clock, wait_until
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.models import StormBase
from storm_py.config.keys import setting
from storm_py.deps.envcache import environment_states, environment_status
from storm_py.deps.wheelhouse import check_wheelhouse
from storm_py.errors import NotAliveException, NotLeaderError, WaitTimeoutError
from storm_py.metrics import prometheus
from storm_py.metrics.reports import by_component, observe, prometheus_series, reports
from storm_py.metrics.windows import ALL_TIME
from storm_py.nimbus.access import SUBMITTER_KEY, NimbusGate
from storm_py.nimbus.admin_api import admin_routes
from storm_py.nimbus.autoscale_api import autoscale_routes
from storm_py.nimbus.blob_api import blob_routes
from storm_py.nimbus.blobstore import LocalFsBlobStore, NimbusCodeStore
from storm_py.nimbus.core import Nimbus
from storm_py.nimbus.credentials_api import credentials_routes
from storm_py.nimbus.profiling_api import profiling_routes
from storm_py.nimbus.rest_params import debug_request, debug_view, wait_param, window_param
from storm_py.nimbus.userblobs import UserBlobs
from storm_py.nimbus.users_api import users_routes
from storm_py.nimbus.worker_log import worker_log_routes
from storm_py.node import tls
from storm_py.node.http_api import BadRequestError, ForbiddenError, NotFoundError, Reply, Request, Route
from storm_py.node.launch_report import launch_failures
from storm_py.packaging.code_loader import parse_entry
from storm_py.packaging.package import TopologyPackage, UnpackLimits, check_archive
from storm_py.runtime.eventlogger import EVENTLOGGER_COMPONENT
from storm_py.ui import api_views, series, stats_views
from storm_py.worker.log_levels import level_number

log = logging.getLogger(__name__)

API = "/api/v1"
#: Configuration keys never shown by ``/api/v1/cluster/configuration``.
SECRET_KEYS = frozenset({"nimbus.auth.token"})


class NimbusNode(Protocol):
    """What the API needs of the nimbus daemon it serves."""

    id: str
    conf: dict[str, Any]
    clock: Clock
    state: ClusterState
    nimbus: Nimbus
    code_store: NimbusCodeStore
    blobs: LocalFsBlobStore
    gate: NimbusGate

    def is_leader(self) -> bool: ...

    def leader_id(self) -> str | None: ...

    def wake(self) -> None: ...


class NimbusApi:
    """The route table of one nimbus daemon."""

    def __init__(self, node: NimbusNode) -> None:
        self.node = node

    def routes(self) -> list[Route]:
        """Every route, Storm UI's first."""

        def get(path: str, handler: Callable[[Request], Any]) -> Route:
            return Route("GET", API + path, handler)

        def post(path: str, handler: Callable[[Request], Any]) -> Route:
            return Route("POST", API + path, handler, protected=True)

        return [
            get("/cluster/configuration", self.configuration),
            get("/cluster/summary", self.cluster_summary),
            get("/supervisor/summary", self.supervisor_summary),
            get("/nimbus/summary", self.nimbus_summary),
            get("/topology/summary", self.topology_summary),
            get("/topology-workers/{id}", self.topology_workers),
            get("/topology/{id}", self.topology_page),
            get("/topology/{id}/component/{component}", self.component_page),
            get("/topology/{id}/visualization", self.visualization),
            get("/topology/{id}/lag", self.lag),
            get("/topology/{id}/timeseries", self.timeseries),
            get("/topology/{id}/component/{component}/timeseries", self.timeseries),
            get("/topology/{id}/logconfig", self.log_config),
            post("/topology/{id}/logconfig", self.set_log_config),
            post("/topology/{id}/activate", self.activate),
            post("/topology/{id}/deactivate", self.deactivate),
            post("/topology/{id}/rebalance", self.rebalance),
            post("/topology/{id}/rebalance/{wait}", self.rebalance),
            post("/topology/{id}/debug/{action}/{spct}", self.debug),
            post("/topology/{id}/component/{component}/debug/{action}/{spct}", self.debug),
            post("/topology/{id}/kill", self.kill),
            post("/topology/{id}/kill/{wait}", self.kill),
            post("/uploadTopology", self.upload),
            Route("GET", API + "/stored-blobs/{key}", self.blob, protected=True),
            *blob_routes(self.node),
            *admin_routes(self.node),
            *users_routes(self.node, lambda: self.node.gate.users),
            *credentials_routes(self.node, self._base),
            *worker_log_routes(self.node, self._base),
            *profiling_routes(self.node, self._base),
            *autoscale_routes(self.node, self._base),
            Route("GET", "/metrics", self.prometheus),
            Route("GET", "/", self.ui_page, public=True),  # the UI's files carry no cluster data
            Route("GET", "/{page}", self.ui_page, public=True),
            Route("GET", "/static/{name}", self.ui_page, public=True),
        ]

    # ------------------------------------------------------------------------------------------- helpers

    def _base(self, topology: str) -> tuple[str, StormBase]:
        """A live topology by id (or, for convenience, by name)."""
        state = self.node.state
        base = state.storm_base(topology) if _valid_id(topology) else None
        if base is not None:
            return topology, base
        tid = self.node.nimbus.topology_id(topology)
        base = state.storm_base(tid) if tid else None
        if tid is None or base is None:
            raise NotAliveException(f"topology {topology!r} is not alive", topology=topology)
        return tid, base

    def _require_leader(self) -> None:
        if not self.node.is_leader():
            leader = self.node.leader_id()
            raise NotLeaderError(
                f"this nimbus is not the leader (the leader is {leader or 'not elected yet'})", leader=leader or ""
            )

    def _done(self, operation: str, tid: str) -> dict[str, Any]:
        self.node.wake()
        return {"topologyOperation": operation, "topologyId": tid, "status": "success"}

    # ------------------------------------------------------------------------------------------- reads

    def configuration(self, req: Request) -> dict[str, Any]:
        """``/cluster/configuration``: this nimbus's configuration (secrets left out)."""
        return {k: v for k, v in self.node.conf.items() if k not in SECRET_KEYS}

    def cluster_summary(self, req: Request) -> dict[str, Any]:
        """``/cluster/summary``, with the caller (``user``, ``role``) and the cluster ``actions`` it may take."""
        s = self.node.state
        summary = api_views.cluster_summary(storm_py.__version__, s.supervisors(), s.storm_bases(), s.assignments())
        return {**summary, **self.node.gate.whoami(req.user)}

    def supervisor_summary(self, req: Request) -> dict[str, Any]:
        """``/supervisor/summary``."""
        s = self.node.state
        return {
            "supervisors": api_views.supervisor_rows(s.supervisors(), s.assignments()),
            "schedulerDisplayResource": False,
        }

    def nimbus_summary(self, req: Request) -> dict[str, Any]:
        """``/nimbus/summary``: every registered nimbus and which one leads (``self``: the one answering)."""
        s = self.node.state
        rows = api_views.nimbus_rows(s.nimbuses(), self.node.leader_id(), self.node.clock.wall())
        return {"nimbuses": rows, "self": self.node.id}

    def topology_summary(self, req: Request) -> dict[str, Any]:
        """``/topology/summary``."""
        rows = [
            api_views.topology_row(r, self.node.code_store.replication_count(r["id"]))
            for r in self.node.nimbus.cluster_summary()
        ]
        return {"topologies": rows, "schedulerDisplayResource": False}

    def _page(self, topology: str, window: str = ALL_TIME) -> tuple[str, StormBase, dict[str, Any]]:
        tid, base = self._base(topology)
        s = self.node.state
        summary = api_views.topology_summary(self.node.nimbus.reading(tid, base), window)
        page = api_views.topology_page(
            summary,
            base,
            s.assignment(tid),
            s.worker_heartbeats(tid),
            self.node.code_store.replication_count(tid),
            self.node.clock.wall(),
            api_views.log_viewer_urls(s.supervisors(), tls.scheme(self.node.conf)),
        )
        return tid, base, page

    def topology_page(self, req: Request) -> dict[str, Any]:
        """``/topology/:id?window=``, with the caller (``user``) and the ``actions`` it may take on the topology."""
        tid, base, page = self._page(req.params["id"], window_param(req))
        supervisors = self.node.state.supervisors().values()
        page["environment"] = environment_status(tid, ((i.hostname, i.scheduler_meta) for i in supervisors))
        page["environmentStates"] = environment_states(tid, ((i.hostname, i.scheduler_meta) for i in supervisors))
        page["launchFailures"] = launch_failures(tid, ((i.hostname, i.scheduler_meta) for i in supervisors))
        return {**page, **debug_view(base.component_debug.get(tid)),
                "eventLoggers": base.component_executors.get(EVENTLOGGER_COMPONENT, 0),
                "user": req.user or "", "actions": self.node.gate.topology_actions(req.user, tid)}

    def component_page(self, req: Request) -> dict[str, Any]:
        """``/topology/:id/component/:component``, with the caller's topology ``actions`` (as the topology page)."""
        window = window_param(req)
        tid, base, page = self._page(req.params["id"], window)
        comp = req.params["component"]
        s = self.node.state
        out = api_views.component_page(
            page, comp, s.assignment(tid), s.worker_heartbeats(tid), s.errors(tid, comp), self.node.clock.wall(),
            self.node.nimbus.stats_book, window,
        )
        if out is None:
            raise NotFoundError(f"topology {tid} has no component {comp!r}", topology=tid, component=comp)
        return {**out, **debug_view(base.component_debug.get(comp) or base.component_debug.get(tid)),
                "user": req.user or "", "actions": self.node.gate.topology_actions(req.user, tid)}

    def topology_workers(self, req: Request) -> dict[str, Any]:
        """``/topology-workers/:id``: where the topology's workers run."""
        tid, _ = self._base(req.params["id"])
        assignment = self.node.state.assignment(tid)
        slots = sorted(assignment.slots()) if assignment is not None else []
        hosts = assignment.node_host if assignment is not None else {}
        supervisors = self.node.state.supervisors()
        ports = {sid: info.logviewer_port for sid, info in supervisors.items() if info.logviewer_port}
        rows = [
            {"host": hosts.get(n, n), "port": p, "supervisorId": n, "logviewerPort": ports.get(n)}
            for n, p in slots
        ]
        # Storm has one port for all; here each supervisor's log viewer says where it listens (rows carry theirs)
        first = next((r["logviewerPort"] for r in rows if r["logviewerPort"]), None)
        return {"hostPortList": rows, "logviewerPort": first if first is not None else next(iter(ports.values()), None)}

    def visualization(self, req: Request) -> dict[str, Any]:
        """``/topology/:id/visualization?window=``: components, their inputs with rates, capacities."""
        window = window_param(req, default="600")
        tid, base = self._base(req.params["id"])
        book = self.node.nimbus.stats_book
        found = observe(book, tid, self.node.state.worker_heartbeats(tid))
        return stats_views.visualization(base, by_component(book, tid, found, window, self.node.clock.wall()))

    def lag(self, req: Request) -> dict[str, Any]:
        """``/topology/:id/lag``: per spout reading a log (the Kafka spouts), committed offset, log end and lag
        per partition, as its executors last reported them in their workers' heartbeats."""
        tid, _ = self._base(req.params["id"])
        return stats_views.topology_lag(reports(self.node.state.worker_heartbeats(tid)))

    def timeseries(self, req: Request) -> dict[str, Any]:
        """``/topology/:id/timeseries`` and ``/topology/:id/component/:component/timeseries``: the UI's charts,
        rates and latency per 30-second bucket over the last 10 minutes (:mod:`storm_py.ui.series`)."""
        tid, base = self._base(req.params["id"])
        comp = req.params.get("component")
        if comp is not None and comp not in base.component_executors:
            raise NotFoundError(f"topology {tid} has no component {comp!r}", topology=tid, component=comp)
        book = self.node.nimbus.stats_book
        found = observe(book, tid, self.node.state.worker_heartbeats(tid))
        return series.series(book, tid, found, self.node.clock.wall(), comp)

    def prometheus(self, req: Request) -> Reply:
        """``GET /metrics``: the cluster's, topologies' and components' figures in Prometheus text format."""
        s = self.node.state
        book = self.node.nimbus.stats_book
        now = self.node.clock.wall()
        cluster = api_views.cluster_summary(storm_py.__version__, s.supervisors(), s.storm_bases(), s.assignments())
        topologies = []
        workers: list[prometheus.WorkerRow] = []
        for row in self.node.nimbus.cluster_summary():
            base = s.storm_base(row["id"])
            if base is None:
                continue
            beats = s.worker_heartbeats(row["id"])
            workers.extend(prometheus.WorkerRow(str(row.get("name", "")), node, port, beat.uptime_secs)
                           for (node, port), beat in sorted(beats.items()))
            found = observe(book, row["id"], beats)
            topologies.append((row, prometheus_series(book, row["id"], base, found, now)))
        text = prometheus.render(prometheus.cluster_families(cluster) + prometheus.topology_families(topologies)
                                 + prometheus.worker_families(workers))
        return Reply(200, text.encode("utf-8"), prometheus.CONTENT_TYPE)

    def ui_page(self, req: Request) -> Reply:
        """The UI's pages and static files (``/``, ``/topology.html``, ``/static/storm.js`` ...)."""
        found = ui.asset(req.path)
        if found is None:
            raise NotFoundError(f"no route GET {req.path}", path=req.path)
        body, content_type = found
        return Reply(200, body, content_type, {"Cache-Control": "no-cache"})

    def blob(self, req: Request) -> Reply:
        """A stored blob's bytes by its store key, for supervisors and standby nimbuses (a user blob is stored as
        ``userblob/<key>``; the users' own resource is ``/api/v1/blobs/<key>``, :mod:`storm_py.nimbus.blob_api`)."""
        key = req.params["key"]
        data = self.node.blobs.get(key)
        if data is None:
            raise NotFoundError(f"blob {key!r} is not held by this nimbus", key=key)
        return Reply(200, data, "application/octet-stream")

    # ------------------------------------------------------------------------------------------- actions

    def activate(self, req: Request) -> dict[str, Any]:
        """``POST /topology/:id/activate``."""
        self._require_leader()
        tid, base = self._base(req.params["id"])
        self.node.nimbus.activate(base.name)
        return self._done("activate", tid)

    def deactivate(self, req: Request) -> dict[str, Any]:
        """``POST /topology/:id/deactivate``."""
        self._require_leader()
        tid, base = self._base(req.params["id"])
        self.node.nimbus.deactivate(base.name)
        return self._done("deactivate", tid)

    def debug(self, req: Request) -> dict[str, Any]:
        """``POST /topology/:id[/component/:component]/debug/:action/:spct``: ``action`` ``enable`` or
        ``disable``, ``spct`` the percentage of emits sampled to the event logger."""
        self._require_leader()
        enable, pct = debug_request(req.params)
        tid, base = self._base(req.params["id"])
        self.node.nimbus.debug(base.name, req.params.get("component"), enable, pct)
        return self._done("debug", tid)

    def kill(self, req: Request) -> dict[str, Any]:
        """``POST /topology/:id/kill[/:wait]`` (default wait: the topology's message timeout)."""
        self._require_leader()
        wait = wait_param(req)
        tid, base = self._base(req.params["id"])
        self.node.nimbus.kill_topology(base.name, wait)
        return self._done("kill", tid)

    def rebalance(self, req: Request) -> dict[str, Any]:
        """``POST /topology/:id/rebalance[/:wait]`` with Storm's ``rebalanceOptions`` body (``numWorkers``,
        ``executors``, ``topologyConfOverrides``: ``rebalance -t``, ``topologyResourcesOverrides``:
        ``rebalance -r``) and a top-level ``tasks`` ({component: n}: new task counts, checked by nimbus)."""
        self._require_leader()
        wait = wait_param(req)
        body = req.json()
        tasks = body.get("tasks") if isinstance(body, Mapping) else None
        if tasks is not None and not isinstance(tasks, Mapping):
            raise BadRequestError("tasks must be an object mapping component ids to task counts")
        options = body.get("rebalanceOptions", {}) if isinstance(body, Mapping) else {}
        if not isinstance(options, Mapping):
            raise BadRequestError("rebalanceOptions must be an object")
        workers = options.get("numWorkers")
        executors = options.get("executors") or {}
        if not isinstance(executors, Mapping):
            raise BadRequestError("rebalanceOptions.executors must map component ids to executor counts")
        try:
            counts = {str(k): int(v) for k, v in executors.items()}
            num_workers = None if workers is None else int(workers)
        except (TypeError, ValueError) as err:
            raise BadRequestError(f"rebalance options must be integers: {err}") from err
        overrides = options.get("topologyConfOverrides") or {}
        if not isinstance(overrides, Mapping):
            raise BadRequestError("rebalanceOptions.topologyConfOverrides must be an object of config keys")
        if SUBMITTER_KEY in overrides and not self.node.gate.is_admin(req.user):
            raise ForbiddenError(f"only an admin may change {SUBMITTER_KEY} (who owns the topology)", key=SUBMITTER_KEY)
        resources = options.get("topologyResourcesOverrides") or {}
        if not isinstance(resources, Mapping):
            raise BadRequestError("rebalanceOptions.topologyResourcesOverrides must map components to resources")
        tid, base = self._base(req.params["id"])
        self.node.nimbus.rebalance(base.name, wait, num_workers, counts, overrides, resources,
                                   dict(tasks) if tasks is not None else None)
        return self._done("rebalance", tid)

    def log_config(self, req: Request) -> dict[str, Any]:
        """``GET /topology/:id/logconfig``: the dynamic log levels set with ``set_log_level``."""
        tid, _ = self._base(req.params["id"])
        return {"namedLoggerLevels": self.node.state.log_config(tid)}

    def set_log_config(self, req: Request) -> dict[str, Any]:
        """``POST /topology/:id/logconfig`` with Storm's ``{"namedLoggerLevels": {logger: {target_level,
        reset_level, timeout}}}``; a null ``target_level`` removes the logger's entry (its level is restored)."""
        self._require_leader()
        tid, _ = self._base(req.params["id"])
        body = req.json()
        named = body.get("namedLoggerLevels") if isinstance(body, Mapping) else None
        if not isinstance(named, Mapping):
            raise BadRequestError("logconfig needs an object namedLoggerLevels: {logger: {target_level, timeout}}")
        config = self.node.state.log_config(tid)
        now = self.node.clock.wall()
        for name, entry in named.items():
            if not isinstance(name, str) or not name or not isinstance(entry, Mapping):
                raise BadRequestError(f"logger {name!r} needs an object {{target_level, reset_level, timeout}}")
            target = entry.get("target_level")
            if target in (None, ""):
                config.pop(name, None)
                continue
            reset = entry.get("reset_level")
            timeout = entry.get("timeout", 0)
            for what, level in (("target_level", target), ("reset_level", reset)):
                if level is not None and level_number(level) is None:
                    raise BadRequestError(f"{what} of logger {name!r} is not a log level: {level!r}")
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
                raise BadRequestError(f"timeout of logger {name!r} must be seconds >= 0, got {timeout!r}")
            config[name] = {"target_level": str(target).upper(),
                            "reset_level": None if reset is None else str(reset).upper(),
                            "timeout": timeout, "timeout_epoch": now + timeout if timeout else None}
        self.node.state.set_log_config(tid, config)
        return {"namedLoggerLevels": config, **self._done("logconfig", tid)}

    def upload(self, req: Request) -> dict[str, Any]:
        """``POST /uploadTopology``: ``{name, entry, filename, conf, inactive, package (base64)}``, or
        ``packageBlob`` (the key of a package uploaded to the blob store) in place of ``package``."""
        self._require_leader()
        body = req.json()
        if not isinstance(body, Mapping):
            raise BadRequestError("submit body must be a JSON object")
        name = body.get("name")
        entry = body.get("entry")
        conf = body.get("conf") or {}
        if not isinstance(name, str) or not isinstance(entry, str) or not isinstance(conf, Mapping):
            raise BadRequestError("submit needs a string name, a string entry and an object conf")
        parse_entry(entry)
        blob_key = body.get("packageBlob")
        if isinstance(blob_key, str) and blob_key:  # uploaded before, as `storm-py shell` does
            data = UserBlobs(self.node.blobs, self.node.state, self.node.id).read(blob_key)[1]
        else:
            try:
                data = base64.b64decode(str(body.get("package") or ""), validate=True)
            except (binascii.Error, ValueError) as err:
                raise BadRequestError(f"package is not base64: {err}") from err
        filename = str(body.get("filename") or "topology.zip")
        limits = UnpackLimits.from_conf(self.node.conf)  # the cluster's limits, never the topology's
        check_archive(data, filename, limits)
        check_wheelhouse(data, limits, filename)
        UserBlobs(self.node.blobs, self.node.state, self.node.id).check_map(
            conf.get("topology.blobstore.map", self.node.conf.get("topology.blobstore.map")))
        conf = self.node.gate.submitter_conf(req.user, conf)
        package = TopologyPackage(data, entry, filename)
        tid = self.node.nimbus.submit_topology(name, dict(conf), package, bool(body.get("inactive", False)))
        replication = self._await_replication(tid, {**self.node.conf, **conf})
        self.node.wake()
        return {"id": tid, "encodedId": quote(tid, safe=""), "name": name, "status": "success",
                "replicationCount": replication}

    def _await_replication(self, tid: str, conf: Mapping[str, Any]) -> int:
        """Wait until ``topology.min.replication.count`` nimbuses hold the package (Storm's submit wait)."""
        wanted = int(setting(conf, "topology.min.replication.count"))
        max_wait = float(setting(conf, "topology.max.replication.wait.time.secs"))
        store = self.node.code_store
        if wanted <= 1:
            return store.replication_count(tid)
        self.node.wake()
        try:
            wait_until(
                lambda: store.replication_count(tid) >= wanted,
                max_wait if max_wait >= 0 else 365 * 86400.0,
                interval=0.05,
                what=f"{wanted} nimbuses to hold the code of {tid}",
            )
        except WaitTimeoutError:
            log.warning(
                "only %d of %d nimbuses hold the code of %s after %.0fs; going on",
                store.replication_count(tid), wanted, tid, max_wait,
            )
        return store.replication_count(tid)


def _valid_id(text: str) -> bool:
    return bool(text) and "/" not in text and text not in (".", "..")
