"""``storm-py spark-job MODULE:FUNCTION``: run a Spark job over a dataset's committed txids, exactly once."""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

import click

from storm_py.cli.options import FiniteFloatRange
from storm_py.clock import SYSTEM_CLOCK
from storm_py.errors import StormPyError


@click.command("spark-job")
@click.argument("entry", metavar="MODULE:FUNCTION")
@click.option("--input", "input_root", required=True, type=click.Path(exists=True, file_okay=False),
              help="Dataset root written by a ParquetBatchSink.")
@click.option("--output", "output", required=True, type=click.Path(file_okay=False),
              help="Directory the job's results go to (Parquet, one directory per step).")
@click.option("--follow", is_flag=True, help="Keep processing txids as they commit, until stopped.")
@click.option("--master", default=None, metavar="URL",
              help="Spark master (default: a local Spark on this machine; spark://HOST:PORT for standalone).")
@click.option("--connect-timeout", type=FiniteFloatRange(min=0.1), default=10.0, show_default=True,
              help="Seconds to wait for a spark:// master to accept a connection before giving up.")
@click.option("--poll", type=FiniteFloatRange(min=0.01), default=1.0, show_default=True,
              help="With --follow: seconds between looks for new txids.")
@click.option("--max-txids", type=click.IntRange(min=1), default=None,
              help="At most this many txids per step (default: all that are committed).")
@click.option("--show", is_flag=True, help="Without --follow: print the job's whole output when done.")
def spark_job(entry: str, input_root: str, output: str, follow: bool, master: str | None, connect_timeout: float,
              poll: float, max_txids: int | None, show: bool) -> None:
    """Run FUNCTION(spark, df) -> DataFrame over the committed rows of --input, writing --output.

    Once (the default), it processes every txid committed after the output's checkpoint (all of them for a new
    output directory); with --follow it goes on as txids commit.  Output and checkpoint are published
    together, so a killed and restarted job neither skips nor repeats a txid.
    """
    from storm_py.spark import jobs
    from storm_py.spark.session import spark_session

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        job = jobs.load_job(entry)
        spark = spark_session(master, connect_timeout=connect_timeout)
        if not follow:
            span = jobs.run_step(spark, job, input_root, output, max_txids)
            click.echo("nothing new to process" if span is None else f"processed txids {span[0]}..{span[1]}")
            if show and jobs.JobOutput(output).steps():
                for row in jobs.read_output(spark, output).collect():
                    click.echo(", ".join(f"{k}={v}" for k, v in row.asDict().items()))
            return
        stopping = threading.Event()

        def stop(signum: int, frame: FrameType | None) -> None:
            stopping.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        click.echo(f"following {input_root} into {output} (checkpoint: txid "
                   f"{jobs.JobOutput(output).done_through()})")
        while not stopping.is_set():
            span = jobs.run_step(spark, job, input_root, output, max_txids)
            if span is None:
                SYSTEM_CLOCK.sleep(poll)
            else:
                click.echo(f"processed txids {span[0]}..{span[1]}")
    except StormPyError as err:
        raise click.ClickException(err.message) from err
