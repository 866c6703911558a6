"""Reaching a Dask cluster: a scheduler the user names, or a local cluster of worker processes;
brushbake's version checked on every worker before any work.

A scheduler that does not answer within CONNECT_TIMEOUT_S is an error naming its address (no work
was sent); a worker whose brushbake differs from this one is refused, naming both versions (the
tasks check it again, for workers that join later: tasks.check_version).
"""

from __future__ import annotations

import logging
import re
from contextlib import contextmanager

from ..core.errors import BrushbakeError
from . import require_dask
from .tasks import local_version, worker_version

#: seconds to wait for the scheduler to answer
CONNECT_TIMEOUT_S = 5.0
#: seconds to wait for a first worker to join a scheduler that has none
WORKERS_TIMEOUT_S = 60.0

HOW_TO_START = "docs/FARM.md says how to start a scheduler ('dask scheduler') and workers ('dask worker ADDRESS')."


@contextmanager
def _quiet(level=logging.CRITICAL):
    """Dask logs a failed connection as well as raising it: the error we raise says it once."""
    logger = logging.getLogger("distributed")
    old = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(old)


class Farm:
    """A client on a cluster (and the local cluster, when we started it); use as a context manager."""

    def __init__(self, client, cluster=None, address: str = ""):
        self.client, self.cluster, self.address = client, cluster, address

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self) -> None:
        with _quiet():
            try:
                self.client.close()
            finally:
                if self.cluster is not None:
                    self.cluster.close()

    def workers(self) -> dict:
        """{address: {"host": ..., "threads": ...}} of the workers now connected."""
        info = self.client.scheduler_info().get("workers", {})
        return {addr: {"host": w.get("host", ""), "threads": w.get("nthreads", 0)} for addr, w in sorted(info.items())}


def open_farm(scheduler: str | None = None, workers: int | None = None) -> Farm:
    """Connect to `scheduler` (tcp://HOST:PORT), or start a local cluster of `workers` processes
    on the loopback; every worker's brushbake version checked (check_versions)."""
    require_dask()
    if scheduler:
        farm = Farm(connect(scheduler), None, scheduler)
    else:
        farm = local_farm(workers or 1)
    try:
        wait_for_workers(farm)
        check_versions(farm)
    except BaseException:
        farm.close()
        raise
    return farm


#: what --scheduler takes: [SCHEME://]HOST:PORT (HOST a name, an IPv4 address or [IPv6])
ADDRESS = re.compile(r"^(?:(tcp|tls|ws|wss)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):([0-9]{1,5})$")


def connect(address: str):
    """A Client on the scheduler at `address`, or a BrushbakeError naming it."""
    from distributed import Client

    if not ADDRESS.match(address) or not 0 < int(address.rsplit(":", 1)[1]) < 65536:
        raise BrushbakeError("is not a scheduler address.", subject=address,
                             hint="Give it as tcp://HOST:PORT, e.g. --scheduler tcp://10.0.0.5:8786.")
    try:
        with _quiet():
            return Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError) as err:
        raise BrushbakeError(f"no Dask scheduler answered there within {CONNECT_TIMEOUT_S:g} s ({err}); nothing was "
                             "baked.", subject=address,
                             hint=f"Check the host and the port (8786 unless the scheduler was given another). "
                                  f"{HOW_TO_START}") from None
    except (ValueError, TypeError) as err:
        raise BrushbakeError(f"is not a scheduler address ({err}).", subject=address,
                             hint="Give it as tcp://HOST:PORT, e.g. --scheduler tcp://10.0.0.5:8786.") from None


def local_farm(workers: int) -> Farm:
    """A local cluster of `workers` processes of one thread each, on the loopback only."""
    from distributed import Client, LocalCluster

    with _quiet(logging.ERROR):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None, silence_logs=logging.ERROR,
                               # its HTTP server (health, metrics) on the loopback too, not on every interface
                               scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                               preload=[f"{__package__}.quiet_worker"])
        client = Client(cluster, set_as_default=False)
    return Farm(client, cluster, cluster.scheduler_address)


def wait_for_workers(farm: Farm, timeout: float | None = None) -> None:
    """Wait for a first worker (a scheduler can be up before its workers)."""
    timeout = WORKERS_TIMEOUT_S if timeout is None else timeout
    try:
        farm.client.wait_for_workers(1, timeout=timeout)
    except TimeoutError:
        raise BrushbakeError(f"has no workers: none joined within {timeout:g} s; nothing was baked.",
                             subject=farm.address,
                             hint=f"Start workers with 'dask worker {farm.address}' on each machine. {HOW_TO_START}") from None


def check_versions(farm: Farm) -> dict:
    """{worker: version} of every connected worker; a BrushbakeError naming the worker and both
    versions where one runs another brushbake (its levels could differ from this one's)."""
    mine = local_version()
    try:
        found = farm.client.run(worker_version)
    except Exception as err:  # a worker without brushbake.farm cannot even answer
        raise BrushbakeError(f"a worker could not run brushbake's version check ({type(err).__name__}: {err}).",
                             subject=farm.address,
                             hint=f"Install brushbake {mine} with the [farm] extra on every worker.") from None
    for addr, theirs in sorted(found.items()):
        if theirs != mine:
            raise BrushbakeError(version_mismatch(addr, theirs, mine), subject=farm.address,
                                 hint=f"Install brushbake {mine} on that worker (pip install 'brushbake[farm]=={mine}'), "
                                      "or run this command with its version.")
    return found


def version_mismatch(worker: str, theirs: str, mine: str) -> str:
    return (f"worker {worker} runs brushbake {theirs}, but this is brushbake {mine}: every machine of a farm must run "
            "the same version, so refused and nothing was baked.")
