"""Running a local classifier off the event loop: a bounded queue, worker threads, micro-batches.

``ClassifierEngine.classify`` is awaited on whatever event loop the caller runs (the proxy's, or
``BlockingRemote``'s private one); the work happens on ``workers`` threads of the engine's own
(one by default: onnxruntime already spreads one batch over the cores, and releases the GIL while
it runs, as the tokenizer does in ``encode_batch``). A worker takes the oldest text, tokenizes it,
then keeps taking texts for up to ``batch_wait`` seconds or until it holds ``batch_size`` windows,
and scores them ``batch_size`` windows per run — so concurrent requests share runs instead of
queueing one by one. A caller that stops waiting (its timeout, its client gone) marks its text
abandoned: a worker skips it, or stops scoring it between runs.

The queue holds at most ``max_queue`` texts; past that ``classify`` fails at once
(``EngineOverloaded``), which the shield turns into its ``on_error`` — a bounded wait instead of an
ever longer one. Idle workers exit after ``_IDLE_SECONDS``, so an engine no policy uses any more
is freed; engines with the same model and settings are shared (``shared_engine``), so a policy
reload does not load the model twice.

Metrics are pushed to observers (``add_observer``: the proxy's ``Metrics`` is one), from the
worker threads: per run its number of windows and seconds, per text its seconds from queueing to
its scores. Queue depth is read when wanted (``engines``).

Scores are remembered per window (``_WINDOWS_KEPT``, keyed by a cryptographic hash of its token
ids, so no crafted text can pass for another): text judged again with more after it — a stream at
each checkpoint — costs only its new windows.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import logging
import queue
import threading
import time
import weakref
from array import array
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "ClassifierEngine",
    "EngineObserver",
    "EngineOverloaded",
    "Window",
    "WindowModel",
    "WindowScores",
    "add_observer",
    "engines",
    "shared_engine",
]

log = logging.getLogger("shieldgate.shields.classifier")

_IDLE_SECONDS = 10.0
# Windows whose scores are remembered. A stream is judged again at every checkpoint on all its
# text so far; its earlier windows come out of the tokenizer the same each time, so with this
# a checkpoint costs its new windows, not the whole text again.
_WINDOWS_KEPT = 4096


@dataclass(frozen=True, slots=True)
class Window:
    """One window of a text: token ids (special tokens included) and the characters it covers."""

    ids: tuple[int, ...]
    type_ids: tuple[int, ...]
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class WindowScores:
    """A window's characters in the text and its score per label (the model's label order)."""

    start: int
    end: int
    scores: tuple[float, ...]


class _Rows(Protocol):
    def tolist(self) -> Any: ...


class WindowModel(Protocol):
    """What the engine runs (``classifier_model.ClassifierModel``); both calls thread-safe."""

    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> tuple[str, ...]:
        """The names of the score columns, in order."""
        ...

    def windows(self, text: str) -> list[Window]: ...

    def scores(self, windows: Sequence[Window]) -> _Rows: ...


class EngineObserver(Protocol):
    """Told about the engines' work, from their worker threads; must not block."""

    def classifier_batch(self, model: str, windows: int, seconds: float) -> None:
        """One inference run of ``windows`` windows took ``seconds``."""

    def classifier_check(self, model: str, seconds: float) -> None:
        """One text was scored ``seconds`` after it was queued."""


class EngineOverloaded(Exception):
    """The engine's queue is full: the text was not queued."""


_observers: weakref.WeakSet[Any] = weakref.WeakSet()
_engines: weakref.WeakSet[ClassifierEngine] = weakref.WeakSet()
_shared: weakref.WeakValueDictionary[Hashable, ClassifierEngine] = weakref.WeakValueDictionary()
_shared_lock = threading.Lock()


def add_observer(observer: EngineObserver) -> None:
    """Adds an observer for as long as it lives (held weakly)."""
    _observers.add(observer)


def engines() -> list[ClassifierEngine]:
    """The engines alive now (for a queue-depth gauge)."""
    return list(_engines)


def shared_engine(key: Hashable, build: Callable[[], ClassifierEngine]) -> ClassifierEngine:
    """The live engine made for ``key``, or a new one from ``build``."""
    with _shared_lock:
        engine = _shared.get(key)
        if engine is None:
            engine = build()
            _shared[key] = engine
        return engine


class _Job:
    __slots__ = ("abandoned", "future", "keys", "queued", "rows", "text", "windows")

    def __init__(self, text: str) -> None:
        self.text = text
        self.future: concurrent.futures.Future[list[WindowScores]] = concurrent.futures.Future()
        self.queued = time.monotonic()
        # Set by the waiting coroutine when it stops waiting; read by the worker between runs.
        self.abandoned = False
        self.windows: list[Window] = []
        self.keys: list[bytes] = []
        self.rows: list[tuple[float, ...] | None] = []

    @property
    def dropped(self) -> bool:
        return self.abandoned or self.future.done()


