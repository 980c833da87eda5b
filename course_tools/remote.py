"""The grader's side of the learner's process: proxies the checks call as if they were the
learner's objects.

A check receives `RemoteObject`s instead of the learner's function or class. Calling one sends
the inputs to the learner's process (driver.py) and returns what came back as plain data
(wire.py): plain tensors, exact list/tuple/dict/str/int/float. Other objects (a module the
learner's class built, a bound method) come back as further `RemoteObject`s; their
`isinstance` answers with the nearest torch class (nn.Linear, nn.Module), never the learner's.
A module's parameters come back as `RemoteTensor`s: real tensors in the grader holding a copy
of the values, whose in-place methods (`copy_`, `fill_`, ...) are applied on both sides, so
checks can copy reference weights into the learner's module. Gradients cross too: a result
that requires grad is the output of `_RemoteGrad`, whose backward asks the learner's process
for the gradients of the inputs and of the called module's parameters. Modules and parameters
the grader passes in keep their identity: when the learner's process returns or stores one of
them, the grader sees its own object again (and e.g. a parameter the learner tied into another
module is tied in the grader's copy too).
"""
from __future__ import annotations

import importlib
import io
import pickle
import time

import torch
from torch import nn

from . import driver as _driver
from .sandbox import LearnerDied, Limits, Sandbox, Timeout
from .wire import Decoder, ProtocolError, tensor_bytes


class ShortcutUsed(BaseException):   # not swallowed by a check's `except Exception`
    """The learner's code ran an object the exercise forbids."""


class LearnerError(Exception):
    """An exception raised by the learner's code (name and message only)."""

    def __init__(self, type_name: str, message: str):
        super().__init__(message)
        self.type_name = type_name


_BUILTIN_ERRORS = {cls.__name__: cls for cls in (
    NotImplementedError, ValueError, TypeError, RuntimeError, IndexError, KeyError, AttributeError,
    NameError, ZeroDivisionError, AssertionError, OverflowError, MemoryError, RecursionError,
    LookupError, ArithmeticError, UnicodeError, FloatingPointError)}
_SUBCLASSES: dict = {}


class NotebookTimeout(Timeout):
    """The notebook's whole grading budget ran out (not one item's)."""


def learner_exception(type_name: str, message: str, mro=()) -> Exception:
    """The learner's exception as the grader raises it: the nearest builtin class in its class
    hierarchy (`class StrideError(ValueError)` is caught by `except ValueError`), named like the
    learner's class; LearnerError when none is one of the builtins the checks may catch."""
    names = [type_name] + [entry[1] for entry in mro if isinstance(entry, list) and len(entry) == 2
                           and entry[0] == "builtins" and isinstance(entry[1], str)]
    cls = next((_BUILTIN_ERRORS[n] for n in names if n in _BUILTIN_ERRORS), None)
    if cls is None:
        return LearnerError(type_name, message)
    if cls.__name__ != type_name:
        name = type_name if type_name.isidentifier() else "LearnerException"
        key = (name, cls)
        if key not in _SUBCLASSES:
            _SUBCLASSES[key] = type(name, (cls,), {"__module__": "learner", "type_name": name})
        cls = _SUBCLASSES[key]
    error = cls(message)
    error.type_name = type_name
    return error


def _trusted_class(spec: str):
    """Resolve 'module:qualname' to a class, only for torch's own modules already imported."""
    import sys
    module_name, _, qualname = spec.partition(":")
    if not (module_name == "torch" or module_name.startswith("torch.")) or module_name not in sys.modules:
        return None
    obj = sys.modules[module_name]
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) else None


class RemoteObject:
    """A handle to one of the learner's objects."""

    __slots__ = ("_session", "_handle", "_cls", "__weakref__")

    def __init__(self, session, handle, cls):
        object.__setattr__(self, "_session", session)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_cls", cls)

    @property
    def __class__(self):
        cls = object.__getattribute__(self, "_cls")
        return cls if cls is not None else RemoteObject

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._session.request("getattr", h=self._handle, name=name)

    def __setattr__(self, name, value):
        self._session.request("setattr", h=self._handle, name=name, args=(value,),
                              grad=torch.is_grad_enabled())

    def __call__(self, *args, **kwargs):
        return self._session.call("call", self._handle, args, kwargs)

    def __getitem__(self, key):
        return self._session.call("getitem", self._handle, (key,), {})

    def __len__(self):
        return self._session.call("len", self._handle, (), {})

    def __iter__(self):
        return iter(self._session.call("iter", self._handle, (), {}))

    def __repr__(self):
        cls = object.__getattribute__(self, "_cls")
        return f"<the learner's {cls.__name__ if cls else 'object'}>"


