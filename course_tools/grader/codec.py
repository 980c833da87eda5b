"""The byte format between the grader and the learner's process, both directions (the frames
that carry it: channel.py).

Grader -> learner: a pickle (`RequestPickler`; the learner's process is the untrusted side:
unpickling what the grader sends cannot harm the grader). Tensors travel as raw bytes and are
rebuilt there by `rebuild_tensor`; the grader's own modules and parameters as numbered "origins",
so that the grader sees its own object again when the learner's code returns or stores one; the
learner's objects the grader holds proxies of as their handles (`RequestUnpickler` resolves both).

Learner -> grader: never a pickle. A reply (`pack_reply`) is a JSON header plus raw tensor bytes,
decoded by `Decoder` into plain data only: None, bool, int, float, str, list, tuple, dict,
torch.Size, torch.dtype and plain `torch.Tensor`s of an allowed dtype (bools re-derived from
bytes, so no odd bit patterns). Handles to the learner's other objects come back as tags that the
grader turns into its own proxies (proxy.py). Nothing the learner sends is ever executed,
unpickled or formatted with the learner's methods in the grader.
"""
from __future__ import annotations

import io
import json
import pickle
import struct

import torch
from torch import nn

from .errors import ProtocolError

DTYPES = {name: getattr(torch, name) for name in (
    "float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
    "complex64", "complex128")}
DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}


# ------------------------------------------------------------ tensors as bytes (both sides)

def tensor_bytes(t: torch.Tensor) -> tuple[str, list[int], bytes]:
    """(dtype name, shape, raw bytes) of a tensor, bypassing any subclass behaviour."""
    with torch._C.DisableTorchFunction():
        t = torch.Tensor.detach(t)
        t = torch.Tensor.cpu(t).contiguous()
        name = DTYPE_NAMES.get(t.dtype)
        if name is None:
            t, name = t.to(torch.float64), "float64"
        shape = [int(n) for n in t.shape]
        flat = t.reshape(-1)
        if flat.numel() == 0:
            return name, shape, b""
        if t.dtype == torch.bool:
            flat = flat.to(torch.uint8)
        data = flat.view(torch.uint8).numpy().tobytes()
    return name, shape, data


def tensor_from_bytes(name: str, shape, data: bytes) -> torch.Tensor:
    dtype = DTYPES[name]
    if not data:
        return torch.zeros(shape, dtype=dtype)
    raw = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    if dtype == torch.bool:
        return (raw != 0).reshape(shape)
    return raw.view(dtype).reshape(shape).clone()


# ------------------------------------------------------------ requests (grader -> learner)

class RequestPickler(pickle.Pickler):
    """Pickles a request. `refs` is the grader's side of the identities (proxy.Remote):
    `handle_of(obj)` (a proxy's handle in the learner's process, or None), `origin_of(obj)` (the
    number of a module or parameter already sent, or None) and `new_origin(obj)`."""

    def __init__(self, file, refs):
        super().__init__(file, protocol=4)
        self.refs = refs
        self.grad_inputs: list[torch.Tensor] = []   # the tensors sent that require grad, in order
        self.wrapping: set[int] = set()

    def persistent_id(self, obj):
        handle = self.refs.handle_of(obj)
        if handle is not None:
            return ("H", handle)
        n = self.refs.origin_of(obj)
        if n is not None and id(obj) not in self.wrapping:
            return ("O", n)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, (nn.Module, nn.Parameter)):
            if id(obj) in self.wrapping:     # the object itself, inside its own registration
                return NotImplemented
            self.wrapping.add(id(obj))
            return (register_origin, (self.refs.new_origin(obj), obj))
        if isinstance(obj, torch.Tensor):
            name, shape, data = tensor_bytes(obj)
            if obj.requires_grad:
                self.grad_inputs.append(obj)
            return (rebuild_tensor, (name, shape, data, bool(obj.requires_grad)))
        if isinstance(obj, torch.Generator):
            return (rebuild_generator, (obj.get_state(),))
        return NotImplemented


def exchange(channel, message: dict, refs) -> tuple[Decoder, RequestPickler]:
    """One request down the channel and its reply back: the decoded reply, and the request's
    pickler (which remembers the tensors sent that require grad). `refs` (proxy.Remote) also
    turns the reply's references into objects: `proxy(n, cls)`, `mirror(n, tensor, requires_grad)`,
    `origin(n)`."""
    buffer = io.BytesIO()
    pickler = RequestPickler(buffer, refs)
    pickler.dump(message)
    reply = channel.exchange(buffer.getvalue())
    return Decoder(reply, refs.proxy, refs.mirror, refs.origin), pickler


# What a request's pickle calls on the learner's side. The grader's pickler names these functions;
# `RequestUnpickler` (in the learner's process) answers each name with its own method.
def rebuild_tensor(name, shape, data, requires_grad):
    raise RuntimeError("called by RequestUnpickler only")


def rebuild_generator(state):
    raise RuntimeError("called by RequestUnpickler only")


def register_origin(n, obj):
    raise RuntimeError("called by RequestUnpickler only")