class ClassifierEngine:
    def __init__(
        self,
        model: WindowModel,
        *,
        batch_size: int = 8,
        batch_wait: float = 0.002,
        workers: int = 1,
        max_queue: int = 256,
    ) -> None:
        self.model = model
        self.batch_size = batch_size
        self.batch_wait = batch_wait
        self.max_workers = workers
        self._queue: queue.Queue[_Job] = queue.Queue(maxsize=max_queue)
        self._lock = threading.Lock()
        self._workers = 0
        self._scored: OrderedDict[bytes, tuple[float, ...]] = OrderedDict()
        self._scored_lock = threading.Lock()
        _engines.add(self)

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def queue_depth(self) -> int:
        """Texts waiting for a worker."""
        return self._queue.qsize()

    async def classify(self, text: str) -> list[WindowScores]:
        """The scores of each window of ``text``, in order; raises ``EngineOverloaded``, or
        what tokenizing or scoring raised."""
        job = _Job(text)
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            raise EngineOverloaded(f"{self._queue.maxsize} texts are waiting") from None
        self._ensure_worker()
        try:
            return await asyncio.wrap_future(job.future)
        except asyncio.CancelledError:
            job.abandoned = True
            raise

    def _ensure_worker(self) -> None:
        with self._lock:
            if self._workers >= self.max_workers:
                return
            self._workers += 1
        thread = threading.Thread(target=self._work, name=f"classifier-{self.name}", daemon=True)
        thread.start()

    def _work(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    # Checked under the lock ``_ensure_worker`` takes after queueing: a text
                    # queued now finds either this worker still counted or a new one started.
                    if self._queue.empty():
                        self._workers -= 1
                        return
                continue
            jobs = [first]
            try:
                jobs = self._collect(first)
                self._run(jobs)
            except BaseException as exc:  # a bug here must not leave callers waiting for ever
                log.exception("classifier %s: worker failed", self.name)
                for job in jobs:
                    _settle(job.future, exc)
                self._fail_all(exc)

    def _collect(self, first: _Job) -> list[_Job]:
        """``first`` and the texts queued within ``batch_wait``, up to ``batch_size`` windows,
        each tokenized (those that fail to tokenize get their error and are left out)."""
        jobs: list[_Job] = []
        windows = 0
        deadline = time.monotonic() + self.batch_wait
        job: _Job | None = first
        while job is not None:
            if self._tokenize(job):
                jobs.append(job)
                windows += len(job.windows)
            if windows >= self.batch_size:
                break
            try:
                remaining = deadline - time.monotonic()
                job = (
                    self._queue.get(timeout=remaining)
                    if remaining > 0
                    else self._queue.get_nowait()
                )
            except queue.Empty:
                job = None
        return jobs

    def _tokenize(self, job: _Job) -> bool:
        if job.dropped:
            return False
        try:
            job.windows = self.model.windows(job.text)
        except Exception as exc:
            _settle(job.future, exc)
            return False
        job.keys = [_window_key(window) for window in job.windows]
        with self._scored_lock:
            job.rows = [self._scored.get(key) for key in job.keys]
        return True

    def _run(self, jobs: list[_Job]) -> None:
        pending = [
            (job, index) for job in jobs for index, row in enumerate(job.rows) if row is None
        ]
        for job in jobs:
            if all(row is not None for row in job.rows):
                self._finish(job)  # every window remembered
        for first in range(0, len(pending), self.batch_size):
            part = [(job, index) for job, index in pending[first : first + self.batch_size]]
            part = [(job, index) for job, index in part if not job.dropped]
            if not part:
                continue
            started = time.monotonic()
            try:
                rows = self.model.scores([job.windows[index] for job, index in part]).tolist()
            except Exception as exc:
                for job, _ in part:
                    _settle(job.future, exc)
                continue
            self._tell("classifier_batch", len(part), time.monotonic() - started)
            for (job, index), row in zip(part, rows, strict=True):
                job.rows[index] = tuple(float(v) for v in row)
            self._remember(part)
            for job in dict.fromkeys(job for job, _ in part):
                if all(row is not None for row in job.rows):
                    self._finish(job)

    def _remember(self, part: list[tuple[_Job, int]]) -> None:
        with self._scored_lock:
            for job, index in part:
                row = job.rows[index]
                if row is not None:
                    self._scored[job.keys[index]] = row
                    self._scored.move_to_end(job.keys[index])
            while len(self._scored) > _WINDOWS_KEPT:
                self._scored.popitem(last=False)

    def _finish(self, job: _Job) -> None:
        scored = [
            WindowScores(window.start, window.end, row)
            for window, row in zip(job.windows, job.rows, strict=True)
            if row is not None
        ]
        # Told before the waiter wakes up, so what it reads next already counts this text.
        self._tell("classifier_check", time.monotonic() - job.queued)
        _settle(job.future, scored)

    def _fail_all(self, exc: BaseException) -> None:
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return
            _settle(job.future, exc)

    def _tell(self, event: str, *values: float) -> None:
        for observer in list(_observers):
            try:
                getattr(observer, event)(self.name, *values)
            except Exception:
                log.exception("classifier metrics observer failed")


def _window_key(window: Window) -> bytes:
    ids = array("q", window.ids).tobytes() + b"\x00" + array("q", window.type_ids).tobytes()
    return hashlib.blake2b(ids, digest_size=16).digest()


def _settle(
    future: concurrent.futures.Future[list[WindowScores]],
    outcome: list[WindowScores] | BaseException,
) -> bool:
    """Sets ``future``'s result or exception unless its waiter already gave up on it."""
    try:
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)
    except concurrent.futures.InvalidStateError:
        return False  # cancelled by the waiting side meanwhile
    return True
