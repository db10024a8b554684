"""A worker's own profiling actions: dump names, stack dumps, sampled CPU profiles, memory reports, and the agent
that runs the requests its supervisor leaves."""

from __future__ import annotations

import json
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest

from storm_py.clock import Clock, wait_until
from storm_py.worker.profiling import (
    REQUESTS_DIR,
    ProfilingAgent,
    Request,
    StackSamples,
    dump_info,
    dump_name,
    is_dump,
    memory_report,
    object_types,
    sample_cpu,
    stack_dump,
)


def test_dump_names_say_action_and_time_and_nothing_else_passes() -> None:
    name = dump_name("cpu", 1_700_000_000_123, "svg")
    assert name == "profile-cpu-1700000000123.svg"
    assert is_dump(name) and dump_info(name) == ("cpu", 1_700_000_000_123)
    for bad in ("worker.log", "profile-cpu-1.svg", "profile-disk-1700000000123.txt", "profile-cpu-1700000000123.sh",
                "../profile-cpu-1700000000123.svg", ".profile-cpu-1700000000123.svg.part"):
        assert not is_dump(bad) and dump_info(bad) is None


def parked_here(release: threading.Event) -> None:
    release.wait(30)


def spinning_here(stop: threading.Event) -> None:
    while not stop.is_set():
        sum(range(200))


def test_stack_dump_shows_every_thread_with_its_name_and_calls() -> None:
    release = threading.Event()
    thread = threading.Thread(target=parked_here, args=(release,), name="parked-thread")
    thread.start()
    try:
        wait_until(lambda: "parked_here" in stack_dump(sys._current_frames(), {}, 1, 0.0), 10, what="the thread")
        names = {t.ident: t.name for t in threading.enumerate() if t.ident is not None}
        text = stack_dump(sys._current_frames(), names, 4242, 1_700_000_000.0)
    finally:
        release.set()
        thread.join()
    assert text.startswith("Process 4242: stack dump at 2023-11-14T22:13:20.000+00:00")
    block = text.split(f"Thread {thread.ident} (parked-thread)\n", 1)[1].split("\n\n", 1)[0]
    lines = block.splitlines()
    assert "wait" in lines[0]  # innermost call first
    assert any(line.strip().startswith("parked_here (") and __file__ in line for line in lines)
    assert f"Thread {threading.get_ident()} (MainThread)" in text


def test_samples_fold_and_become_a_speedscope_profile() -> None:
    samples = StackSamples()
    samples.add([["main", "work", "hash"], ["main", "idle"]])
    samples.add([["main", "work", "hash"], []])
    assert samples.samples == 2
    assert samples.folded() == "main;idle 1\nmain;work;hash 2\n"
    doc = samples.speedscope("pid 1", 0.01)
    frames = [f["name"] for f in doc["shared"]["frames"]]
    [profile] = doc["profiles"]
    assert [[frames[i] for i in s] for s in profile["samples"]] == [["main", "idle"], ["main", "work", "hash"]]
    assert profile["weights"] == [0.01, 0.02] and profile["endValue"] == pytest.approx(0.03)
    assert profile["type"] == "sampled" and doc["$schema"].startswith("https://www.speedscope.app/")


def test_sampling_finds_where_a_busy_thread_spends_its_time() -> None:
    stop = threading.Event()
    busy = threading.Thread(target=spinning_here, args=(stop,), name="busy")
    busy.start()
    try:
        samples = sample_cpu(0.5, Clock(), threading.Event(), hz=200)
    finally:
        stop.set()
        busy.join()
    assert samples.samples >= 10
    hot = sum(n for stack, n in samples.counts.items() if any(f.startswith("spinning_here (") for f in stack))
    assert hot >= samples.samples // 2


def allocate_lots() -> list[bytes]:
    return [bytes(1000) for _ in range(2000)]


