"""Close a connection as soon as its client has gone.

Hypercorn (0.18) keeps each connection's idle timer (`keep_alive_timeout`, 75 s here) in the
connection's task group, and the socket is closed only when that group has finished. When a
client closed an idle keep-alive connection, reading stopped but the timer ran on, so the
server's socket sat in CLOSE-WAIT for up to 75 s: a burst of 80 clients left about 200 of
them (issue 30), each holding a file descriptor. Once reading has stopped (end of stream, a
read error) nothing is left for the timer to guard, so it is stopped there and the
connection closes at once. A request still being answered is not affected: the timer only
runs while the connection is idle, and an answer in progress closes the connection itself
when it is done, since the client's side is already closed.
"""

from __future__ import annotations

from hypercorn.asyncio.tcp_server import TCPServer

_read_data = TCPServer._read_data


async def _read_then_stop_idle_timer(self: TCPServer) -> None:
    try:
        await _read_data(self)
    finally:
        await self.idle_task.stop()


def close_when_the_client_leaves() -> None:
    """Install the change (in each worker process, before it serves)."""
    if TCPServer._read_data is _read_data:
        TCPServer._read_data = _read_then_stop_idle_timer  # type: ignore[method-assign]
