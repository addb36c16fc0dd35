"""What a wrapped call returns keeps its shape, and the rest of the work runs in its context.

An *owner* is what a stream or a returned coroutine runs for: a :class:`~otel_agent_identity._runs.Run`,
a hand-off of one, or an A2A SERVER span's request. It has ``enter() -> token`` (make its
OpenTelemetry ``Context`` current), ``exit(token)`` and ``finish(result=None, error=None)`` (end
it, once; never raises). :class:`Shapes` turns a call's result into the same type with every step
inside the owner's context; :class:`StreamProxy` is the one proxy every async stream we wrap goes
through (runs, the A2A server's event stream, the A2A client's response stream).
"""

from __future__ import annotations

import contextvars
import inspect
import logging
import weakref
from collections.abc import Callable, Generator
from types import AsyncGeneratorType, CoroutineType, FunctionType, GeneratorType
from typing import Any

import wrapt

_logger = logging.getLogger(__name__)

_NO_CODE: dict[Any, bool] = {}  # function -> calling it runs none of its code: bounded by the wrapped methods
_LAZY = inspect.CO_COROUTINE | inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR


class NoOwner:
    """An owner with no context and nothing to end: a stream that is only observed."""

    __slots__ = ()

    def enter(self) -> None:
        return None

    def exit(self, token: Any) -> None:
        pass

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        pass


NO_OWNER = NoOwner()


class StreamProxy(wrapt.ObjectProxy):
    """An async stream whose every pull runs in ``owner``'s context, in whichever task or thread
    consumes it; the owner finishes when the stream is exhausted, fails, is closed (``aclose``), or
    is dropped unfinished (collected). ``on_item(item)``, if given, sees each item after the pull
    (outside the owner's context; it must not raise). Everything else is the wrapped object's.
    """

    def __init__(self, wrapped: Any, owner: Any, on_item: Callable[[Any], None] | None = None) -> None:
        super().__init__(wrapped)
        self._self_owner = owner
        self._self_iter = None
        self._self_on_item = on_item
        if owner is not NO_OWNER:
            weakref.finalize(self, owner.finish)

    def __aiter__(self):
        return self

    async def __anext__(self):
        owner = self._self_owner
        token = owner.enter()
        try:
            if self._self_iter is None:
                self._self_iter = self.__wrapped__.__aiter__()
            item = await self._self_iter.__anext__()
        except StopAsyncIteration:
            owner.finish()
            raise
        except BaseException as exc:
            owner.finish(error=exc)
            raise
        finally:
            owner.exit(token)
        if self._self_on_item is not None:
            self._self_on_item(item)
        return item

    async def aclose(self) -> None:
        """Close an async generator early (``contextlib.aclosing``): the owner finishes now."""
        try:
            await self.__wrapped__.aclose()
        finally:
            self._self_owner.finish()


class RunStream(StreamProxy):
    """An async-iterable, awaitable result of a run (e.g. Agent Framework ``ResponseStream``).
    Besides :class:`StreamProxy`: the run also ends when the stream yields its final response.

    Combinators keep the run: a public method that returns the wrapped stream itself (the
    framework's ``with_transform_hook``/``with_result_hook``/... return ``self``) returns this
    proxy; one that returns a new async iterable (``map``, ``flat_map``, ``with_finalizer``)
    returns a proxy of it for the same run, which keeps this one alive (the run ends with the
    derived stream, not when this proxy is dropped). ``await stream`` gives what awaiting the
    wrapped object gives: this proxy when that is the stream itself (Agent Framework resolves the
    stream and returns it), else the final result, which ends the run.
    """

    def __init__(self, wrapped: Any, run: Any, parent: Any = None) -> None:
        super().__init__(wrapped, run)
        self._self_parent = parent  # a proxy this one was derived from: kept alive with it

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.__wrapped__, name)
        if (name.startswith("_") and not name.startswith("_with_")) or not callable(value) or inspect.isclass(value):
            return value

        def chained(*args: Any, **kwargs: Any) -> Any:
            return self._self_adopt(value(*args, **kwargs))

        return chained

    def _self_adopt(self, result: Any) -> Any:
        try:
            if result is self.__wrapped__:
                return self
            if hasattr(result, "__aiter__") and not isinstance(result, RunStream) and not inspect.isasyncgen(result):
                return RunStream(result, self._self_owner, parent=self)
        except Exception:
            _logger.debug("otel-agent-identity: could not scope a derived stream", exc_info=True)
        return result

    async def get_final_response(self, *args: Any, **kwargs: Any):
        # an async def around the run's await: its frame keeps this proxy (whose finaliser ends the
        # run) alive, e.g. in ``agent.run(..., stream=True).get_final_response()``
        return await self._self_owner.awaited(self.__wrapped__.get_final_response(*args, **kwargs))

    def __await__(self):
        if not hasattr(self.__wrapped__, "__await__"):
            return self.get_final_response().__await__()
        return self._self_resolve().__await__()

    async def _self_resolve(self):
        run = self._self_owner
        tokens = run.enter()
        try:
            result = await self.__wrapped__
        except BaseException as exc:
            run.finish(error=exc)
            raise
        finally:
            run.exit(tokens)
        if result is self.__wrapped__:
            return self  # resolved, not consumed: the run goes on while the caller iterates
        run.finish(result=result)
        return result

    async def close(self, *args: Any, **kwargs: Any) -> None:
        """Agent Framework ``ResponseStream.close()``: the run ends now."""
        try:
            await self.__wrapped__.close(*args, **kwargs)
        finally:
            self._self_owner.finish()

    async def __aenter__(self):
        await self.__wrapped__.__aenter__()
        return self  # ``async with run(...) as stream``: iterate through this proxy, in the run's scope

    async def __aexit__(self, *exc_info: Any) -> Any:
        try:
            return await self.__wrapped__.__aexit__(*exc_info)
        finally:
            self._self_owner.finish(error=exc_info[1])


