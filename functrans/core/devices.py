"""Devices and backends: what a program runs on.

A *backend* (``"cpu"`` today) compiles jaxprs and owns a list of devices. CPU devices are
logical: each runs its shard of a ``pmap``/``shard_map`` on its own thread, in parallel (the
compiled kernels release the GIL). Their number is a run-time setting, one per core unless
``FUNCTRANS_NUM_CPU_DEVICES`` or ``config.update("num_cpu_devices", n)`` says otherwise::

    >>> from functrans.core.config import config
    >>> with config.override(num_cpu_devices=2):
    ...     devices()
    [CpuDevice(id=0), CpuDevice(id=1)]

Under ``functrans.distributed.initialize()`` (MPI) the devices of every process form one global
list: ``devices()`` spans the processes, ``local_devices()`` is this process's part.
"""
from __future__ import annotations

from .config import config


class Device:
    """One device: ``platform`` ("cpu"), a global ``id``, and the ``process_index`` owning it."""

    __slots__ = ("platform", "id", "process_index", "local_index")

    def __init__(self, platform: str, id: int, process_index: int = 0, local_index: int = 0):
        self.platform, self.id = platform, id
        self.process_index, self.local_index = process_index, local_index

    @property
    def device_kind(self) -> str:
        return self.platform

    def addressable_memories(self) -> list:
        """The memories this device addresses: one, the host's (kind ``"device"``, as the
        memory kind of every functrans sharding; CPU devices have no pinned host memory)."""
        return [Memory(self, "device")]

    def default_memory(self) -> "Memory":
        return Memory(self, "device")

    @property
    def client(self) -> "Backend":
        """The backend running this device (JAX's ``Device.client``: libraries ask it which
        runtime they are on, ``device.client.runtime_type``)."""
        return get_backend(self.platform)

    def __repr__(self):
        return f"{self.platform.capitalize()}Device(id={self.id})"

    def __str__(self):
        # JAX's short name (checkpoints record a device by it: orbax's "cpu:0").
        return f"{self.platform}:{self.id}"

    def __eq__(self, other):
        return (type(other) is Device and self.platform == other.platform
                and self.id == other.id)

    def __hash__(self):
        return hash((self.platform, self.id))


class Memory:
    """A memory a device addresses (JAX's ``Device.addressable_memories()``): its ``kind``."""

    __slots__ = ("device", "kind")

    def __init__(self, device: Device, kind: str):
        self.device, self.kind = device, kind

    @property
    def process_index(self) -> int:
        return self.device.process_index

    def addressable_by_devices(self) -> list:
        return [self.device]

    def __eq__(self, other):
        return type(other) is Memory and (other.device, other.kind) == (self.device, self.kind)

    def __hash__(self):
        return hash((self.device, self.kind))

    def __repr__(self):
        return (f"{self.device.platform.capitalize()}DeviceMemory(id={self.device.id}, "
                f"kind={self.kind})")


class _Processes:
    """This process's place among the processes of a distributed run (set by initialize())."""

    index = 0
    count = 1
    local_device_counts: tuple = ()  # per process, under MPI
    communicator = None  # an mpi4py communicator once initialized


processes = _Processes()


before_first_use: list = []
"""Callables run once, just before the CPU devices are first made (``functrans.as_jax`` reads
JAX's ``XLA_FLAGS`` device count there, as JAX reads it when its backend starts)."""


def initialized() -> bool:
    """Whether the CPU devices have been made (a device was asked for, or a program ran)."""
    return "key" in _cache


def _cpu_devices() -> list:
    while before_first_use and not initialized():
        before_first_use.pop(0)()
    n_local = int(config.num_cpu_devices)
    counts = processes.local_device_counts if processes.count > 1 else (n_local,)
    key = (counts, processes.index)
    if _cache.get("key") != key:
        devs, gid = [], 0
        for p, n in enumerate(counts):
            devs += [Device("cpu", gid + i, p, i) for i in range(n)]
            gid += n
        _cache["key"], _cache["devices"] = key, devs
    return _cache["devices"]


_cache: dict = {}


def forget_devices() -> None:
    """Forget the CPU devices made so far (``jax.extend.backend.clear_backends``): the next
    use makes them again from the current settings, as if for the first time."""
    _cache.clear()


class Backend:
    """What a backend provides: its devices and a compiler from jaxprs to executables
    (callables on concrete arrays). The CPU backend (Numba kernels) registers itself when
    ``functrans.transforms.jit`` is imported; a GPU backend plugs in the same way."""

    platform = "?"
    runtime_type = "functrans"
    """The runtime, as JAX's clients name theirs (``"pjrt_ifrt"``, ``"pathways"``, ...):
    libraries take runtime-specific paths (Pathways) only for theirs."""

    def devices(self) -> list:
        raise NotImplementedError

    def compile(self, jaxpr, name: str):
        raise NotImplementedError

    # JAX's Client's queries (jax.extend.backend.get_backend() returns a backend)
    def device_count(self) -> int:
        """Number of its devices, across all processes."""
        return len(self.devices())

    def local_devices(self) -> list:
        """Its devices owned by this process."""
        return [d for d in self.devices() if d.process_index == processes.index]

    def local_device_count(self) -> int:
        return len(self.local_devices())

    def process_index(self) -> int:
        return processes.index


_BACKENDS: dict = {}


def register_backend(backend: Backend) -> None:
    """Make ``backend`` available under its ``platform`` name."""
    _BACKENDS[backend.platform] = backend


def get_backend(backend=None) -> Backend:
    """The backend called ``backend`` (the default one for None)."""
    return _BACKENDS[check_backend(backend)]


def cpu_devices() -> list:
    """The CPU devices of every process."""
    return _cpu_devices()


def available_backends() -> list:
    """Names of the backends that can run programs here."""
    return sorted(n for n, b in _BACKENDS.items() if not _why_unavailable(b))


def _why_unavailable(backend):
    probe = getattr(backend, "unavailable_reason", None)
    return probe() if probe else None


def check_backend(backend) -> str:
    """The backend's name (the default one for None); a clear error for unknown names and
    for backends this machine cannot run."""
    name = config.default_backend if backend is None else getattr(backend, "platform", backend)
    if name not in _BACKENDS:
        raise RuntimeError(f"Unknown backend {name!r}; the available backends are "
                           f"{available_backends()}")
    why = _why_unavailable(_BACKENDS[name])
    if why:
        raise RuntimeError(f"the {name} backend is not available here: {why}; the available "
                           f"backends are {available_backends()}")
    return name


def devices(backend=None) -> list:
    """Every device of ``backend`` (default: cpu), across all processes.

    >>> len(devices()) == device_count()
    True
    """
    return list(get_backend(backend).devices())


def local_devices(process_index=None, backend=None) -> list:
    """The devices owned by this process (or by ``process_index``).

    >>> local_devices()[0].process_index
    0
    """
    p = processes.index if process_index is None else process_index
    return [d for d in devices(backend) if d.process_index == p]


def device_count(backend=None) -> int:
    """Number of devices across all processes."""
    return len(devices(backend))


def local_device_count(backend=None) -> int:
    """Number of devices of this process."""
    return len(local_devices(backend=backend))


def process_index() -> int:
    """This process's index in a distributed run (0 without MPI)."""
    return processes.index


def process_count() -> int:
    """Number of processes in a distributed run (1 without MPI)."""
    return processes.count


def default_backend() -> str:
    """The backend programs run on unless told otherwise (``config.default_backend``)."""
    return config.default_backend


def default_device() -> Device:
    return local_devices(backend="cpu")[0]
