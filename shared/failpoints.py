"""Failpoints: named places in a worker where a fault-injection test can kill it, as etcd's gofail
or TiKV's fail-rs do. Off unless `FLEETPLACE_FAILPOINT` is set; never set it in production.

    FLEETPLACE_FAILPOINT=queues.before-commit@3   # SIGKILL the process the 3rd time it gets there
    FLEETPLACE_FAILPOINT=scheduler.before-publish@1:stop   # SIGSTOP it there (a zombie to be)

The process kills itself with SIGKILL, so nothing after that point runs — no `finally`, no flush,
no group leave — exactly as if the kernel had killed it there. With `:stop` it stops itself with
SIGSTOP instead, once, and goes on from that very point when it gets SIGCONT, as a process paused
by a stalled VM would.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

ENV = "FLEETPLACE_FAILPOINT"


@dataclass
class Failpoint:
    name: str | None = None
    at: int = 1
    reached: int = 0
    stop: bool = False  # SIGSTOP (once) instead of SIGKILL

    @classmethod
    def from_env(cls) -> Failpoint:
        spec = os.environ.get(ENV, "").strip()
        if not spec:
            return cls()
        spec, _, action = spec.partition(":")
        if action not in ("", "stop"):
            raise ValueError(f"{ENV}: unknown action {action!r}: expected none (SIGKILL) or 'stop'")
        name, _, count = spec.partition("@")
        try:
            at = int(count) if count else 1
        except ValueError:
            raise ValueError(f"{ENV}={spec!r}: expected NAME or NAME@COUNT with COUNT an integer") from None
        if at < 1:
            raise ValueError(f"{ENV}={spec!r}: COUNT must be at least 1")
        return cls(name, at, stop=action == "stop")

    def reach(self, name: str) -> None:
        if name != self.name:
            return
        self.reached += 1
        if self.stop:
            if self.reached == self.at:
                os.kill(os.getpid(), signal.SIGSTOP)
        elif self.reached >= self.at:
            os.kill(os.getpid(), signal.SIGKILL)
