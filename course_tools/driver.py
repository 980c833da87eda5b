"""The learner's process: runs the notebook's cells and answers the grader's calls.

Started by `course_tools.sandbox` as an unprivileged, resource-limited process. It never
imports the checks, never sees a hidden case's expected answer and never learns a verdict:
it executes cells, then serves requests ("call this object with these inputs", "get this
attribute") and sends back plain data (see `wire.py`). Whatever the learner's code does in
here - patching torch, reading frames, forging bytes on the pipe - only changes what this
process answers, which the grader then checks like any other answer.

Trip-wires: during a graded call (and the backward pass through its result) a profiler hook, a
torch-function mode and a kernel watch note whether any forbidden object (the course's own
implementation, a torch built-in that does the whole job) runs; the reply says so and the grader
fails the item.
- The hook matches a forbidden function's own code (decorators unwrapped; a shared wrapper such as
  contextlib's or torch.no_grad's counts only when it runs on an instance of the forbidden class),
  also when it was copied (exec of the course's file or of the function's source alone, renamed
  parameters and locals, another docstring, other line layout, `__code__.replace(co_name=...)`:
  equal bytecode, names and constants), C functions by identity (so also under
  `torch._C.DisableTorchFunction()`), and the methods of a forbidden C class (tokenizers') on its
  instances. It runs in every thread the learner's code starts (threading's and _thread's).
- The kernel watch (`KernelWatch`) is torch's profiler over every thread: it sees each ATen
  operator the dispatcher runs, composite ones included, whatever Python name reached it (torch.X,
  F.X, torch._C._nn.X, torch.ops.aten.X.overload, a Tensor method, a dict of them, a worker
  thread). An operator of a forbidden built-in's kernel family (shortcuts.KERNELS) fails the item.
  Only the learner's code runs in this process (the checks' reference computations run in the
  grader's), so whatever it dispatches during a graded call is the learner's.
`sys.setprofile` cannot switch the hook off during a graded call, a hook replaced by other means, a
thread that removed its hook, a profiler stopped or restarted under the watch, and a process forked
during the call fail the item. Learner code could still switch them off in its own process
(docs/instructors.md, threat model), which is why the grader also checks the answer cells' source (shortcuts.py).

Inputs the learner's code changes in place (a tensor's values, a list's or dict's items) are
reported with the reply, and the grader applies the change to its own copy, so a check that
compares its inputs before and after the call sees it as it would in the notebook.
"""
import _thread
import io
import os
import pickle
import secrets
import sys
import threading
import types