def test_memory_report_names_the_line_that_allocated_most() -> None:
    tracemalloc.start()
    try:
        kept = allocate_lots()
        snapshot = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    text = memory_report(snapshot, object_types(), 5, 1_700_000_000.0)
    top = text.split("Top 50 lines by size:\n", 1)[1].splitlines()[0]
    assert f"{__file__}:{allocate_lots.__code__.co_firstlineno + 1}" in top and "KiB" in top
    assert "allocated while tracing for 5 s" in text and "object types" in text and len(kept) == 2000


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ([], "JSON object"),
        ({"action": "disk", "file": "profile-disk-1700000000123.txt"}, "action"),
        ({"action": "cpu", "seconds": -1, "file": "profile-cpu-1700000000123.json"}, "seconds"),
        ({"action": "cpu", "seconds": True, "file": "profile-cpu-1700000000123.json"}, "seconds"),
        ({"action": "cpu", "seconds": 1, "file": "../../etc/passwd"}, "file"),
        ({"action": "cpu", "seconds": 1, "file": "profile-stack-1700000000123.txt"}, "file"),
    ],
)
def test_a_malformed_request_is_refused_naming_the_field(body, words) -> None:
    with pytest.raises(ValueError, match=words):
        Request.from_json(body)


def test_the_agent_runs_requests_and_skips_malformed_ones(tmp_path: Path) -> None:
    agent = ProfilingAgent(tmp_path, Clock(), 0.05)
    requests = tmp_path / REQUESTS_DIR
    requests.mkdir()
    stack = Request("stack", 0, "profile-stack-1700000000001.txt")
    cpu = Request("cpu", 0.2, "profile-cpu-1700000000002.json")
    memory = Request("memory", 0, "profile-memory-1700000000003.txt")
    for r in (stack, cpu, memory):
        (requests / f"{r.file}.json").write_text(json.dumps(r.to_json()), encoding="utf-8")
    (requests / "bad.json").write_text("{not json", encoding="utf-8")
    for thread in agent.poll():
        thread.join(30)
    assert sorted(p.name for p in requests.iterdir()) == []  # every request taken, the bad one dropped
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == sorted(r.file for r in (stack, cpu, memory))
    assert "Thread " in (tmp_path / stack.file).read_text(encoding="utf-8")
    assert json.loads((tmp_path / cpu.file).read_text(encoding="utf-8"))["profiles"][0]["type"] == "sampled"
    assert (tmp_path / memory.file).read_text(encoding="utf-8").startswith("Memory snapshot at ")
    assert agent.poll() == []


def test_the_agent_thread_polls_until_stopped(tmp_path: Path) -> None:
    agent = ProfilingAgent(tmp_path, Clock(), 0.05)
    agent.start()
    try:
        r = Request("stack", 0, "profile-stack-1700000000001.txt")
        (tmp_path / REQUESTS_DIR).mkdir()
        (tmp_path / REQUESTS_DIR / "r.json").write_text(json.dumps(r.to_json()), encoding="utf-8")
        wait_until(lambda: (tmp_path / r.file).exists(), 20, what="the stack dump")
    finally:
        agent.stop()
    assert agent._thread is not None and not agent._thread.is_alive()


def test_a_request_the_worker_cannot_remove_is_not_run(tmp_path: Path, monkeypatch) -> None:
    """A worker running as another user than its supervisor may be unable to delete a request: run it never,
    rather than at every poll."""
    agent = ProfilingAgent(tmp_path, Clock(), 0.05)
    (tmp_path / REQUESTS_DIR).mkdir()
    r = Request("stack", 0, "profile-stack-1700000000001.txt")
    (tmp_path / REQUESTS_DIR / "r.json").write_text(json.dumps(r.to_json()), encoding="utf-8")

    def refuse(self: Path, missing_ok: bool = False) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "unlink", refuse)
    assert agent.poll() == [] and agent.poll() == []
    assert not (tmp_path / r.file).exists()
