"""The audit's forked processes: started with a pipe back and a shared counter, waited for.

Both kinds (a stretch of the walk, `parallel`; the early stretch, `early`) send ("ok", report)
or ("error", traceback) — the early one a message or two before — and count the diffs they
have checked in a shared integer for the progress bar. Fork only: the history is shared
copy-on-write, never pickled.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any


def fork(target: Callable[..., None], *args: Any) -> tuple[Any, Connection, Any]:
    """Run `target(*args, send, done)` in a forked process; returns the process, the receiving
    end of its pipe and `done`, a shared integer it counts in."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    done = ctx.Value("q", 0, lock=False)
    process = ctx.Process(target=target, args=(*args, send, done), daemon=True)
    process.start()
    send.close()  # the child's end: closed here, so a dead child reads as end of file
    return process, receive, done


def next_message(
    process: Any, receive: Connection, waiting: Callable[[], None] | None = None
) -> tuple[str, Any]:
    """The next (status, payload) the process sends, or ("error", why) if it died first;
    `waiting` is called every 0.2 s while nothing has come."""
    while not receive.poll(0.2):
        if waiting is not None:
            waiting()
        if not process.is_alive() and not receive.poll(0):
            return ("error", f"process {process.pid} died with exit code {process.exitcode}")
    status, payload = receive.recv()
    return status, payload