_SETPROFILE, _GETPROFILE = sys.setprofile, sys.getprofile   # before any learner code runs
_START_NEW_THREAD = _thread.start_new_thread

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
        self.kernels: dict[str, dict[str, str]] = {}
        self._hit: list[str] = []
        self._armed = False
        self._active = None              # the profile hook of the graded call now running
        self._normal_cache: dict = {}
        self._main_thread = threading.get_ident()
        self._unhooked: set[int] = set()   # threads that replaced their hook
        sys.setprofile = self._guard_setprofile
        # Every thread the learner's code starts runs the hook too (threading's threads through
        # threading.setprofile, _thread's through its start function); it does nothing between
        # graded calls (one Python call per event, in the learner's own threads only).
        # The grader's own modules (sent as inputs: an nn.LayerNorm whose behaviour a check asks
        # about) run inside the learner's call: what they run is the check's, not the learner's.
        self._local = threading.local()             # .exempt: depth of grader modules running here
        self._exempt_marker = f"course-grader-exempt-{secrets.token_hex(8)}"
        self._hooked: set[int] = set()
        self._thread_hook = self._thread_profile    # (one bound method: compared by identity)
        threading.setprofile(self._thread_hook)
        _thread.start_new_thread = _thread.start_new = self._start_new_thread
        if hasattr(_thread, "start_joinable_thread"):      # (Python 3.13)
            joinable = _thread.start_joinable_thread

            def start_joinable_thread(function, *args, **kwargs):
                return joinable(self._hooked_target(function), *args, **kwargs)
            _thread.start_joinable_thread = start_joinable_thread
        os.register_at_fork(before=self._before_fork)

    def _thread_profile(self, frame, event, arg):
        active = self._active
        if active is not None:
            active(frame, event, arg)

    def _hooked_target(self, function):
        thread_hook = self._thread_hook

        def run(*a, **k):
            _SETPROFILE(thread_hook)
            return function(*a, **k)
        return run

    def _start_new_thread(self, function, args, kwargs=None):
        return _START_NEW_THREAD(self._hooked_target(function), args, kwargs or {})

    def _before_fork(self):
        if self._armed:
            self._hit.append("os.fork (a process started during a graded call: the grader cannot see into it)")

    def _guard_setprofile(self, function):
        """sys.setprofile as the learner's code sees it: refused while a graded call runs; a thread
        that removes its hook is remembered (it fails the items graded while it lives)."""
        if function is self._thread_hook:
            return _SETPROFILE(function)
        if self._armed:
            self._hit.append("sys.setprofile (it would switch off the grader's checks)")
            return None
        if threading.get_ident() != self._main_thread:
            self._unhooked.add(threading.get_ident())
        return _SETPROFILE(function)

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
        if isinstance(obj, self.torch.nn.Module):
            self._exempt_modules(obj)
        return obj

    def _exempt_modules(self, top) -> None:
        """Mark each module of a grader-sent one (torch's or the course's classes only): while its
        own forward runs - not overridden on the object or its class since it arrived, with no
        pre-hook of anyone else's - the trip-wires look away (see KernelWatch: `exempt`)."""
        torch, local, marker = self.torch, self._local, self._exempt_marker
        for module in top.modules():
            cls = type(module)
            home = getattr(cls, "__module__", "") or ""
            if id(module) in self._hooked or not (home.startswith("torch.") or home.startswith("course_lib.")):
                continue
            self._hooked.add(id(module))
            forward = cls.forward

            def pre(mod, args, _forward=forward, _cls=cls):
                stack = getattr(local, "stack", None)
                if stack is None:
                    stack = local.stack = []
                trusted = (type(mod) is _cls and _cls.forward is _forward and "forward" not in vars(mod)
                           and len(mod._forward_pre_hooks) == 1
                           and not torch.nn.modules.module._global_forward_pre_hooks)
                if trusted:
                    scope = torch.autograd.profiler.record_function(marker)
                    scope.__enter__()
                    local.exempt = getattr(local, "exempt", 0) + 1
                    stack.append(scope)
                else:
                    stack.append(None)

            def post(mod, args, output):
                stack = getattr(local, "stack", None)
                scope = stack.pop() if stack else None
                if scope is not None:
                    local.exempt -= 1
                    scope.__exit__(None, None, None)
            module.register_forward_pre_hook(pre)
            module.register_forward_hook(post, prepend=True, always_call=True)

    # ------------------------------------------------------------ trip-wires
    def warm_up(self) -> None:
        """What ordinary torch code imports lazily on first use, imported before any item's clock
        starts: torch.broadcast_shapes (masks, validation) pulls in sympy, seconds on a busy machine."""
        torch = self.torch
        try:
            torch.broadcast_shapes((1, 2), (3, 1))
            torch.ones(2).masked_fill(torch.tensor([True, False]), 0.0).softmax(-1)
        except Exception:  # noqa: BLE001 - a warm-up only
            pass

    def forbidden_sets(self, item: str):
        """What the trip-wires of `item` look for: (codes, fingerprints of codes, shared codes,
        C functions, Tensor method names, C classes), each mapped to the forbidden object's label."""
        if item in self._forbidden_cache:
            return self._forbidden_cache[item]
        import importlib
        codes, shared, funcs, methods, classes = {}, {}, {}, {}, {}
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
                home = _module_file(obj)
                found = False
                for value in list(vars(obj).values()):
                    for code, own in _codes_of(value, home):
                        found = True
                        if own:
                            codes[code] = label
                        else:    # a wrapper shared with other code: only on this class's objects
                            shared.setdefault(code, []).append((obj, label))
                if not found:    # a class written in C (tokenizers'): its methods on its objects
                    classes[obj] = label
            elif _codes_of(obj, _module_file(obj)):
                for code, own in _codes_of(obj, _module_file(obj)):
                    if own:
                        codes[code] = label
            else:
                funcs[obj] = label
                if rest.startswith("Tensor."):
                    methods[rest.rsplit(".", 1)[-1]] = label
        normal = {_fingerprint(code): name for code, name in codes.items()}
        self._forbidden_cache[item] = (codes, normal, shared, funcs, methods, classes)
        return self._forbidden_cache[item]

    def guarded(self, item: str, thunk, kernels_only: bool = False):
        """Run thunk() with the trip-wires of `item` armed (`kernels_only`: the kernel watch alone,
        for the backward pass that this driver itself starts with torch.autograd.grad)."""
        codes, normal, shared, funcs, methods, classes = self.forbidden_sets(item)
        kernels = self.kernels.get(item) or {}
        if kernels_only:
            if not kernels:
                return thunk()
            watch = KernelWatch(kernels, self._exempt_marker)
            try:
                watch.start()
                return thunk()
            finally:
                self._hit.extend(watch.stop())
        if not (codes or shared or funcs or classes or kernels):
            return thunk()
        hit, normal_cache, tensor, local = self._hit, self._normal_cache, self.torch.Tensor, self._local

        def profile(frame, event, arg):
            if getattr(local, "exempt", 0):      # a module the grader sent is running its forward
                return
            if event == "call":
                code = frame.f_code
                label = codes.get(code)
                if label is None:
                    key = normal_cache.get(code)
                    if key is None:
                        key = normal_cache[code] = _fingerprint(code)
                    label = normal.get(key)
                if label is None and code in shared:
                    first = _first_argument(frame)
                    label = next((l for cls, l in shared[code] if first is cls or isinstance(first, cls)), None)
                if label is not None:
                    hit.append(label)
            elif event == "c_call":
                try:
                    label = funcs.get(arg)
                except Exception:  # noqa: BLE001 - an unhashable callable (a list's method): not forbidden
                    label = None
                if label is None and (methods or classes):
                    owner = getattr(arg, "__self__", None)
                    if methods and isinstance(owner, tensor):
                        label = methods.get(getattr(arg, "__name__", None))
                    if label is None and classes:
                        owner_class = getattr(arg, "__objclass__", None)
                        label = next((l for cls, l in classes.items() if isinstance(owner, cls)
                                      or (isinstance(owner_class, type) and issubclass(owner_class, cls))), None)
                if label is not None:
                    hit.append(label)
        from torch.overrides import TorchFunctionMode

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types_, args=(), kwargs=None):
                try:
                    label = funcs.get(func)
                except TypeError:
                    label = None
                if label and not getattr(local, "exempt", 0):
                    hit.append(label)
                return func(*args, **(kwargs or {}))
        live = set(sys._current_frames())
        if self._unhooked & live:
            hit.append("sys.setprofile in another thread (it switched off the grader's checks there)")
        self._unhooked &= live
        watch = KernelWatch(kernels, self._exempt_marker) if kernels else None
        old = _GETPROFILE()
        _SETPROFILE(profile)
        self._active, self._armed = profile, True
        try:
            if watch is not None:
                watch.start()
            with Mode():
                return thunk()
        finally:
            self._armed, self._active = False, None
            if watch is not None:
                hit.extend(watch.stop())
            if _GETPROFILE() is not profile:
                hit.append("a profiler or tracer of its own (it switched off the grader's checks)")
            _SETPROFILE(old)

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
                    self.kernels = request.get("kernels") or {}
                    for item in self.forbidden:   # imports (transformers, ...) before any item's clock
                        self.forbidden_sets(item)
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
        inputs = list(enumerate(args)) + list(kwargs.items())
        before = [(key, value, self.snapshot(value)) for key, value in inputs]
        result = self.guarded(request.get("item", ""), thunk)
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
                return ("T", self.wire.tensor_bytes(value))
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
            result = self.guarded(request.get("item", ""), lambda: torch.autograd.grad(
                [o for o, _ in pairs], wanted, [g for _, g in pairs], allow_unused=True, retain_graph=True),
                kernels_only=True)
            by_id = {id(i): g for i, g in zip(wanted, result)}
        else:
            by_id = {}
        self.reply_value([None if by_id.get(id(i)) is None else by_id[id(i)].detach() for i in inputs])


