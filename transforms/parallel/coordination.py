"""The processes' key-value store and barriers: JAX's distributed runtime client
(``jax._src.distributed.global_state.client``), which checkpoint libraries use to agree
between processes from any thread (orbax's commit barriers, its signals between processes).

MPI collectives cannot serve this: they must be called by every process in the same order,
while these calls come from background threads at any time, and a blocking get must wait for
another process's set. So, as JAX's coordination service does, process 0 runs a small server
(a thread per connection) holding the store; every process, 0 included, is a client that
opens a connection per call. :func:`start` is collective (``functrans.distributed.initialize``
calls it): process 0 binds a port and broadcasts its address and a random token over MPI;
requests without the token are refused. Processes all on one host talk over the loopback
interface; otherwise the server listens on the host's address.

Messages are one JSON object per line. A timed-out wait raises ``JaxRuntimeError`` worded as
JAX's (``DEADLINE_EXCEEDED: ...``), which libraries match on.

    >>> server = Server(b"tok", n_processes=1)
    >>> client = Client(server.address, b"tok", process_id=0)
    >>> client.key_value_set("a/x", "1"); client.key_value_dir_get("a/")
    [('a/x', '1')]
    >>> server.stop()
"""
from __future__ import annotations

import base64
import json
import secrets
import socket
import socketserver
import threading
import time

from functrans.core.errors import JaxRuntimeError

__all__ = ["Client", "Server", "start", "stop", "client"]


class _Store:
    """The server's state: values, barriers in progress, and the condition they wait on."""

    def __init__(self, n_processes: int):
        self.n = n_processes
        self.values: dict[str, str] = {}
        self.barriers: dict[str, dict] = {}  # id -> {"arrived": set, "round": int}
        self.rounds: dict[str, int] = {}  # id -> rounds completed
        self.cond = threading.Condition()

    def wait_for(self, ready, timeout_s: float, what: str):
        deadline = time.monotonic() + timeout_s
        while not ready():
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(what)
            self.cond.wait(left)

    def handle(self, req: dict):
        op, key = req["op"], req.get("key", "")
        with self.cond:
            if op == "set":
                if key in self.values and not req.get("overwrite"):
                    raise KeyError(f"ALREADY_EXISTS: key {key!r} is set already")
                self.values[key] = req["value"]
                self.cond.notify_all()
                return None
            if op == "get":
                self.wait_for(lambda: key in self.values, req["timeout_ms"] / 1000,
                              f"DEADLINE_EXCEEDED: key {key!r} was not set within "
                              f"{req['timeout_ms']} ms")
                return self.values[key]
            if op == "try_get":
                if key not in self.values:
                    raise KeyError(f"NOT_FOUND: key {key!r} is not set")
                return self.values[key]
            if op == "dir_get":
                prefix = key if key.endswith("/") else key + "/"
                return sorted([k, v] for k, v in self.values.items() if k.startswith(prefix))
            if op == "delete":
                prefix = key if key.endswith("/") else key + "/"
                for k in [k for k in self.values if k == key or k.startswith(prefix)]:
                    del self.values[k]
                return None
            if op == "increment":
                value = int(self.values.get(key, "0")) + int(req["amount"])
                self.values[key] = str(value)
                self.cond.notify_all()
                return value
            if op == "barrier":
                return self._barrier(key, req)
        raise ValueError(f"unknown request {op!r}")

    def _barrier(self, key: str, req: dict):
        expected = set(req["processes"]) if req.get("processes") else set(range(self.n))
        state = self.barriers.setdefault(key, {"arrived": set(), "expected": expected})
        if state["expected"] != expected:
            raise ValueError(f"INVALID_ARGUMENT: barrier {key!r} awaited by processes "
                             f"{sorted(expected)} and {sorted(state['expected'])}")
        done = self.rounds.get(key, 0)
        state["arrived"].add(req["process"])
        if state["arrived"] >= expected:
            self.rounds[key] = done + 1  # passed: the id may be used again
            del self.barriers[key]
            self.cond.notify_all()
            return None
        try:
            self.wait_for(lambda: self.rounds.get(key, 0) > done, req["timeout_ms"] / 1000,
                          f"DEADLINE_EXCEEDED: Barrier timed out. Id: {key}; processes "
                          f"arrived: {sorted(state['arrived'])} of {sorted(expected)}")
        except TimeoutError:
            state["arrived"].discard(req["process"])
            raise
        return None


class _Handler(socketserver.StreamRequestHandler):
    def handle(self):
        server = self.server
        try:
            req = json.loads(self.rfile.readline())
            if not secrets.compare_digest(str(req.get("token", "")), server.token):
                reply = {"error": "PERMISSION_DENIED: wrong token"}
            else:
                reply = {"value": server.store.handle(req)}
        except TimeoutError as e:
            reply = {"error": str(e)}
        except (KeyError, ValueError) as e:
            reply = {"error": e.args[0] if e.args else repr(e)}
        self.wfile.write(json.dumps(reply).encode() + b"\n")


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # every thread of every process may connect at once


