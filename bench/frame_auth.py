"""The cost of authenticated frames (keyed BLAKE2b tags) between two workers, in instructions per spout tuple.

    python bench/frame_auth.py [--case word_count] [--ackers 1]      # needs valgrind

Runs ``bench/two_workers.py``'s two runtimes with every frame sealed by the sender and opened by the receiver
exactly as :class:`~storm_py.runtime.transfer.socket_transfer.SocketTransfer` does, and without, each under
``valgrind --tool=cachegrind`` for two pass counts; the difference gives instructions per acked spout tuple
with the per-run start-up cost removed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from two_workers import TwoWorkers  # noqa: E402

from storm_py.clock import SimulatedClock  # noqa: E402
from storm_py.runtime.transfer import Entries  # noqa: E402
from storm_py.runtime.transfer.auth import FrameAuth  # noqa: E402
from storm_py.runtime.transfer.frames import encode_entries  # noqa: E402


class SealedTwoWorkers(TwoWorkers):
    """Every frame sealed on send and opened (tag checked) on receipt."""

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


def _cachegrind(case: str, ackers: int, passes: int, sealed: bool) -> tuple[int, int]:
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", sys.executable,
           str(Path(__file__).resolve()), "--case", case, "--ackers", str(ackers), "--passes", str(passes)]
    if sealed:
        cmd.append("--sealed")
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    acked = int(re.search(r"^acked (\d+)$", proc.stdout, re.M).group(1))  # type: ignore[union-attr]
    refs = int(re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr).group(1).replace(",", ""))  # type: ignore[union-attr]
    return acked, refs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", default="word_count")
    ap.add_argument("--ackers", type=int, default=1)
    ap.add_argument("--passes", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--sealed", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.passes:
        cls = SealedTwoWorkers if args.sealed else TwoWorkers
        tw = cls(args.case, args.ackers, 2000, SimulatedClock())
        tw.run_passes(args.passes)
        print(f"acked {tw.acked()}")
        return
    out = {}
    for sealed in (False, True):
        a1, i1 = _cachegrind(args.case, args.ackers, 60, sealed)
        a2, i2 = _cachegrind(args.case, args.ackers, 160, sealed)
        out["sealed" if sealed else "plain"] = round((i2 - i1) / (a2 - a1))
    out["cost_percent"] = round(100 * (out["sealed"] - out["plain"]) / out["plain"], 2)
    print({"case": args.case, "ackers_per_worker": args.ackers, "instructions_per_spout_tuple": out})


if __name__ == "__main__":
    main()
