"""Process pools run in the calling process while a component is graded or tested.

A component may count or encode in a process pool (`multiprocessing.Pool`, or
`concurrent.futures.ProcessPoolExecutor`), as CS336 advises for pre-tokenization. While the
grader or a public snapshot test runs a component, every such pool is a SerialPool: the same
calls, each task run in turn in the calling process, where the recorder sees all of it. The
result is the same (a pool's map keeps the order of its inputs); only the time differs.
"""

import itertools
from concurrent.futures import Future
from contextlib import contextmanager


class _Done:
    """An apply_async / map_async result that is already there."""

    def __init__(self, fn, *args, **kwargs):
        self._future = SerialPool.submit(None, fn, *args, **kwargs)

    def get(self, timeout=None):
        return self._future.result()

    def wait(self, timeout=None) -> None:
        pass

    def ready(self) -> bool:
        return True

    def successful(self) -> bool:
        return self._future.exception() is None


class SerialPool:
    """multiprocessing.Pool's and ProcessPoolExecutor's calls, each task run here, in order."""

    def __init__(self, processes=None, initializer=None, initargs=(), *args, **kwargs):
        if initializer is not None:
            initializer(*initargs)

    def map(self, fn, *iterables, chunksize=None, timeout=None):
        return list(map(fn, *iterables))

    def starmap(self, fn, iterable, chunksize=None):
        return list(itertools.starmap(fn, iterable))

    def imap(self, fn, iterable, chunksize=1):
        return map(fn, iterable)

    imap_unordered = imap

    def apply(self, fn, args=(), kwds=None):
        return fn(*args, **(kwds or {}))

    def apply_async(self, fn, args=(), kwds=None, callback=None, error_callback=None):
        return _Done(fn, *args, **(kwds or {}))

    def map_async(self, fn, iterable, chunksize=None, callback=None, error_callback=None):
        return _Done(self.map, fn, iterable)

    def starmap_async(self, fn, iterable, chunksize=None, callback=None, error_callback=None):
        return _Done(self.starmap, fn, iterable)

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - the pool's caller sees it, as from a process
            future.set_exception(e)
        return future

    def close(self) -> None:
        pass

    join = terminate = close

    def shutdown(self, wait=True, *, cancel_futures=False) -> None:
        pass

    def __enter__(self) -> "SerialPool":
        return self

    def __exit__(self, *exc) -> None:
        pass


_active = [0]  # serial_pools() contexts open in this process


def _pool_new(cls, *args, **kwargs):
    """The pools' __new__, installed once: a SerialPool inside serial_pools(), else the pool itself."""
    if _active[0]:
        return SerialPool(*args, **kwargs)  # not an instance of cls: its own __init__ does not run
    return object.__new__(cls)


@contextmanager
def serial_pools():
    """While active, constructing a multiprocessing.pool.Pool (multiprocessing.Pool, a context's
    Pool) or a concurrent.futures.ProcessPoolExecutor gives a SerialPool. (The classes' __new__ is
    replaced once and for all and consults the flag: a __new__ assigned and deleted again would
    leave the class refusing its own arguments.)"""
    import concurrent.futures.process
    import multiprocessing.pool

    for cls in (multiprocessing.pool.Pool, concurrent.futures.process.ProcessPoolExecutor):
        if cls.__dict__.get("__new__") is not _pool_new:
            cls.__new__ = _pool_new
    _active[0] += 1
    try:
        yield
    finally:
        _active[0] -= 1