class Shapes:
    """Return-shape handling shared by a run and its hand-off view: each subclass defines
    ``enter``/``exit``/``finish`` (see the module docstring), these call only those."""

    __slots__ = ()

    def enter(self) -> Any:  # pragma: no cover - defined by each subclass
        raise NotImplementedError

    def exit(self, token: Any) -> None:  # pragma: no cover
        raise NotImplementedError

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:  # pragma: no cover
        raise NotImplementedError

    def context(self) -> contextvars.Context:
        """A copy of the current ``contextvars`` context in which this owner's OpenTelemetry
        ``Context`` is current, for work run with ``Context.run`` (a generator's steps): no attach
        or detach per piece."""
        ctx = contextvars.copy_context()
        ctx.run(self.enter)  # the token is not needed: the context is the owner's own
        return ctx

    def call(self, wrapped: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """Call ``wrapped`` inside the owner's context and wrap what it returns, keeping its type
        (:meth:`wrap_result`). Re-raises what ``wrapped`` raises, after finishing with it."""
        try:
            lazy = _NO_CODE[getattr(wrapped, "__func__", wrapped)]
        except (KeyError, TypeError):
            lazy = _runs_no_code(wrapped)
        if lazy:
            # calling an ``async def`` or a generator function only binds its arguments: none of the
            # run's code runs before the result is awaited or iterated (inside the context)
            try:
                result = wrapped(*args, **kwargs)
            except BaseException as exc:
                self.finish(error=exc)
                raise
        else:
            tokens = self.enter()
            try:
                result = wrapped(*args, **kwargs)
            except BaseException as exc:
                self.finish(error=exc)
                raise
            finally:
                self.exit(tokens)
        if isinstance(result, CoroutineType):
            return self.awaited(result)
        return self.wrap_result(result)

    def wrap_result(self, result: Any) -> Any:
        """Keep ``result``'s shape, with the rest of the work inside the owner's context: a
        coroutine stays a coroutine, a generator a generator, an async generator an async
        generator, another async iterable (e.g. Agent Framework ``ResponseStream``) a
        :class:`RunStream` proxy; anything else finishes the owner and is returned as is."""
        if isinstance(result, CoroutineType):
            return self.awaited(result)
        if isinstance(result, AsyncGeneratorType):
            return self._finish_if_dropped(scoped_async_generator(result, self))
        if isinstance(result, GeneratorType):
            return self._finish_if_dropped(scoped_generator(result, self))
        if hasattr(result, "__aiter__"):
            return RunStream(result, self)
        self.finish(result=result)
        return result

    def _finish_if_dropped(self, gen: Any) -> Any:
        """A generator dropped before its first step never runs its ``finally``: finish when it is
        collected (a no-op for one that ran: it finished the owner itself)."""
        weakref.finalize(gen, self.finish)
        return gen

    def finish_when_done(self, future: Any, result: Any = None) -> None:
        """Task-based runs (a background task, a run loop task): finish when ``future`` (an
        ``asyncio.Future``/``Task`` or ``concurrent.futures.Future``) completes.

        ``result``: the run's result object (e.g. a streamed result the task fills in), given to
        :meth:`finish` when the future completed successfully.
        """

        def done(fut: Any) -> None:
            # a done callback: what it raises is only logged by the loop, and the run would never end
            try:
                cancelled = fut.cancelled()
                error = None if cancelled else fut.exception()
            except BaseException as exc:
                cancelled, error = False, exc
            try:
                self.finish(result=result if error is None and not cancelled else None, error=error)
            except Exception:
                _logger.debug("otel-agent-identity: ending a task-based run failed", exc_info=True)

        future.add_done_callback(done)

    async def awaited(self, coro: Any) -> Any:
        """Await ``coro`` in the owner's context, then finish with its result or exception."""
        tokens = self.enter()
        try:
            result = await coro
        except BaseException as exc:
            self.finish(error=exc)
            raise
        finally:
            self.exit(tokens)
        self.finish(result=result)
        return result


def _runs_no_code(fn: Any) -> bool:
    """``fn`` (a function or a method bound to one) is a plain ``async def`` or generator function:
    calling it only binds its arguments and returns the coroutine or generator."""
    key = getattr(fn, "__func__", fn)
    try:
        return _NO_CODE[key]
    except KeyError:
        pass
    except TypeError:  # not hashable
        return False
    # exactly a function object: a proxy (another instrumentation's wrapt wrapper) may run code
    found = type(key) is FunctionType and bool(key.__code__.co_flags & _LAZY)
    if len(_NO_CODE) < 1024:
        _NO_CODE[key] = found
    return found


def scoped_generator(gen, owner: Shapes):
    """A generator over ``gen`` whose every step runs in the owner's context, never across the
    caller's code between steps. The owner finishes when ``gen`` is exhausted or raises, or when
    this generator is closed or collected (an early ``break``): ``GeneratorExit`` is no failure.
    ``send()`` and ``throw()`` reach ``gen``; its return value is kept.

    Each step runs with ``Context.run`` in one context of the owner's own (:meth:`Shapes.context`),
    so a context variable a step sets is seen by the next step and never by the caller."""
    step = owner.context().run
    error: BaseException | None = None
    try:
        sent, thrown = None, None
        while True:
            try:
                item = step(gen.send, sent) if thrown is None else step(gen.throw, thrown)
            except StopIteration as stop:
                return stop.value
            except BaseException as exc:
                error = exc
                raise
            sent, thrown = None, None
            try:
                sent = yield item
            except GeneratorExit:
                raise
            except BaseException as exc:  # thrown in by the consumer: hand it to gen
                thrown = exc
    finally:
        if error is None:
            try:
                step(gen.close)
            except BaseException as exc:
                error = exc
                raise
            finally:
                owner.finish(error=error)
        else:
            owner.finish(error=error)


async def scoped_async_generator(agen, owner: Shapes):
    """The async counterpart of :func:`scoped_generator`: an ``async def`` generator (not a proxy),
    so the event loop's async-generator finaliser closes it, and finishes the owner, when the
    caller leaves ``async for`` with ``break`` and drops it. ``asend()``/``athrow()`` reach ``agen``."""
    error: BaseException | None = None
    try:
        sent, thrown = None, None
        while True:
            tokens = owner.enter()
            try:
                item = await (agen.athrow(thrown) if thrown is not None else agen.asend(sent))
            except StopAsyncIteration:
                return
            except BaseException as exc:
                error = exc
                raise
            finally:
                owner.exit(tokens)
            sent, thrown = None, None
            try:
                sent = yield item
            except GeneratorExit:
                raise
            except BaseException as exc:
                thrown = exc
    finally:
        try:
            if error is None:
                tokens = owner.enter()
                try:
                    await agen.aclose()
                except BaseException as exc:
                    error = exc
                    raise
                finally:
                    owner.exit(tokens)
        finally:
            owner.finish(error=error)


class _InContext:
    """An awaitable that runs every step of ``coro`` (a coroutine, or an async generator's
    ``asend``/``athrow``/``aclose`` awaitable) with ``Context.run`` in ``ctx``: what the coroutine
    attaches stays in ``ctx``, across its own suspensions, and never reaches the awaiting task."""

    __slots__ = ("coro", "ctx")

    def __init__(self, coro: Any, ctx: contextvars.Context) -> None:
        self.coro, self.ctx = coro, ctx

    def __await__(self) -> Generator[Any, Any, Any]:
        run, coro = self.ctx.run, self.coro
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                future = run(coro.send, value) if error is None else run(coro.throw, error)
            except StopIteration as stop:
                return stop.value
            value, error = None, None
            try:
                value = yield future
            except BaseException as exc:  # a cancellation of the awaiting task: handed to coro
                error = exc


class _InOwnContext:
    """An async generator's ``asend``/``athrow``/``aclose``, each step run in ``ctx`` (:class:`_InContext`)."""

    __slots__ = ("agen", "ctx")

    def __init__(self, agen: Any, ctx: contextvars.Context) -> None:
        self.agen, self.ctx = agen, ctx

    def asend(self, value: Any) -> _InContext:
        return _InContext(self.agen.asend(value), self.ctx)

    def athrow(self, error: BaseException) -> _InContext:
        return _InContext(self.agen.athrow(error), self.ctx)

    def aclose(self) -> _InContext:
        return _InContext(self.agen.aclose(), self.ctx)


class _FinishOnly(Shapes):
    """``owner``'s finish, and no context of its own to enter (the steps run in one already)."""

    __slots__ = ("owner",)

    def __init__(self, owner: Any) -> None:
        self.owner = owner

    def enter(self) -> None:
        return None

    def exit(self, token: Any) -> None:
        pass

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        self.owner.finish(result=result, error=error)


def context_async_generator(agen, owner: Shapes):
    """Like :func:`scoped_async_generator`, for a framework that attaches its own context across
    its ``yield``s (Strands' ``use_span`` around its event loop): every step of ``agen`` runs in
    one context of the owner's own (:meth:`Shapes.context`, taken now), as :func:`scoped_generator`'s
    do, so what a step attaches is current in the next step and never in the caller's code."""
    return scoped_async_generator(_InOwnContext(agen, owner.context()), _FinishOnly(owner))
