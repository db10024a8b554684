"""The cost of a worker's receive-side defences between two workers, in instructions per spout tuple.

    python bench/frame_auth.py [--case word_count] [--ackers 1]      # needs valgrind

Runs ``bench/two_workers.py``'s two runtimes three ways: ``plain`` (frames decoded as before), ``checked`` (every
entry checked against its target task, :class:`~storm_py.runtime.transfer.frames.FrameTargets`, as a worker
process does) and ``sealed`` (checked, and every frame sealed by the sender and opened by the receiver exactly
as :class:`~storm_py.runtime.transfer.socket_transfer.SocketTransfer` does), each under
``valgrind --tool=cachegrind`` for two pass counts; the difference gives instructions per acked spout tuple
with the per-run start-up cost removed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))  # after PYTHONPATH: a compiled build there wins

from two_workers import TwoWorkers, cachegrind  # noqa: E402

from storm_py.clock import SimulatedClock  # noqa: E402
from storm_py.runtime.system_topology import ACKER_COMPONENT  # noqa: E402
from storm_py.runtime.transfer import Entries  # noqa: E402
from storm_py.runtime.transfer.auth import FrameAuth  # noqa: E402
from storm_py.runtime.transfer.frames import FrameDecoder, FrameTargets, encode_entries  # noqa: E402


class CheckedTwoWorkers(TwoWorkers):
    """Every entry checked against its target task on receipt."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.decoders = {
            w: FrameDecoder(rt.task_to_component, rt.component_streams,
                            FrameTargets.of(rt.topology.components(), rt.task_to_component, rt.worker_tasks,
                                            ACKER_COMPONENT))
            for w, rt in self.runtimes.items()
        }  # fmt: skip


class SealedTwoWorkers(CheckedTwoWorkers):
    """Checked, and every frame sealed on send and opened (tag checked) on receipt."""

    auth = FrameAuth(b"bench-frame-key-0123456789abcdef")

    def _sender(self, src: str) -> Any:
        def send(peer: str, entries: Entries) -> None:
            encoded = encode_entries(src, entries)
            assert encoded.frame is not None and not encoded.rejected
            frame = self.auth.seal(encoded.frame)
            self.bytes_sent += len(frame)
            self.frames[peer].append(frame)

        return send

    def run_passes(self, passes: int) -> None:
        now = self.clock.now
        for _ in range(passes):
            for w, rt in self.runtimes.items():
                frames = self.frames[w]
                decode = self.decoders[w].decode
                for frame in frames:
                    opened = self.auth.open(frame)
                    assert opened is not None
                    rt.deliver(decode(opened)[1])
                frames.clear()
                rt.run_once(now())


MODES = {"plain": TwoWorkers, "checked": CheckedTwoWorkers, "sealed": SealedTwoWorkers}


def _cachegrind(case: str, ackers: int, passes: int, mode: str) -> tuple[int, int]:
    return cachegrind(__file__, "--case", case, "--ackers", str(ackers), "--passes", str(passes), "--mode", mode)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", default="word_count")
    ap.add_argument("--ackers", type=int, default=1)
    ap.add_argument("--passes", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="plain", choices=sorted(MODES), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.passes:
        tw = MODES[args.mode](args.case, args.ackers, 2000, SimulatedClock())
        tw.run_passes(args.passes)
        print(f"acked {tw.acked()}")
        return
    out: dict[str, Any] = {}
    for mode in MODES:
        a1, i1 = _cachegrind(args.case, args.ackers, 60, mode)
        a2, i2 = _cachegrind(args.case, args.ackers, 160, mode)
        out[mode] = round((i2 - i1) / (a2 - a1))
    for mode in ("checked", "sealed"):
        out[f"{mode}_cost_percent"] = round(100 * (out[mode] - out["plain"]) / out["plain"], 2)
    print({"case": args.case, "ackers_per_worker": args.ackers, "instructions_per_spout_tuple": out})


if __name__ == "__main__":
    main()