class Server:
    """The store, served on ``host`` (loopback by default) at an ephemeral port, from a
    daemon thread; ``address`` is ``(host, port)``."""

    def __init__(self, token: bytes, n_processes: int, host: str = "127.0.0.1"):
        self._server = _TCPServer((host, 0), _Handler)
        self._server.token = token.hex() if isinstance(token, bytes) else token
        self._server.store = _Store(n_processes)
        self.address = self._server.server_address[:2]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="functrans-coordination", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Client:
    """JAX's ``DistributedRuntimeClient`` calls on the store at ``address``. Values are
    strings (the ``_bytes`` variants carry bytes); timeouts are in milliseconds, as JAX's."""

    def __init__(self, address, token: bytes, process_id: int):
        self.address = tuple(address)
        self._token = token.hex() if isinstance(token, bytes) else token
        self.process_id = process_id

    def _call(self, op: str, timeout_ms: float | None = None, **fields):
        req = dict(fields, op=op, token=self._token, process=self.process_id)
        if timeout_ms is not None:
            req["timeout_ms"] = int(timeout_ms)
        wait_s = None if timeout_ms is None else timeout_ms / 1000 + 30
        try:
            with socket.create_connection(self.address, timeout=wait_s or 300) as conn:
                conn.sendall(json.dumps(req).encode() + b"\n")
                reply = json.loads(conn.makefile("rb").readline() or b'{"error": "no reply"}')
        except OSError as e:  # process 0 (which serves the store) has ended, or the network
            raise JaxRuntimeError(
                f"UNAVAILABLE: the processes' key-value store at {self.address[0]}:"
                f"{self.address[1]} (served by process 0) cannot be reached: {e}") from None
        if "error" in reply:
            raise JaxRuntimeError(reply["error"])
        return reply["value"]

    def key_value_set(self, key: str, value: str, allow_overwrite: bool = False) -> None:
        """Store ``value`` at ``key`` (an existing key raises unless ``allow_overwrite``)."""
        self._call("set", key=key, value=str(value), overwrite=allow_overwrite)

    def key_value_set_bytes(self, key: str, value: bytes, allow_overwrite: bool = False):
        self.key_value_set(key, base64.b64encode(bytes(value)).decode(), allow_overwrite)

    def blocking_key_value_get(self, key: str, timeout_in_ms: int) -> str:
        """The value at ``key``, waiting up to ``timeout_in_ms`` for a process to set it."""
        return self._call("get", timeout_in_ms, key=key)

    def blocking_key_value_get_bytes(self, key: str, timeout_in_ms: int) -> bytes:
        return base64.b64decode(self.blocking_key_value_get(key, timeout_in_ms))

    def key_value_try_get(self, key: str) -> str:
        """The value at ``key``; raises at once if it is not set."""
        return self._call("try_get", key=key)

    def key_value_try_get_bytes(self, key: str) -> bytes:
        return base64.b64decode(self.key_value_try_get(key))

    def key_value_dir_get(self, key: str) -> list:
        """``(key, value)`` pairs of the keys under the directory ``key``."""
        return [tuple(kv) for kv in self._call("dir_get", key=key)]

    def key_value_dir_get_bytes(self, key: str) -> list:
        return [(k, base64.b64decode(v)) for k, v in self.key_value_dir_get(key)]

    def key_value_delete(self, key: str) -> None:
        """Remove ``key`` and every key under it as a directory."""
        self._call("delete", key=key)

    def key_value_increment(self, key: str, increment: int) -> int:
        """Add ``increment`` to the integer at ``key`` (0 if unset); the new value."""
        return self._call("increment", key=key, amount=int(increment))

    def wait_at_barrier(self, barrier_id: str, timeout_in_ms: int, process_ids=None) -> None:
        """Wait until every process (or each of ``process_ids``) reaches ``barrier_id``;
        raises ``JaxRuntimeError`` (``DEADLINE_EXCEEDED``) after ``timeout_in_ms``."""
        self._call("barrier", timeout_in_ms, key=barrier_id,
                   processes=None if process_ids is None else [int(p) for p in process_ids])

    def shutdown(self) -> None:
        """Nothing to release: each call has its own connection."""


class _State:
    server: Server | None = None
    client: Client | None = None


_state = _State()


def start(comm) -> Client:
    """Start the store on process 0 of ``comm`` and a client in every process (collective:
    every process of ``comm`` calls it)."""
    stop()
    rank, hosts = comm.Get_rank(), comm.allgather(socket.gethostname())
    address = token = None
    if rank == 0:
        one_host = len(set(hosts)) == 1
        token = secrets.token_bytes(16)
        _state.server = Server(token, comm.Get_size(),
                               host="127.0.0.1" if one_host else "0.0.0.0")
        port = _state.server.address[1]
        address = ("127.0.0.1" if one_host else _host_address(hosts[0]), port)
    address, token = comm.bcast((address, token), root=0)
    _state.client = Client(address, token, rank)
    return _state.client


def _host_address(hostname: str) -> str:
    # An unresolvable name is passed on as it is: only a use of the store then fails (a
    # program that never uses it must still start).
    try:
        return socket.gethostbyname(hostname)
    except OSError:
        return hostname


def stop() -> None:
    """Forget the client and stop the server (``functrans.distributed.shutdown``)."""
    if _state.server is not None:
        _state.server.stop()
    _state.server = _state.client = None


def client() -> Client | None:
    """This process's client, or None outside a multi-process run."""
    return _state.client
