"""Widget callbacks on the kernel's event loop.

ipykernel 7 may handle a widget's comm message (a click, a changed value) on a subshell thread that has an
event loop of its own, while the game or the agent's session awaits on the kernel's main loop. A future
resolved from that thread does not wake the main loop: the game froze after Submit until another cell ran.
``KernelLoop.call`` runs a callback on the loop the widget was made on: at once when already there (a test
driving the widget from Python, a cell), else through ``call_soon_threadsafe``, which wakes that loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


class KernelLoop:
    def __init__(self) -> None:
        try:
            self.loop = asyncio.get_running_loop()
        except RuntimeError:  # made outside a running loop (a plain script): the thread's loop
            self.loop = asyncio.get_event_loop_policy().get_event_loop()

    def here(self) -> bool:
        """True on the loop's own thread (or while the loop is not running at all)."""
        if not self.loop.is_running():
            return True
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        if self.here():
            fn(*args)
        else:
            self.loop.call_soon_threadsafe(fn, *args)

    def handler(self, fn: Callable[[], Any]) -> Callable[..., None]:
        """An ``on_click``/``observe`` handler that runs ``fn()`` on the loop (its argument is ignored)."""
        return lambda *_: self.call(fn)

    def resolve(self, future: asyncio.Future, value: Any) -> None:
        """Give ``future`` its result on its loop, once (a second click changes nothing)."""
        self.call(lambda: future.done() or future.set_result(value))
