"""Step 5 of grading: proxies the checks call as if they were the learner's objects.

A check receives `RemoteObject`s instead of the learner's function or class. Calling one sends
the inputs to the learner's process (learner/server.py) and returns what came back as plain data
(codec.py): plain tensors, exact list/tuple/dict/str/int/float. Other objects (a module the
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

import sys

import torch
from torch import nn

from .codec import exchange
from .errors import ProtocolError, ShortcutUsed, learner_exception


def _trusted_class(spec: str):
    """Resolve 'module:qualname' to a class, only for torch's own modules already imported."""
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


class Remote:
    """The learner's namespace as the checks see it, over one `Channel` (which owns the process and
    the clocks: this class never starts, kills or times anything). `item`: the item being graded
    (its trip-wires are armed in the learner's process)."""

    def __init__(self, channel):
        self.channel = channel
        self.item = ""
        self.handles: dict[int, RemoteObject] = {}
        self.mirrors: dict[int, RemoteTensor] = {}
        self.origins: dict[int, object] = {}       # the grader's modules and parameters sent, by number
        self._origin_numbers: dict[int, int] = {}

    def init(self, forbidden: dict[str, list[str]], kernels: dict[str, dict[str, str]]) -> None:
        """Arm the learner's process: what each item forbids (its trip-wires import them now,
        before any item's clock starts)."""
        self.request("init", forbidden=forbidden, kernels=kernels)

    def exec_cell(self, source: str) -> None:
        self.request("exec", source=source)

    def get_global(self, name: str):
        return self.request("global", name=name)

    # ------------------------------------------------------------ identities (codec.py asks, both ways)
    def handle_of(self, obj) -> int | None:
        if type(obj) is RemoteObject or type(obj) is RemoteTensor:
            return object.__getattribute__(obj, "_handle")
        return None

    def origin_of(self, obj) -> int | None:
        n = self._origin_numbers.get(id(obj))
        return n if n is not None and self.origins[n] is obj else None

    def new_origin(self, obj) -> int:
        n = len(self.origins) + 1
        self.origins[n], self._origin_numbers[id(obj)] = obj, n
        return n

    def proxy(self, n: int, cls_spec: str):
        proxy = self.handles.get(n)
        if proxy is None:
            proxy = self.handles[n] = RemoteObject(self, n, _trusted_class(cls_spec) if cls_spec else None)
        return proxy

    def mirror(self, n: int, value: torch.Tensor, requires_grad: bool):
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

    def origin(self, n: int):
        if n not in self.origins:
            raise ProtocolError("a reference to an object the grader never sent")
        return self.origins[n]

    # ------------------------------------------------------------ requests
    def _exchange(self, message: dict):
        """One request and its reply, decoded; the learner's exception raised as the grader's."""
        message["item"] = self.item
        decoder, pickler = exchange(self.channel, message, self)
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
            module = self.origin(entry[0])
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