_RECEIVED: list = []
_DRIVER = None


def _module_file(obj) -> str:
    """The source file of the module that defines `obj` ("" when unknown)."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    return os.path.realpath(getattr(module, "__file__", None) or "") if module else ""


def _codes_of(value, home: str) -> list:
    """[(code, own)] of a function, method, static/class method or property, through the
    decorators' `__wrapped__`: own when the code was written in `home` (the forbidden object's
    file), else a wrapper shared with other code (contextlib's, torch.no_grad's, deprecated...)."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    candidates = [value.fget, value.fset, value.fdel] if isinstance(value, property) else [value]
    out = []
    for candidate in candidates:
        for _ in range(8):
            if candidate is None:
                break
            try:
                code = getattr(candidate, "__code__", None)
                wrapped = getattr(candidate, "__wrapped__", None) if isinstance(candidate, types.FunctionType) else None
            except Exception:  # noqa: BLE001 - an object with a hostile __getattr__: nothing here
                break
            if isinstance(code, types.CodeType):
                out.append((code, bool(home) and os.path.realpath(code.co_filename) == home))
            candidate = wrapped
    return out


_CODE_FLAGS = 0x04 | 0x08 | 0x20 | 0x80 | 0x200   # *args, **kwargs, generator, coroutine, async generator
SMALL_CODE = 40    # instructions under which a copy must also keep its local names
_SAME_OP = {"LOAD_METHOD": "LOAD_ATTR"}   # how a call on a module's attribute compiles depends on
_DROPPED_OPS = {"PUSH_NULL", "NOP", "EXTENDED_ARG", "CACHE", "RESUME"}   # whether it was imported there
_FAST_OPS = {"LOAD_FAST", "STORE_FAST", "DELETE_FAST", "LOAD_CLOSURE", "LOAD_DEREF", "STORE_DEREF",
             "DELETE_DEREF", "MAKE_CELL", "LOAD_FAST_CHECK", "LOAD_CLASSDEREF"}