class RemoteTensor(torch.Tensor):
    """A parameter of the learner's module: a local copy whose in-place methods also run there."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        inplace = name == "__setitem__" or (name.endswith("_") and not name.startswith("_"))
        if inplace and args and type(args[0]) is RemoteTensor:
            self = args[0]
            self._session.call("method", self._handle, args[1:], kwargs, name=name)
            with torch._C.DisableTorchFunctionSubclass():
                func(*args, **kwargs)
            return self
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


class _RemoteGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, session, call_id, outputs, *inputs):
        ctx.session, ctx.call_id, ctx.n_inputs = session, call_id, len(inputs)
        return tuple(o.clone() for o in outputs)

    @staticmethod
    def backward(ctx, *grads):
        got = ctx.session.request("backward", call=ctx.call_id,
                                  grads=[None if g is None else g.detach() for g in grads])
        if not (isinstance(got, list) and len(got) == ctx.n_inputs):
            raise ProtocolError("a backward reply of the wrong length")
        return (None, None, None, *got)


class _Pickler(pickle.Pickler):
    def __init__(self, file, session):
        super().__init__(file, protocol=4)
        self.session = session
        self.grad_inputs: list[torch.Tensor] = []
        self.wrapping: set[int] = set()

    def persistent_id(self, obj):
        if type(obj) is RemoteObject or type(obj) is RemoteTensor:
            return ("H", object.__getattribute__(obj, "_handle"))
        n = self.session.origin_of.get(id(obj))
        if n is not None and self.session.origins[n] is obj and id(obj) not in self.wrapping:
            return ("O", n)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, (nn.Module, nn.Parameter)) and type(obj) is not RemoteTensor:
            if id(obj) in self.wrapping:
                return NotImplemented
            self.wrapping.add(id(obj))
            n = self.session.new_origin(obj)
            return (_driver.register_origin, (n, obj))
        if isinstance(obj, torch.Tensor):
            name, shape, data = tensor_bytes(obj)
            if obj.requires_grad:
                self.grad_inputs.append(obj)
            return (_driver.rebuild_tensor, (name, shape, data, bool(obj.requires_grad)))
        if isinstance(obj, torch.Generator):
            return (_driver.rebuild_generator, (obj.get_state(),))
        return NotImplemented


class Session:
    """One learner process: run the cells once, then answer the checks' calls."""

    def __init__(self, submission, forbidden: dict[str, list[str]], limits: Limits | None = None, hide=()):
        self.sandbox = Sandbox(submission, limits, hide=hide)
        self.forbidden = forbidden
        self.handles: dict[int, RemoteObject] = {}
        self.mirrors: dict[int, RemoteTensor] = {}
        self.origins: dict[int, object] = {}
        self.origin_of: dict[int, int] = {}
        self.budget = float("inf")     # seconds the learner's process may still take (cell or item)
        self.deadline = float("inf")   # when the notebook's whole grading must end
        self.item = ""
        self.started = False

    # ------------------------------------------------------------ lifecycle
    def start(self, timeout: float) -> None:
        self.sandbox.start()
        self.started = True
        self.budget = timeout
        from .shortcuts import kernel_label, kernels_for
        kernels = {item: {op: kernel_label(op, public) for op, public in kernels_for(names).items()}
                   for item, names in self.forbidden.items()}
        self.request("init", forbidden=self.forbidden, kernels=kernels)

    def close(self) -> None:
        self.sandbox.close()

    def kill(self) -> None:
        self.sandbox.kill()

    # ------------------------------------------------------------ identities
    def new_origin(self, obj) -> int:
        n = len(self.origins) + 1
        self.origins[n], self.origin_of[id(obj)] = obj, n
        return n

    def _handle(self, n: int, cls_spec: str):
        proxy = self.handles.get(n)
        if proxy is None:
            proxy = self.handles[n] = RemoteObject(self, n, _trusted_class(cls_spec) if cls_spec else None)
        return proxy

    def _mirror(self, n: int, value: torch.Tensor, requires_grad: bool):
        mirror = self.mirrors.get(n)
        if mirror is None or mirror.shape != value.shape or mirror.dtype != value.dtype:
            if mirror is not None:
                with torch.no_grad():
                    mirror.data = value
                return mirror
            mirror = torch.Tensor._make_subclass(RemoteTensor, value, requires_grad and value.is_floating_point())
            mirror._session, mirror._handle, mirror._is_param = self, n, True
            self.mirrors[n] = mirror
        else:
            with torch.no_grad(), torch._C.DisableTorchFunctionSubclass():
                mirror.data.copy_(value)
        return mirror

    def _origin(self, n: int):
        if n not in self.origins:
            raise ProtocolError("a reference to an object the grader never sent")
        return self.origins[n]

    # ------------------------------------------------------------ requests
    def _send(self, message: dict, deadline: float) -> _Pickler:
        buffer = io.BytesIO()
        pickler = _Pickler(buffer, self)
        pickler.dump(message)
        self.sandbox.send(buffer.getvalue(), deadline)
        return pickler

    def _exchange(self, message: dict):
        """One request and its reply. Only the time spent waiting for the learner's process
        counts against `budget` (the checks' own work in this process does not), and nothing
        runs past `deadline` (the notebook's)."""
        if not self.sandbox.alive:
            raise LearnerDied("the learner's process is not running")
        message["item"] = self.item
        started = time.monotonic()
        own_limit = started + max(self.budget, 0.0)
        deadline = min(own_limit, self.deadline)
        try:
            pickler = self._send(message, deadline)
            payload = self.sandbox.receive(deadline)
        except Timeout:
            if self.deadline < own_limit:
                raise NotebookTimeout() from None
            raise
        finally:
            self.budget -= time.monotonic() - started
        decoder = Decoder(payload, self._handle, self._mirror, self._origin)
        header = decoder.header
        forbidden = header.get("forbidden") or []
        if forbidden:
            names = ", ".join(str(f)[:120] for f in forbidden[:3] if isinstance(f, str))
            raise ShortcutUsed(f"your code calls {names}, which this exercise asks you not to use "
                               "(write it yourself)")
        if "err" in header:
            err = header["err"] if isinstance(header["err"], dict) else {}
            type_name = err.get("type") if isinstance(err.get("type"), str) else "Exception"
            message_text = err.get("msg") if isinstance(err.get("msg"), str) else ""
            mro = err.get("mro") if isinstance(err.get("mro"), list) else []
            raise learner_exception(type_name[:80], message_text[:400], mro[:20])
        if "ok" not in header:
            raise ProtocolError("a reply without a value")
        return decoder, pickler

    def request(self, op: str, **fields):
        decoder, _ = self._exchange({"op": op, **fields})
        return decoder.value("ok")

    def call(self, op: str, handle: int, args, kwargs, name: str = ""):
        grad = torch.is_grad_enabled()
        decoder, pickler = self._exchange({"op": op, "h": handle, "args": tuple(args),
                                           "kwargs": dict(kwargs), "grad": grad, "name": name})
        value = decoder.value("ok")
        self._write_back(decoder)
        self._changed_inputs(decoder, args, kwargs)
        outputs = decoder.grad_tensors
        call_id = decoder.header.get("call")
        if not (grad and outputs and type(call_id) is int):
            for t in outputs:      # marked requires_grad but nothing to connect it to
                t.requires_grad_(False)
            return value
        params = decoder.value("params") or []
        if not isinstance(params, list) or not all(isinstance(p, torch.Tensor) for p in params):
            raise ProtocolError("bad parameter list")
        inputs = pickler.grad_inputs + params
        connected = _RemoteGrad.apply(self, call_id, tuple(outputs), *inputs)
        swap = {id(o): c for o, c in zip(outputs, connected)}
        return _replace(value, swap)

    def _write_back(self, decoder) -> None:
        entries = decoder.value("wb") or []
        for entry in entries:
            if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], int)):
                raise ProtocolError("a bad write-back entry")
            module = self._origin(entry[0])
            if not isinstance(module, nn.Module) or not isinstance(entry[1], list):
                raise ProtocolError("a bad write-back entry")
            for pair in entry[1]:
                if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                    raise ProtocolError("a bad write-back entry")
                name, param = pair
                if not name.isidentifier():
                    continue
                if isinstance(param, torch.Tensor) and isinstance(param, nn.Parameter):
                    if module._parameters.get(name) is not param:
                        module._parameters[name] = param
                elif param is None and name in module._parameters:
                    module._parameters[name] = None

    def _changed_inputs(self, decoder, args, kwargs) -> None:
        """Apply what the learner's code changed in place in its inputs to the grader's objects,
        as if it had run here: a check that compares an input before and after the call sees it."""
        entries = decoder.value("mut") or []
        if not isinstance(entries, list):
            raise ProtocolError("a bad list of changed inputs")
        args = tuple(args)
        for entry in entries:
            if not (isinstance(entry, list) and len(entry) == 2):
                raise ProtocolError("a bad changed-input entry")
            key, new = entry
            if type(key) is int and 0 <= key < len(args):
                mine = args[key]
            elif type(key) is str and key in kwargs:
                mine = kwargs[key]
            else:
                raise ProtocolError("a changed input that was never sent")
            _apply_change(mine, new)

    def get_global(self, name: str):
        return self.request("global", name=name)

    def exec_cell(self, source: str) -> None:
        self.request("exec", source=source)


def _apply_change(mine, new) -> None:
    if isinstance(mine, torch.Tensor) and not isinstance(mine, (nn.Parameter, RemoteTensor)):
        if not isinstance(new, torch.Tensor):
            return
        try:
            with torch.no_grad():
                if mine.shape == new.shape and mine.dtype == new.dtype:
                    mine.copy_(new)
                else:
                    mine.data = new
        except RuntimeError:   # (a view that cannot be written here: the check compares as it can)
            pass
    elif type(mine) is list and isinstance(new, list):
        mine[:] = new
    elif type(mine) is dict and isinstance(new, dict):
        mine.clear()
        mine.update(new)


def _replace(value, swap):
    if isinstance(value, torch.Tensor) and id(value) in swap:
        return swap[id(value)]
    if type(value) is list:
        return [_replace(v, swap) for v in value]
    if type(value) is tuple:
        return tuple(_replace(v, swap) for v in value)
    if type(value) is dict:
        return {k: _replace(v, swap) for k, v in value.items()}
    return value


__all__ = ["RemoteObject", "RemoteTensor", "Session", "ShortcutUsed", "LearnerError", "LearnerDied",
           "Timeout", "NotebookTimeout", "ProtocolError", "importlib"]
