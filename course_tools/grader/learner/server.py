"""The learner's process: runs the notebook's cells and answers the grader's calls.

Started by `course_tools.grader.channel` as an unprivileged, resource-limited process. It never
imports the checks, never sees a hidden case's expected answer and never learns a verdict:
it executes cells, then serves requests ("call this object with these inputs", "get this
attribute") and sends back plain data (see codec.py). Whatever the learner's code does in
here - patching torch, reading frames, forging bytes on the pipe - only changes what this
process answers, which the grader then checks like any other answer. Each graded call runs under
the trip-wires (tripwires.py).

Inputs the learner's code changes in place (a tensor's values, a list's or dict's items) are
reported with the reply, and the grader applies the change to its own copy, so a check that
compares its inputs before and after the call sees it as it would in the notebook.
"""
import os
import sys
import types

from course_tools.grader.frames import FRAME
from course_tools.grader.learner.tripwires import TripWires

FD_IN, FD_OUT = (int(n) for n in os.environ.get("COURSE_GRADE_FDS", "3,4").split(","))


def _read_exact(n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(FD_IN, min(n - got, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(FD_OUT, view)
        view = view[n:]


class Server:
    def __init__(self):
        import torch
        from course_tools.grader import codec
        self.torch, self.codec = torch, codec
        self.wires = TripWires()         # first: before any learner code runs
        self.ns = {"__name__": "__main__", "__builtins__": __builtins__}
        self.handles: dict[int, object] = {}
        self.handle_of: dict[int, int] = {}
        self.origins: dict[int, object] = {}
        self.origin_of: dict[int, int] = {}
        self.calls: dict[int, tuple] = {}
        self.shell = None
        self._received_grad: list = []

    # ------------------------------------------------------------ cells
    def run_cell(self, source: str) -> None:
        try:   # plain Python runs as it is (IPython would not change it; a large cell costs no transform)
            compiled, code = compile(source, "<cell>", "exec"), source
        except SyntaxError:
            from IPython.core.inputtransformer2 import TransformerManager
            code = TransformerManager().transform_cell(source)
            compiled = compile(code, "<cell>", "exec")
        if "get_ipython" in code and self.shell is None:
            from traitlets.config import Config
            from IPython.core.interactiveshell import InteractiveShell
            config = Config()
            config.HistoryManager.enabled = False
            self.shell = InteractiveShell.instance(config=config, user_ns=self.ns)
            self.ns["get_ipython"] = lambda: self.shell
        exec(compiled, self.ns)

    # ------------------------------------------------------------ export (learner -> grader)
    def export(self, obj, blobs, state, depth=0):
        torch = self.torch
        if depth > 30:
            raise ValueError("a result nested too deeply")
        state["n"] += 1
        if state["n"] > 200_000:
            raise ValueError("a result with too many elements")
        if obj is None or obj is True or obj is False:
            return obj
        if id(obj) in self.origin_of:
            return {"O": self.origin_of[id(obj)]}
        if isinstance(obj, bool):
            return bool(obj)
        if isinstance(obj, int):
            return int.__index__(obj)
        if isinstance(obj, float):
            return float.__float__(obj)
        if isinstance(obj, str):
            return str.__str__(obj)
        if isinstance(obj, torch.dtype):
            return {"dtype": str(obj).replace("torch.", "")}
        if isinstance(obj, torch.Size):
            return {"S": [int(n) for n in tuple.__iter__(obj)]}
        if isinstance(obj, torch.Tensor):
            name, shape, data = self.codec.tensor_bytes(obj)
            start = state["bytes"]
            blobs.append(data)
            state["bytes"] += len(data)
            node = {"T": 1, "dt": name, "sh": shape, "b": [start, len(data)],
                    "rg": bool(torch._C._TensorBase.requires_grad.__get__(obj))}
            if isinstance(obj, torch.nn.Parameter):
                node["P"] = self.register(obj)
            elif node["rg"]:
                state["grad_out"].append(obj)
            return node
        if isinstance(obj, tuple):
            return {"t": [self.export(x, blobs, state, depth + 1) for x in tuple.__iter__(obj)]}
        if isinstance(obj, list):
            return [self.export(x, blobs, state, depth + 1) for x in list.__iter__(obj)]
        if isinstance(obj, dict):
            return {"d": [[self.export(k, blobs, state, depth + 1), self.export(v, blobs, state, depth + 1)]
                          for k, v in dict.items(obj)]}
        if isinstance(obj, types.GeneratorType):
            items = []
            for x in obj:
                items.append(x)
                if len(items) > 100_000:
                    raise ValueError("a generator that does not end")
            return self.export(items, blobs, state, depth)
        try:
            import numpy
            if isinstance(obj, numpy.generic):
                return self.export(obj.item(), blobs, state, depth)
        except ImportError:
            pass
        return {"H": self.register(obj), "cls": self.trusted_class(obj)}

    def register(self, obj) -> int:
        key = id(obj)
        if key not in self.handle_of:
            n = len(self.handles) + 1
            self.handles[n], self.handle_of[key] = obj, n
        return self.handle_of[key]

    @staticmethod
    def trusted_class(obj) -> str:
        """The nearest class of `obj` that the grader also has (torch's), for isinstance."""
        for klass in type.mro(type(obj)):
            module = getattr(klass, "__module__", "") or ""
            if module == "torch" or module.startswith("torch."):
                return f"{module}:{klass.__qualname__}"
        return ""

    def reply(self, header: dict, blobs: list) -> None:
        payload = self.codec.pack_reply(header, blobs)
        _write_all(FRAME.pack(len(payload)) + payload)

    def reply_value(self, value, extra=None):
        blobs, state = [], {"n": 0, "bytes": 0, "grad_out": []}
        header = {"ok": self.export(value, blobs, state)}
        if extra:
            header.update(extra(blobs, state))
        header["forbidden"] = sorted(set(self.wires.hit))
        self.reply(header, blobs)
        return state

    # ------------------------------------------------------------ import (grader -> learner)
    def unpickle(self, payload: bytes):
        unpickler = self.codec.RequestUnpickler(payload, self.handles, self.origins, self.origin)
        request = unpickler.load()
        self._received_grad = unpickler.received_grad
        return request

    def register_origins(self, values) -> list:
        """The grader-sent modules among `values` (numbered by `register_origin` on arrival)."""
        torch = self.torch
        modules = []

        def visit(x, depth=0):
            if depth > 10:
                return
            if isinstance(x, torch.nn.Module):
                if id(x) in self.origin_of:
                    modules.append(x)
            elif isinstance(x, (list, tuple)):
                for y in x:
                    visit(y, depth + 1)
            elif isinstance(x, dict):
                for y in x.values():
                    visit(y, depth + 1)
        visit(values)
        return modules

    def origin(self, n: int, obj):
        self.origins[n], self.origin_of[id(obj)] = obj, n
        if isinstance(obj, self.torch.nn.Module):
            self.wires.exempt_modules(obj)
        return obj

    def warm_up(self) -> None:
        """What ordinary torch code imports lazily on first use, imported before any item's clock
        starts: torch.broadcast_shapes (masks, validation) pulls in sympy, seconds on a busy machine."""
        torch = self.torch
        try:
            torch.broadcast_shapes((1, 2), (3, 1))
            torch.ones(2).masked_fill(torch.tensor([True, False]), 0.0).softmax(-1)
        except Exception:  # noqa: BLE001 - a warm-up only
            pass

    # ------------------------------------------------------------ requests
    def serve(self) -> None:
        torch = self.torch
        while True:
            try:
                (n,) = FRAME.unpack(_read_exact(FRAME.size))
                request = self.unpickle(_read_exact(n))
            except EOFError:
                return
            op = request["op"]
            self.wires.hit = []
            try:
                if op == "init":
                    self.wires.arm(request["forbidden"], request.get("kernels") or {})
                    self.warm_up()
                    self.reply_value(None)
                elif op == "exec":
                    self.run_cell(request["source"])
                    self.reply_value(None)
                elif op == "global":
                    if request["name"] not in self.ns:
                        raise NameError(f"name {request['name']!r} is not defined")
                    self.reply_value(self.ns[request["name"]])
                elif op == "getattr":
                    self.reply_value(getattr(self.handles[request["h"]], request["name"]))
                elif op == "setattr":
                    args = request["args"]
                    self.register_origins(args)
                    with torch.set_grad_enabled(request["grad"]):
                        setattr(self.handles[request["h"]], request["name"], args[0])
                    self.reply_value(None)
                elif op in ("call", "method", "getitem", "len", "iter"):
                    self.call(request)
                elif op == "backward":
                    self.backward(request)
                elif op == "bye":
                    self.reply_value(None)
                    return
                else:
                    raise ValueError(f"unknown op {op!r}")
            except BaseException as error:  # noqa: BLE001 - reported, never fatal
                if isinstance(error, (SystemExit, KeyboardInterrupt)) and op != "exec":
                    pass
                try:
                    message = str(error)
                except BaseException:  # noqa: BLE001
                    message = "(an exception whose message could not be shown)"
                mro = [[str(getattr(c, "__module__", ""))[:80], str(getattr(c, "__qualname__", ""))[:80]]
                       for c in type.mro(type(error))[:20]]
                self.reply({"err": {"type": type(error).__name__[:80], "msg": message[:400], "mro": mro},
                            "forbidden": sorted(set(self.wires.hit))}, [])

    def call(self, request) -> None:
        torch = self.torch
        target = self.handles[request["h"]]
        args, kwargs = request.get("args", ()), request.get("kwargs", {})
        received = list(self._received_grad)
        modules = self.register_origins((args, kwargs))
        op = request["op"]

        def thunk():
            with torch.set_grad_enabled(request.get("grad", True)):
                if op == "call":
                    return target(*args, **kwargs)
                if op == "method":
                    return getattr(target, request["name"])(*args, **kwargs)
                if op == "getitem":
                    return target[args[0]]
                if op == "len":
                    return len(target)
                return list(iter(target))
        inputs = list(enumerate(args)) + list(kwargs.items())
        before = [(key, value, self.snapshot(value)) for key, value in inputs]
        result = self.wires.guarded(request.get("item", ""), thunk)
        changed = [(key, value) for key, value, snap in before
                   if snap is not None and not self.unchanged(value, snap)]
        callee = target if isinstance(target, torch.nn.Module) else getattr(target, "__self__", None)
        params = list(callee.parameters()) if isinstance(callee, torch.nn.Module) else []

        def extra(blobs, state):
            out = {}
            if state["grad_out"]:
                call_id = len(self.calls) + 1
                self.calls[call_id] = (state["grad_out"], received + params)
                out["call"] = call_id
                out["params"] = [self.export(p, blobs, state) for p in params]
            out["wb"] = [[self.origin_of[id(m)], [[name, self.export(p, blobs, state)]
                                                  for name, p in m._parameters.items()]]
                         for top in modules for m in top.modules() if id(m) in self.origin_of]
            if changed:
                out["mut"] = [[key, self.export(value.detach() if isinstance(value, torch.Tensor) else value,
                                                blobs, state)] for key, value in changed]
            return out
        self.reply_value(result, extra)

    def snapshot(self, value):
        """What tells whether an input was changed in place: a plain tensor's bytes, shape and
        dtype; a list's or dict's items (by identity, held so that no id is reused)."""
        torch = self.torch
        if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
            try:
                return ("T", self.codec.tensor_bytes(value))
            except Exception:  # noqa: BLE001 - a tensor that cannot be read: not compared
                return None
        if type(value) is list:
            return ("L", list(list.__iter__(value)))
        if type(value) is dict:
            return ("D", list(dict.items(value)))
        return None

    def unchanged(self, value, snap) -> bool:
        kind, data = snap
        if kind == "T":
            return self.snapshot(value) == snap
        now = self.snapshot(value)
        if now is None or len(now[1]) != len(data):
            return False
        if kind == "L":
            return all(a is b for a, b in zip(now[1], data))
        return all(a is c and b is d for (a, b), (c, d) in zip(now[1], data))

    def backward(self, request) -> None:
        torch = self.torch
        outputs, inputs = self.calls[request["call"]]
        grads = request["grads"]
        pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None]
        wanted = [i for i in inputs if i.requires_grad]
        if pairs and wanted:
            result = self.wires.guarded(request.get("item", ""), lambda: torch.autograd.grad(
                [o for o, _ in pairs], wanted, [g for _, g in pairs], allow_unused=True, retain_graph=True),
                kernels_only=True)
            by_id = {id(i): g for i, g in zip(wanted, result)}
        else:
            by_id = {}
        self.reply_value([None if by_id.get(id(i)) is None else by_id[id(i)].detach() for i in inputs])


def main() -> None:
    os.environ.pop("COURSE_GRADE_FDS", None)
    import torch
    # Exactly one thread for the rest of this process (not course_lib.device's helpers, which
    # honour COURSE_TORCH_THREADS): the sandbox sets OMP_NUM_THREADS=1 and limits CPU seconds,
    # which every thread spends, so a graded call's budget must not depend on the machine.
    torch.set_num_threads(1)
    # The notebooks' set-up cells import the learner-facing `check`; here it does nothing
    # (grading happens in the grader, not in this process).
    stub = types.ModuleType("course_tools.grading")
    stub.check = lambda *args, **kwargs: None
    stub.CheckFailed = AssertionError
    sys.modules["course_tools.grading"] = stub
    import course_tools
    course_tools.grading = stub
    Server().serve()


if __name__ == "__main__":
    main()
