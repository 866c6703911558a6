"""A Dask preload for the workers of a local cluster (cluster.local_farm): they ignore Ctrl-C.

The terminal sends Ctrl-C to every process of the command, the local workers included; the
command itself cancels the tasks and stops the cluster, so the workers need not print their own
tracebacks on the way down.
"""

from __future__ import annotations

import signal
import threading


def dask_setup(worker) -> None:  # noqa: ARG001 (Dask's preload hook)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