def _fingerprint(code):
    """What a copy of a function keeps: its instructions (locals by number, jumps by instruction),
    the global and attribute names it uses, its non-string constants and its signature's shape -
    not its name, file, line layout, docstring, the text of its strings, compiler flags (`from
    __future__ import annotations` or not, a module's name imported in its file or not) or local
    names. So exec of a course file, of one function's source (inspect.getsource) or of a copy with
    renamed parameters and locals is the course's code. A small function keeps its local names
    (two people writing the same two lines differ there, if anywhere)."""
    try:
        import dis
        kept = [i for i in dis.get_instructions(code) if i.opname not in _DROPPED_OPS]
        index = {i.offset: n for n, i in enumerate(kept)}
        small = len(kept) < SMALL_CODE
        ops = []
        for i in kept:
            name = _SAME_OP.get(i.opname, i.opname)
            if i.opcode in dis.hasjrel or i.opcode in dis.hasjabs:
                arg = index.get(i.argval, -1)
            elif name in _FAST_OPS:
                arg = i.argval if small else i.arg
            elif isinstance(i.argval, types.CodeType):
                arg = _fingerprint(i.argval)
            elif isinstance(i.argval, (str, bytes)) and name == "LOAD_CONST":
                arg = "<str>"
            elif name in ("LOAD_GLOBAL", "LOAD_ATTR", "STORE_ATTR", "LOAD_NAME", "STORE_NAME", "STORE_GLOBAL",
                          "IMPORT_NAME", "IMPORT_FROM", "DELETE_ATTR", "KW_NAMES", "LOAD_CONST"):
                arg = i.argval
            else:
                arg = i.arg
            try:
                hash(arg)
            except TypeError:
                arg = repr(arg)
            ops.append((name, arg))
        return ("code", tuple(ops), code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
                code.co_flags & _CODE_FLAGS, code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
                if small else None)
    except Exception:  # noqa: BLE001 - (cannot happen for real code objects)
        return code


