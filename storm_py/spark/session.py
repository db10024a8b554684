"""PySpark (the only module importing it): the session storm_py configures, committed reads, job output writes.

:func:`spark_session` builds (or reuses) the session for a master URL.  Without one it is a local Spark set up
for this machine: ``local[2]`` bound to loopback, no UI and no progress bars, the executors' Python is
``sys.executable``, a small driver heap, few shuffle partitions, a quick-starting JIT.  ``spark://HOST:PORT``
connects to a standalone cluster with the same Python and loopback-friendly driver settings.  The driver's log4j
configuration (:data:`LOG4J2_CONFIG`) prints warnings and errors on stderr without Spark's banner about its
default profile and without the native-hadoop notice, and the JVM's own start-up notice about incubator modules is
dropped from its stderr (:func:`is_jvm_noise`); everything else the JVM writes there still shows.

:func:`read_committed` reads ``_LATEST`` first, then scans the root with an explicit schema and keeps
``txid <= _LATEST``: Spark skips ``_staging``/``_commits``/``_compacted`` (names starting with ``_``), txids
above ``_LATEST`` are pruned by the partition filter before any of their files is opened, and rows of compacted
txids are read from their segments through the manifests.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from storm_py.errors import StormPyError
from storm_py.spark.layout import COMPACTED, TXID_COLUMN, DatasetLayout
from storm_py.spark.resolve import coerce_schema
from storm_py.spark.schema import Schema, SchemaError

LOCAL_MASTER = "local[2]"
SPARK_TYPES: dict[str, Any] = {
    "string": T.StringType(),
    "int64": T.LongType(),
    "float64": T.DoubleType(),
    "bool": T.BooleanType(),
    "timestamp": T.TimestampType(),
    "binary": T.BinaryType(),
}


#: the driver's log4j2 configuration (package data): warnings and errors to stderr, no start-up notices
LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")

#: what the JVM itself (not log4j) prints on every start, before any configuration can silence it
_JVM_NOISE = (b"WARNING: Using incubator modules:",)


def is_jvm_noise(line: bytes) -> bool:
    """Whether a line of the JVM's stderr is its start-up notice, shown on every run and saying nothing wrong."""
    return line.startswith(_JVM_NOISE)


def _forward(source: int, target: int) -> None:
    """Copy lines from ``source`` to ``target`` until ``source`` closes, dropping :func:`is_jvm_noise` lines."""
    with os.fdopen(source, "rb", buffering=0) as lines, contextlib.suppress(OSError):
        for line in iter(lines.readline, b""):
            if not is_jvm_noise(line):
                os.write(target, line)
    os.close(target)


@contextlib.contextmanager
def _jvm_stderr_filtered() -> Iterator[None]:
    """While the JVM starts, stderr (file descriptor 2, which the JVM inherits) is a pipe forwarded to the real
    stderr by a thread that drops :func:`is_jvm_noise` lines, for as long as the JVM writes to it."""
    try:
        sys.stderr.flush()
        real = os.dup(2)
    except (OSError, ValueError):  # no stderr to filter
        yield
        return
    read, write = os.pipe()
    os.dup2(write, 2)
    os.close(write)
    threading.Thread(target=_forward, args=(read, os.dup(real)), name="spark-jvm-stderr", daemon=True).start()
    try:
        yield
    finally:
        os.dup2(real, 2)
        os.close(real)


def session_conf(master: str | None) -> dict[str, str]:
    """The Spark settings storm_py uses for ``master`` (None: a local Spark on this machine)."""
    conf = {
        "spark.master": master or LOCAL_MASTER,
        "spark.app.name": "storm-py",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.memory": "1g",
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.extraJavaOptions": f"-XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile={LOG4J2_CONFIG}",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.sql.session.timeZone": "UTC",
        # read_committed hands Spark the manifests' file list: list it on the driver, not in a Spark job per read
        # (600 files: 0.5 s instead of 2.6 s)
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "10000",
        "spark.sql.warehouse.dir": os.path.join(tempfile.gettempdir(), f"storm-py-spark-warehouse-{os.getuid()}"),
    }
    if master and master.startswith("spark://"):
        conf["spark.executor.memory"] = "1g"
        conf["spark.cores.max"] = "2"
    return conf


#: Seconds :func:`spark_session` waits for a standalone master to accept a connection.
MASTER_CONNECT_TIMEOUT_SECS = 10.0


class SparkUnavailableError(StormPyError):
    """No Spark session can be had: the master does not answer, or Spark failed to start (the master is named)."""

    code = "spark_unavailable"


