"""Cancelling a looping job at an exact loop turn, for the tests of how background jobs end."""

from __future__ import annotations

import asyncio


async def ends_when_cancelled(job: asyncio.Task[None], *, after_turns: int) -> bool:
    """Cancel `job` after `after_turns` turns of the event loop; True if that one cancel ended it
    within 2 s. A job that outlives it is cancelled again (and, past that, left to the loop's end)
    so that a failing test does not hang."""
    for _ in range(after_turns):
        await asyncio.sleep(0)
    job.cancel()
    done, _ = await asyncio.wait({job}, timeout=2.0)
    if not done:
        job.cancel()
        await asyncio.wait({job}, timeout=2.0)
        return False
    return job.cancelled()
