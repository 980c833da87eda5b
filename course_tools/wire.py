"""The byte format between the grader and the learner's process.

Grader -> learner: a pickle (the learner's process is the untrusted side; unpickling what the
grader sends cannot harm the grader). Learner -> grader: never a pickle. A reply is a JSON
header plus raw tensor bytes, decoded by `decode` into plain data only: None, bool, int, float,
str, list, tuple, dict, torch.Size, torch.dtype and plain `torch.Tensor`s of an allowed dtype
(bools re-derived from bytes, so no odd bit patterns). Handles to the learner's other objects
come back as tags that the grader turns into its own proxies. Nothing the learner sends is
ever executed, unpickled or formatted with the learner's methods in the grader.

Each frame is an 8-byte big-endian length followed by the payload.
"""
from __future__ import annotations

import json
import struct

import torch

DTYPES = {name: getattr(torch, name) for name in (
    "float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
    "complex64", "complex128")}
DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}
HEADER = struct.Struct(">Q")


class ProtocolError(BaseException):   # not swallowed by a check's `except Exception`
    """The learner's process sent something that is not a well-formed reply."""


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


# ------------------------------------------------------------ framing

def frame(payload: bytes) -> bytes:
    return HEADER.pack(len(payload)) + payload


def pack_reply(header: dict, blobs: list[bytes]) -> bytes:
    text = json.dumps(header, allow_nan=True).encode("utf-8")
    return frame(struct.pack(">I", len(text)) + text + b"".join(blobs))


# ------------------------------------------------------------ strict decoding (grader side)

MAX_DEPTH = 40
MAX_ITEMS = 1_000_000


class Decoder:
    """Turns a reply payload into plain data. `handle(n, cls)`, `mirror(n, tensor)` and
    `origin(n)` are the grader's callbacks for the three kinds of references."""

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
