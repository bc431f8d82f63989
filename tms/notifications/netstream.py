"""An httpcore network stream on plain asyncio streams, for the webhook client.

httpcore's default backend goes through anyio, whose per-call machinery (cancel scopes, typed
attributes, a socket poll for every idle-connection check) cost about as much CPU as the rest of
a delivery on loopback. The dispatcher shares the server's event loop with the API, so CPU spent
per delivery is latency added to requests while a backlog drains: this stream does the same job
with asyncio's own StreamReader/StreamWriter (which set TCP_NODELAY, like anyio).
"""

from __future__ import annotations

import asyncio
import ssl
import typing

import httpcore


class AsyncioStream(httpcore.AsyncNetworkStream):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        try:
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except TimeoutError:
            raise httpcore.ReadTimeout("read timed out") from None
        except OSError as exc:
            raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        if not buffer:
            return
        try:
            async with asyncio.timeout(timeout):
                self._writer.write(buffer)
                await self._writer.drain()
        except TimeoutError:
            raise httpcore.WriteTimeout("write timed out") from None
        except OSError as exc:
            raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        # no wait_closed(): a peer that never acknowledges must not hold up the caller
        self._writer.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError:
            await self.aclose()
            raise httpcore.ConnectTimeout("TLS handshake timed out") from None
        except (OSError, ssl.SSLError) as exc:
            await self.aclose()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return self

    def get_extra_info(self, info: str) -> typing.Any:
        if info == "ssl_object":
            return self._writer.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._writer.get_extra_info("sockname")
        if info == "server_addr":
            return self._writer.get_extra_info("peername")
        if info == "socket":
            return self._writer.get_extra_info("socket")
        if info == "is_readable":
            # asyncio reads eagerly: a peer's close or unexpected bytes already sit in the reader
            return self._reader.at_eof() or bool(getattr(self._reader, "_buffer", b""))
        return None


async def open_tcp(host: str, port: int, timeout: float | None) -> AsyncioStream:  # noqa: ASYNC109
    """Connects to ``host`` (an address that has been checked) and wraps it for httpcore."""
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
    except TimeoutError:
        raise httpcore.ConnectTimeout(f"connecting to {host} port {port} timed out") from None
    except OSError as exc:
        raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
    return AsyncioStream(reader, writer)

