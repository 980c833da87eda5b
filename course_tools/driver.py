"""The learner's process: runs the notebook's cells and answers the grader's calls.

Started by `course_tools.sandbox` as an unprivileged, resource-limited process. It never
imports the checks, never sees a hidden case's expected answer and never learns a verdict:
it executes cells, then serves requests ("call this object with these inputs", "get this
attribute") and sends back plain data (see `wire.py`). Whatever the learner's code does in
here - patching torch, reading frames, forging bytes on the pipe - only changes what this
process answers, which the grader then checks like any other answer.

Trip-wires: during a graded call a profiler hook and a torch-function mode note whether any
forbidden object (the course's own implementation, a torch built-in that does the whole job)
runs; the reply says so and the grader fails the item. Learner code could switch them off in
its own process, which is why the grader also checks the answer cells' source (shortcuts.py).
"""
import io
import os
import pickle
import sys
import types

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


class Driver:
    def __init__(self):
        import torch
        from course_tools import wire
        self.torch, self.wire = torch, wire
        self.ns = {"__name__": "__main__", "__builtins__": __builtins__}
        self.handles: dict[int, object] = {}
        self.handle_of: dict[int, int] = {}
        self.origins: dict[int, object] = {}
        self.origin_of: dict[int, int] = {}
        self.calls: dict[int, tuple] = {}
        self.forbidden: dict[str, list[str]] = {}
        self.shell = None
        self._received_grad: list = []
        self._forbidden_cache: dict[str, tuple] = {}
        self._hit: list[str] = []

    # ------------------------------------------------------------ cells
    def run_cell(self, source: str) -> None:
        from IPython.core.inputtransformer2 import TransformerManager
        code = TransformerManager().transform_cell(source)
        if "get_ipython" in code and self.shell is None:
            from traitlets.config import Config
            from IPython.core.interactiveshell import InteractiveShell
            config = Config()
            config.HistoryManager.enabled = False
            self.shell = InteractiveShell.instance(config=config, user_ns=self.ns)
            self.ns["get_ipython"] = lambda: self.shell
        exec(compile(code, "<cell>", "exec"), self.ns)

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
            name, shape, data = self.wire.tensor_bytes(obj)
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
        _write_all(self.wire.pack_reply(header, blobs))

    def reply_value(self, value, extra=None):
        blobs, state = [], {"n": 0, "bytes": 0, "grad_out": []}
        header = {"ok": self.export(value, blobs, state)}
        if extra:
            header.update(extra(blobs, state))
        header["forbidden"] = sorted(set(self._hit))
        self.reply(header, blobs)
        return state

    # ------------------------------------------------------------ import (grader -> learner)
    def unpickle(self, payload: bytes):
        driver = self

        class Unpickler(pickle.Unpickler):
            def persistent_load(self, pid):
                kind, n = pid
                if kind == "H":
                    return driver.handles[n]
                if kind == "O":
                    return driver.origins[n]
                raise pickle.UnpicklingError("unknown reference")

            def find_class(self, module, name):
                if module == "course_tools.driver" and name in ("rebuild_tensor", "rebuild_generator",
                                                                "register_origin"):
                    return globals()[name]
                return super().find_class(module, name)
        self._received_grad = []
        global _RECEIVED
        _RECEIVED = self._received_grad
        return Unpickler(io.BytesIO(payload)).load()

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
        return obj

    # ------------------------------------------------------------ trip-wires
    def forbidden_sets(self, item: str):
        if item in self._forbidden_cache:
            return self._forbidden_cache[item]
        import importlib
        codes, funcs = {}, {}
        for dotted in self.forbidden.get(item, []):
            module_name, _, rest = dotted.partition(":")
            try:
                obj = importlib.import_module(module_name)
                for part in rest.split("."):
                    obj = getattr(obj, part)
            except Exception:  # noqa: BLE001 - not present in this torch: nothing to trip on
                continue
            label = f"{module_name}.{rest}"
            if isinstance(obj, type):
                for value in vars(obj).values():
                    code = getattr(value, "__code__", None)
                    if code is not None:
                        codes[code] = label
            elif getattr(obj, "__code__", None) is not None:
                codes[obj.__code__] = label
            else:
                funcs[obj] = label
        self._forbidden_cache[item] = (codes, funcs)
        return codes, funcs

    def guarded(self, item: str, thunk):
        """Run thunk() with the trip-wires of `item` armed."""
        torch = self.torch
        codes, funcs = self.forbidden_sets(item)
        if not codes and not funcs:
            return thunk()
        hit = self._hit

        def profile(frame, event, arg):
            if event == "call" and frame.f_code in codes:
                hit.append(codes[frame.f_code])
        from torch.overrides import TorchFunctionMode

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types_, args=(), kwargs=None):
                try:
                    label = funcs.get(func)
                except TypeError:
                    label = None
                if label:
                    hit.append(label)
                return func(*args, **(kwargs or {}))
        old = sys.getprofile()
        sys.setprofile(profile)
        try:
            with Mode():
                return thunk()
        finally:
            sys.setprofile(old)

    # ------------------------------------------------------------ requests
    def serve(self) -> None:
        torch = self.torch
        while True:
            try:
                (n,) = self.wire.HEADER.unpack(_read_exact(8))
                request = self.unpickle(_read_exact(n))
            except EOFError:
                return
            op = request["op"]
            self._hit = []
            try:
                if op == "init":
                    self.forbidden = request["forbidden"]
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
                self.reply({"err": {"type": type(error).__name__[:80], "msg": message[:400]},
                            "forbidden": sorted(set(self._hit))}, [])

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
        result = self.guarded(request.get("item", ""), thunk)
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
            return out
        self.reply_value(result, extra)

    def backward(self, request) -> None:
        torch = self.torch
        outputs, inputs = self.calls[request["call"]]
        grads = request["grads"]
        pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None]
        wanted = [i for i in inputs if i.requires_grad]
        if pairs and wanted:
            result = torch.autograd.grad([o for o, _ in pairs], wanted, [g for _, g in pairs],
                                         allow_unused=True, retain_graph=True)
            by_id = {id(i): g for i, g in zip(wanted, result)}
        else:
            by_id = {}
        self.reply_value([None if by_id.get(id(i)) is None else by_id[id(i)].detach() for i in inputs])


_RECEIVED: list = []
_DRIVER = None


def rebuild_tensor(name, shape, data, requires_grad):
    from course_tools.wire import tensor_from_bytes
    t = tensor_from_bytes(name, shape, data)
    if requires_grad:
        t.requires_grad_(True)
        _RECEIVED.append(t)
    return t


def register_origin(n, obj):
    return _DRIVER.origin(n, obj)


def rebuild_generator(state):
    import torch
    g = torch.Generator()
    g.set_state(state)
    return g


def main() -> None:
    os.environ.pop("COURSE_GRADE_FDS", None)
    import torch
    torch.set_num_threads(1)
    # The notebooks' set-up cells import the learner-facing `check`; here it does nothing
    # (grading happens in the grader, not in this process).
    stub = types.ModuleType("course_tools.grading")
    stub.check = lambda *args, **kwargs: None
    stub.CheckFailed = AssertionError
    sys.modules["course_tools.grading"] = stub
    import course_tools
    course_tools.grading = stub
    global _DRIVER
    _DRIVER = Driver()
    _DRIVER.serve()


if __name__ == "__main__":
    main()
