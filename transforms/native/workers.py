"""Compiling many modules on two cores: the calling thread and a worker process take jobs
from one queue.

llvmlite runs every LLVM call of a process behind one lock, so a second compiling thread
gains nothing; a worker process (:mod:`.llvm_compile` run as a script: it imports only
llvmlite, and starts in about a tenth of a second) does. It is started the first time a
program has ``MIN_JOBS`` modules to compile and kept for the process's life; if it cannot
be started, or dies, its jobs are compiled here.

    >>> objs = compile_many([("define i32 @ft_w1() {\\n  ret i32 1\\n}\\n", {}, 2, True)],
    ...                     lambda job: b"local")
    >>> objs
    [b'local']
"""
from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading

from . import llvm_compile

__all__ = ["compile_many", "MIN_JOBS"]

MIN_JOBS = 4
_lock = threading.Lock()
_worker = None
_failed = False


class _Worker:
    def __init__(self, cpu, features):
        self.proc = subprocess.Popen(
            [sys.executable, "-I", llvm_compile.__file__], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        llvm_compile._write(self.proc.stdin, (cpu, features))
        self.busy = threading.Lock()

    def compile(self, job) -> bytes:
        with self.busy:
            llvm_compile._write(self.proc.stdin, job)
            reply = llvm_compile._read(self.proc.stdout)
        if reply is None:
            raise OSError("the compile worker exited")
        status, payload = reply
        if status != "ok":
            raise RuntimeError(payload)
        return payload

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except Exception:
            self.proc.kill()
        finally:
            self.proc.stdout.close()


def _get_worker(cpu, features):
    global _worker, _failed
    with _lock:
        if _worker is None and not _failed:
            try:
                _worker = _Worker(cpu, features)
                atexit.register(_worker.close)
            except OSError:
                _failed = True
        return _worker


def _forget_after_fork() -> None:
    """A forked child shares its parent's pipes to the worker: it starts its own."""
    global _worker, _lock
    _worker, _lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


def compile_many(jobs, compile_here, cpu=None, features=None) -> list:
    """Object code for each job ``(text, links, opt, unroll)``, in order: ``compile_here(job)``
    in this thread, and a worker process for a share of them when there are at least
    ``MIN_JOBS`` and two cores."""
    results = [None] * len(jobs)
    worker = _get_worker(cpu, features) if len(jobs) >= MIN_JOBS and _cores() >= 2 else None
    if worker is None:
        return [compile_here(job) for job in jobs]
    # Largest first, for both: the longest jobs start at once and the short ones fill in.
    pending = sorted(range(len(jobs)), key=lambda k: len(jobs[k][0]) +
                     sum(len(t) for t in jobs[k][1].values()))
    errors = []

    def take():
        with _lock:
            return pending.pop() if pending else None

    def feed():  # the worker and this thread take the largest job left
        global _failed, _worker
        while True:
            k = take()
            if k is None:
                return
            try:
                results[k] = worker.compile(jobs[k])
            except OSError:  # no worker any more: this job and the rest are compiled here
                with _lock:
                    _failed, _worker = True, None
                    pending.append(k)
                return
            except RuntimeError as e:
                errors.append(e)
                return

    thread = threading.Thread(target=feed, name="functrans-compile-feed", daemon=True)
    thread.start()
    while True:
        k = take()
        if k is None:
            break
        results[k] = compile_here(jobs[k])
    thread.join()
    if errors:
        raise errors[0]
    with _lock:
        left = list(pending)
        pending.clear()
    for k in left:  # the worker died with these queued
        results[k] = compile_here(jobs[k])
    return results