def master_addresses(master: str) -> list[tuple[str, int]]:
    """The ``(host, port)`` of each master of a ``spark://HOST:PORT[,HOST:PORT...]`` URL (port 7077 when left out);
    ``[]`` for other masters (``local[...]``, ``yarn``, ...)."""
    if not master.startswith("spark://"):
        return []
    out = []
    for part in master[len("spark://"):].split(","):
        host, sep, port = part.strip().rpartition(":")
        if not sep:
            host, port = port, "7077"
        if not host or not port.isdigit():
            raise SparkUnavailableError(f"Spark master {master!r} is not spark://HOST:PORT", master=master)
        out.append((host.strip("[]"), int(port)))
    return out


def check_master(master: str, timeout: float = MASTER_CONNECT_TIMEOUT_SECS) -> None:
    """Fail fast, naming the master, when no master of a ``spark://`` URL accepts a TCP connection within
    ``timeout`` seconds (Spark itself retries its registration for about a minute, then prints pages of traces)."""
    problems = []
    for host, port in master_addresses(master):
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as err:
            problems.append(f"{host}:{port}: {err.strerror or type(err).__name__}")
    if problems:
        raise SparkUnavailableError(
            f"cannot reach the Spark master {master} within {timeout:g}s ({'; '.join(problems)})", master=master)


def spark_session(master: str | None = None, extra: dict[str, str] | None = None,
                  connect_timeout: float = MASTER_CONNECT_TIMEOUT_SECS) -> SparkSession:
    """The process's session for ``master`` (an active session is reused whatever its master).

    Raises:
        SparkUnavailableError: a ``spark://`` master accepts no connection within ``connect_timeout`` seconds, or
            Spark failed to start (one line naming the master instead of the JVM's trace).
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if master:
        check_master(master, connect_timeout)
    builder = SparkSession.builder
    for key, value in {**session_conf(master), **(extra or {})}.items():
        builder = builder.config(key, value)
    try:
        with _jvm_stderr_filtered():
            spark = builder.getOrCreate()
    except Exception as err:  # py4j's and the JVM's errors: their first line says what failed
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SparkUnavailableError(f"Spark (master {master or LOCAL_MASTER}) failed to start: {first}",
                                    master=master or LOCAL_MASTER) from err
    spark.sparkContext.setLogLevel("WARN")
    return spark


def spark_schema(schema: Schema, with_txid: bool = True) -> T.StructType:
    """The Spark schema of committed rows (every field, then ``txid``)."""
    fields = [T.StructField(f.name, SPARK_TYPES[f.type], f.nullable) for f in schema.fields]
    if with_txid:
        fields.append(T.StructField(TXID_COLUMN, T.LongType(), False))
    return T.StructType(fields)


def read_committed(spark: SparkSession, root: str | os.PathLike[str], schema: Any = None,
                   first: int = 1, last: int | None = None) -> DataFrame:
    """A DataFrame of exactly the committed rows under ``root`` with txids in ``first..last`` (default all)."""
    layout = DatasetLayout(root)
    latest = layout.latest()
    upto = latest if last is None else min(last, latest)
    manifests = [layout.read_manifest(t) for t in range(max(first, 1), upto + 1)]
    if schema is None and not manifests:
        if latest == 0:
            raise SchemaError(f"nothing is committed under {root} yet: pass the schema to read an empty dataset")
        schema = Schema.from_dict(layout.read_manifest(latest).schema)  # nothing in range, the schema is known
    resolved = coerce_schema(schema) if schema is not None else Schema.from_dict(manifests[-1].schema)
    struct = spark_schema(resolved)
    compacted: dict[str, list[int]] = {}
    for m in manifests:
        if m.compacted:
            compacted.setdefault(m.compacted, []).append(m.txid)
    # exactly the files the manifests list: never a replaced attempt's or an uncommitted txid's files
    files = [str(layout.root / f.path) for m in manifests if not m.compacted for f in m.files]
    if files:
        df = spark.read.schema(struct).option("basePath", str(layout.root)).parquet(*files)
    else:
        df = spark.createDataFrame([], struct)
    for seg, txids in sorted(compacted.items()):
        part = spark.read.schema(struct).parquet(str(layout.root / COMPACTED / seg))
        df = df.unionByName(part.where(F.col(TXID_COLUMN).isin(txids)))
    return df.select(*[f.name for f in struct.fields])


def write_parquet(df: DataFrame, path: str) -> None:
    """Write a job's result as Parquet into a new directory."""
    df.write.mode("errorifexists").parquet(path)


def read_parquet(spark: SparkSession, paths: list[str]) -> DataFrame:
    """Read Parquet directories (a job's outputs)."""
    return spark.read.parquet(*paths)


def is_dataframe(value: Any) -> bool:
    """Whether a job returned a DataFrame."""
    return isinstance(value, DataFrame)