_normal = _fingerprint   # (the old name)


SWITCHED_OFF = "torch's profiler, stopped or restarted (it switched off the grader's kernel checks)"


class KernelWatch:
    """The ATen operators the dispatcher runs, in every thread, between start() and stop(): torch's
    profiler (RecordFunction at the dispatcher, so composite operators such as aten::rms_norm count
    too, whatever Python name or thread reached them). `kernels`: {"op": label}, as shortcuts.kernels_for
    gives it. stop() returns the labels of the operators seen, and says so when the profiler was
    stopped or restarted in between (the learner's code switched the watch off)."""

    def __init__(self, kernels: dict[str, str], exempt: str | None = None):
        self.kernels = {name if name.startswith("aten::") else f"aten::{name}": label
                        for name, label in kernels.items()}
        self.exempt = exempt     # operators inside a record_function range of this name do not count
        self.marker = f"course-grader-{secrets.token_hex(8)}"
        self.started = False

    def _config(self):
        from torch._C._profiler import ProfilerActivity, ProfilerConfig, ProfilerState, _ExperimentalConfig
        config = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False,
                                _ExperimentalConfig(profile_all_threads=True))
        return config, {ProfilerActivity.CPU}

    def _mark(self, suffix: str) -> None:
        import torch
        with torch.autograd.profiler.record_function(self.marker + suffix):
            pass

    def start(self) -> None:
        from torch.autograd import _disable_profiler, _enable_profiler, _prepare_profiler
        config, activities = self._config()
        _prepare_profiler(config, activities)
        try:
            _enable_profiler(config, activities)
        except RuntimeError:       # a learner's own profiler left running: it ends here
            _disable_profiler()
            _prepare_profiler(config, activities)
            _enable_profiler(config, activities)
        self.started = True
        self._mark(":start")

    def stop(self) -> list[str]:
        from torch.autograd import _disable_profiler
        if not self.started:
            return []
        self.started = False
        try:
            self._mark(":stop")
            events = _disable_profiler().events()
            names = {event.name() for event in events}
        except Exception:  # noqa: BLE001 - no profiler to stop: the learner's code stopped it
            return [SWITCHED_OFF]
        if self.marker + ":start" not in names or self.marker + ":stop" not in names:
            return [SWITCHED_OFF]
        if names & self.kernels.keys() and self.exempt in names:
            ranges = [(e.start_thread_id(), e.start_ns(), e.end_ns()) for e in events if e.name() == self.exempt]
            names = {e.name() for e in events if e.name() in self.kernels and not any(
                thread == e.start_thread_id() and start <= e.start_ns() <= end for thread, start, end in ranges)}
        out: dict[str, str] = {}    # one operator per forbidden object: its family's first that ran
        for name, label in self.kernels.items():
            if name in names:
                out.setdefault(label.rpartition(" (the kernel of ")[2] or label, label)
        return sorted(out.values())


def _first_argument(frame):
    """The first positional argument of the call that `frame` starts (self, for a method)."""
    code = frame.f_code
    if code.co_argcount:
        return frame.f_locals.get(code.co_varnames[0])
    if code.co_flags & 0x04:   # *args only (decorators' wrappers)
        args = frame.f_locals.get(code.co_varnames[code.co_kwonlyargcount])
        return args[0] if isinstance(args, tuple) and args else None
    return None


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
    global _DRIVER
    _DRIVER = Driver()
    _DRIVER.serve()


if __name__ == "__main__":
    main()
