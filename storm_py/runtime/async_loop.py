"""This module owns the event loop of an async bolt's executor: :class:`AsyncLoop`, one asyncio loop (uvloop's when
uvloop is importable) run by a thread of its own, and the calls other threads make into it."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import threading
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Final, TypeVar

try:  # imported by name, so that a build without the async extra type-checks the same
    _UVLOOP: ModuleType | None = importlib.import_module("uvloop")
except ImportError:  # the async extra is not installed: asyncio's own loop
    _UVLOOP = None

T = TypeVar("T")

#: how long a rollback or a shutdown waits for cancelled executions to unwind (seconds)
CANCEL_WAIT_SECS: Final = 5.0


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop when uvloop is importable, else asyncio's."""
    if _UVLOOP is not None:
        loop: asyncio.AbstractEventLoop = _UVLOOP.new_event_loop()
        return loop
    return asyncio.new_event_loop()


class AsyncLoop:
    """One executor's event loop, run by a thread of its own."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.loop = new_event_loop()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread_id: int | None = None

    def _run(self) -> None:
        self.thread_id = threading.get_ident()
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    def start(self) -> None:
        """Start the loop's thread."""
        self.thread.start()

    def run(self, make: Callable[[], Awaitable[T] | T], timeout: float | None = None) -> T:
        """Call ``make`` on the loop's thread and await what it returns when that is awaitable; block until done
        and return the result (or raise what it raised)."""

        async def call() -> T:
            result = make()
            if inspect.isawaitable(result):
                return await result
            return result

        return asyncio.run_coroutine_threadsafe(call(), self.loop).result(timeout)

    def post(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` on the loop's thread soon (from any thread)."""
        self.loop.call_soon_threadsafe(fn)

    def stop(self, timeout: float = CANCEL_WAIT_SECS) -> None:
        """Stop the loop and wait for its thread."""
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout)
