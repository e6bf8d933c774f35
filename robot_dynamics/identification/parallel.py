"""Running independent tasks (one per bag) in this process, in local processes or on a Dask cluster.

The per-bag reductions are embarrassingly parallel: each bag's normal equations depend on that bag
only, and the caller sums them in bag order, so the result is the same (bit for bit) however the
bags are spread over workers. :func:`map_tasks` returns the results in task order:

* ``jobs=1`` (or a single task): in this process, one after another;
* ``jobs=N``: a :class:`concurrent.futures.ProcessPoolExecutor` with ``N`` processes (default: the
  CPU count), each limited to one BLAS thread and one thread per native batch
  (:func:`limit_worker_threads`);
* ``scheduler="tcp://host:8786"`` (or a ``distributed.Client``): an existing Dask distributed
  cluster, ``Client.map`` then ``gather`` (Dask is imported only here, only then); a warning is logged
  when the workers run with the nanny's ``MALLOC_TRIM_THRESHOLD_`` (:func:`_check_workers`).

The task function must be a module-level function and the tasks plain picklable values. A progress
bar over the tasks (:class:`robot_dynamics.bag.progress.Progress`) counts finished tasks.
"""

from __future__ import annotations

import ctypes
import logging
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from typing import Any, TypeVar

from robot_dynamics.bag.progress import Progress
from robot_dynamics.dynamics.native import set_batch_threads

from .parameters import IdentificationError

MALLOC_TRIM = "MALLOC_TRIM_THRESHOLD_"
T = TypeVar("T")
R = TypeVar("R")


def default_jobs() -> int:
    """The number of CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _openblas_libraries() -> list[ctypes.CDLL]:
    """The OpenBLAS builds loaded in this process (NumPy's and SciPy's wheels each bundle one)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line})
    except OSError:  # not Linux
        return []
    libraries = []
    for path in paths:
        try:
            libraries.append(ctypes.CDLL(path))
        except OSError:
            continue
    return libraries


def _blas_function(library: ctypes.CDLL, what: str) -> Any:
    for prefix in ("openblas", "scipy_openblas"):
        for suffix in ("", "64_"):
            function = getattr(library, f"{prefix}_{what}{suffix}", None)
            if function is not None:
                return function
    return None


def blas_threads() -> list[int]:
    """The thread count of each OpenBLAS loaded in this process."""
    functions = [_blas_function(library, "get_num_threads") for library in _openblas_libraries()]
    return [int(f()) for f in functions if f is not None]


def limit_blas_threads(count: int = 1) -> None:
    """Limits every OpenBLAS loaded in this process to ``count`` threads.

    The initializer of the worker processes: each worker serves one core, and BLAS threads on top
    oversubscribe the cores (measured: twice the CPU time per bag with two OpenBLAS threads on two
    cores). Environment variables cannot do this in a forked worker, whose BLAS is already loaded.
    """
    for library in _openblas_libraries():
        function = _blas_function(library, "set_num_threads")
        if function is not None:
            function(count)


def limit_worker_threads() -> None:
    """The initializer of the worker processes: one BLAS thread (:func:`limit_blas_threads`) and
    native batches on one thread (:func:`robot_dynamics.dynamics.native.set_batch_threads`)."""
    limit_blas_threads(1)
    set_batch_threads(1)


def map_tasks(
    func: Callable[[T], R],
    tasks: Sequence[T],
    *,
    jobs: int | None = None,
    scheduler: Any = None,
    progress: bool | None = None,
    label: str = "bags",
) -> list[R]:
    """``[func(task) for task in tasks]``, in parallel as described in the module docstring.

    ``progress``: draw a bar on stderr (``None``: only on a terminal). The first failing task's
    exception is raised (remaining local tasks are cancelled).
    """
    if jobs is not None and jobs < 1:
        raise IdentificationError(f"jobs must be >= 1, got {jobs}")
    with Progress(len(tasks), label, enabled=progress, min_total=2) as bar:
        if scheduler is not None:
            return _on_dask(func, tasks, scheduler, bar)
        workers = min(jobs or default_jobs(), len(tasks))
        if workers <= 1:
            results = []
            for task in tasks:
                results.append(func(task))
                bar.update()
            return results
        return _in_processes(func, tasks, workers, bar)


def _in_processes(func: Callable[[T], R], tasks: Sequence[T], workers: int, bar: Progress) -> list[R]:
    with ProcessPoolExecutor(max_workers=workers, initializer=limit_worker_threads) as pool:
        futures = [pool.submit(func, task) for task in tasks]
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            bar.update(len(done))
            failed = [f for f in done if f.exception() is not None]
            if failed:
                for f in pending:
                    f.cancel()
                raise _first(futures, failed)
        return [f.result() for f in futures]


def _first(futures: list[Any], failed: list[Any]) -> BaseException:
    """The exception of the earliest task (in task order) among the failed ones."""
    order = {id(f): k for k, f in enumerate(futures)}
    exc = min(failed, key=lambda f: order[id(f)]).exception()
    assert exc is not None
    return exc


def _check_workers(client: Any) -> None:
    """Logs a warning when Dask's nanny started the workers with ``MALLOC_TRIM_THRESHOLD_`` (its default):
    it also fixes glibc's mmap threshold at 128 kB, so every freed temporary array is returned to the
    system and page-faulted in again, and a reduction takes two to three times the CPU time."""
    trims = client.run(os.environ.get, MALLOC_TRIM)
    trimmed = sorted(address for address, value in trims.items() if value is not None)
    if trimmed:
        logging.getLogger(__name__).warning(
            "%d of %d Dask workers run with %s=%s (the nanny's default): each task takes about twice the CPU "
            "time. Start them with dask worker --no-nanny, or set distributed.nanny.pre-spawn-environ.%s "
            "to null in the Dask configuration",
            len(trimmed),
            len(trims),
            MALLOC_TRIM,
            trims[trimmed[0]],
            MALLOC_TRIM,
        )


def _on_dask(func: Callable[[T], R], tasks: Sequence[T], scheduler: Any, bar: Progress) -> list[R]:
    try:
        from distributed import Client, as_completed
    except ImportError:  # pragma: no cover - dask is a runtime requirement
        raise IdentificationError(
            "--scheduler needs Dask distributed (pip install dask distributed; see requirements/runtime.txt)"
        ) from None
    own = not isinstance(scheduler, Client)
    try:
        client = Client(scheduler, timeout=30) if own else scheduler
    except OSError as exc:
        raise IdentificationError(f"cannot connect to the Dask scheduler {scheduler!r}: {exc}") from None
    try:
        _check_workers(client)
        futures = client.map(func, list(tasks), pure=False)
        for _ in as_completed(futures):
            bar.update()
        results: list[R] = client.gather(futures)
        return results
    finally:
        if own:
            client.close()