class RequestUnpickler(pickle.Unpickler):
    """The learner's side of a request. `handles`: the learner's objects the grader holds proxies
    of; `origins`: the grader's modules and parameters received so far; `on_origin(n, obj)`
    numbers a newly received one. `received_grad`: the tensors received that require grad."""

    REBUILT = ("rebuild_tensor", "rebuild_generator", "register_origin")

    def __init__(self, payload: bytes, handles: dict, origins: dict, on_origin):
        super().__init__(io.BytesIO(payload))
        self.handles, self.origins, self.on_origin = handles, origins, on_origin
        self.received_grad: list[torch.Tensor] = []

    def persistent_load(self, pid):
        kind, n = pid
        if kind == "H":
            return self.handles[n]
        if kind == "O":
            return self.origins[n]
        raise pickle.UnpicklingError("unknown reference")

    def find_class(self, module, name):
        if module == __name__ and name in self.REBUILT:
            return getattr(self, "_" + name)
        return super().find_class(module, name)

    def _rebuild_tensor(self, name, shape, data, requires_grad):
        t = tensor_from_bytes(name, shape, data)
        if requires_grad:
            t.requires_grad_(True)
            self.received_grad.append(t)
        return t

    @staticmethod
    def _rebuild_generator(state):
        g = torch.Generator()
        g.set_state(state)
        return g

    def _register_origin(self, n, obj):
        return self.on_origin(n, obj)


# ------------------------------------------------------------ replies (learner -> grader)

def pack_reply(header: dict, blobs: list[bytes]) -> bytes:
    """A reply's bytes (the learner's side): the JSON header's length, the header, the tensors' bytes."""
    text = json.dumps(header, allow_nan=True).encode("utf-8")
    return struct.pack(">I", len(text)) + text + b"".join(blobs)


MAX_DEPTH = 40
MAX_ITEMS = 1_000_000


class Decoder:
    """Turns a reply payload into plain data. `handle(n, cls)`, `mirror(n, tensor, requires_grad)`
    and `origin(n)` are the grader's callbacks for the three kinds of references."""

    def __init__(self, payload: bytes, handle, mirror, origin):
        if len(payload) < 4:
            raise ProtocolError("a reply shorter than its header")
        (n,) = struct.unpack(">I", payload[:4])
        if n > len(payload) - 4:
            raise ProtocolError("a reply header longer than the reply")
        try:
            self.header = json.loads(payload[4:4 + n].decode("utf-8"))
        except (ValueError, RecursionError) as error:
            raise ProtocolError(f"an unreadable reply header ({type(error).__name__})") from None
        if not isinstance(self.header, dict):
            raise ProtocolError("a reply header that is not an object")
        self.blob = memoryview(payload)[4 + n:]
        self.handle, self.mirror, self.origin = handle, mirror, origin
        self.items = 0
        self.grad_tensors: list[torch.Tensor] = []   # decoded tensors the learner marked requires_grad

    def value(self, key: str):
        return self.decode(self.header.get(key), 0)

    def _tensor(self, node) -> torch.Tensor:
        name, shape, span = node.get("dt"), node.get("sh"), node.get("b")
        if name not in DTYPES:
            raise ProtocolError("a tensor of an unknown dtype")
        if not (isinstance(shape, list) and len(shape) <= 16 and all(type(s) is int and 0 <= s for s in shape)):
            raise ProtocolError("a tensor with a bad shape")
        if not (isinstance(span, list) and len(span) == 2 and all(type(s) is int and s >= 0 for s in span)):
            raise ProtocolError("a tensor with a bad byte range")
        numel = 1
        for s in shape:
            numel *= s
        itemsize = torch.empty((), dtype=DTYPES[name]).element_size() if name != "bool" else 1
        start, length = span
        if length != numel * itemsize or start + length > len(self.blob):
            raise ProtocolError("a tensor whose bytes do not match its shape")
        return tensor_from_bytes(name, shape, bytes(self.blob[start:start + length]))

    def decode(self, node, depth: int):
        self.items += 1
        if depth > MAX_DEPTH or self.items > MAX_ITEMS:
            raise ProtocolError("a reply nested too deeply or too long")
        if node is None or type(node) in (bool, int, float, str):
            return node
        if type(node) is list:
            return [self.decode(x, depth + 1) for x in node]
        if type(node) is not dict or len(node) == 0:
            raise ProtocolError("an unknown value in a reply")
        if "t" in node and type(node["t"]) is list:
            return tuple(self.decode(x, depth + 1) for x in node["t"])
        if "d" in node and type(node["d"]) is list:
            out = {}
            for pair in node["d"]:
                if type(pair) is not list or len(pair) != 2:
                    raise ProtocolError("a bad dict entry in a reply")
                key = self.decode(pair[0], depth + 1)
                if not isinstance(key, (type(None), bool, int, float, str, tuple)):
                    raise ProtocolError("a dict key that is not a plain value")
                out[key] = self.decode(pair[1], depth + 1)
            return out
        if "S" in node and type(node["S"]) is list and all(type(s) is int for s in node["S"]):
            return torch.Size(node["S"])
        if "dtype" in node:
            if node["dtype"] not in DTYPES:
                raise ProtocolError("an unknown dtype")
            return DTYPES[node["dtype"]]
        if "T" in node:
            tensor = self._tensor(node)
            if "P" in node:
                if type(node["P"]) is not int:
                    raise ProtocolError("a bad parameter handle")
                return self.mirror(node["P"], tensor, bool(node.get("rg")))
            if node.get("rg") is True and tensor.is_floating_point():
                self.grad_tensors.append(tensor)
            return tensor
        if "H" in node and type(node["H"]) is int:
            cls = node.get("cls")
            return self.handle(node["H"], cls if type(cls) is str else "")
        if "O" in node and type(node["O"]) is int:
            return self.origin(node["O"])
        raise ProtocolError("an unknown tag in a reply")
