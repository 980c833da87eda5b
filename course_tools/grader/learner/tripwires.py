"""The trip-wires of the learner's process: did a graded call run a forbidden object?

During a graded call (and the backward pass through its result) a profiler hook, a torch-function
mode and the kernel watch (kernel_watch.py) note whether any forbidden object (the course's own
implementation, a torch built-in that does the whole job) runs; the reply says so and the grader
fails the item.
fails the item.
- The hook matches a forbidden function's own code (decorators unwrapped; a shared wrapper such as
  contextlib's or torch.no_grad's counts only when it runs on an instance of the forbidden class),
  also when it was copied (exec of the course's file or of the function's source alone, renamed
  parameters and locals, another docstring, other line layout, `__code__.replace(co_name=...)`:
  equal bytecode, names and constants), C functions by identity (so also under
  `torch._C.DisableTorchFunction()`), and the methods of a forbidden C class (tokenizers') on its
  instances. It runs in every thread the learner's code starts (threading's and _thread's).
- The kernel watch (`KernelWatch`) is torch's profiler over every thread: it sees each ATen
`sys.setprofile` cannot switch the hook off during a graded call, a hook replaced by other means, a
thread that removed its hook, a profiler stopped or restarted under the watch, and a process forked
during the call fail the item. Learner code could still switch them off in its own process
(docs/instructors.md, threat model), which is why the grader also checks the answer cells' source (shortcuts.py).
"""
import _thread
import os
import secrets
import sys
import threading
import types

from course_tools.grader.learner.kernel_watch import KernelWatch

_SETPROFILE, _GETPROFILE = sys.setprofile, sys.getprofile   # before any learner code runs
_START_NEW_THREAD = _thread.start_new_thread


class TripWires:
    """Installed once, before any learner code runs; `arm(...)` with what each item forbids, then
    `guarded(item, thunk)` around each graded call. `hit`: what the current request tripped."""

    def __init__(self):
        import torch
        self.torch = torch
        self.forbidden: dict[str, list[str]] = {}
        self.kernels: dict[str, dict[str, str]] = {}
        self.hit: list[str] = []
        self._forbidden_cache: dict[str, tuple] = {}
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
            self.hit.append("os.fork (a process started during a graded call: the grader cannot see into it)")

    def _guard_setprofile(self, function):
        """sys.setprofile as the learner's code sees it: refused while a graded call runs; a thread
        that removes its hook is remembered (it fails the items graded while it lives)."""
        if function is self._thread_hook:
            return _SETPROFILE(function)
        if self._armed:
            self.hit.append("sys.setprofile (it would switch off the grader's checks)")
            return None
        if threading.get_ident() != self._main_thread:
            self._unhooked.add(threading.get_ident())
        return _SETPROFILE(function)

    def arm(self, forbidden: dict[str, list[str]], kernels: dict[str, dict[str, str]]) -> None:
        self.forbidden, self.kernels = forbidden, kernels
        for item in forbidden:   # imports (transformers, ...) before any item's clock
            self.forbidden_sets(item)

    def exempt_modules(self, top) -> None:
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
        normal = {fingerprint(code): name for code, name in codes.items()}
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
                self.hit.extend(watch.stop())
        if not (codes or shared or funcs or classes or kernels):
            return thunk()
        hit, normal_cache, tensor, local = self.hit, self._normal_cache, self.torch.Tensor, self._local

        def profile(frame, event, arg):
            if getattr(local, "exempt", 0):      # a module the grader sent is running its forward
                return
            if event == "call":
                code = frame.f_code
                label = codes.get(code)
                if label is None:
                    key = normal_cache.get(code)
                    if key is None:
                        key = normal_cache[code] = fingerprint(code)
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


def fingerprint(code):
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
                arg = fingerprint(i.argval)
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



def _first_argument(frame):
    """The first positional argument of the call that `frame` starts (self, for a method)."""
    code = frame.f_code
    if code.co_argcount:
        return frame.f_locals.get(code.co_varnames[0])
    if code.co_flags & 0x04:   # *args only (decorators' wrappers)
        args = frame.f_locals.get(code.co_varnames[code.co_kwonlyargcount])
        return args[0] if isinstance(args, tuple) and args else None
    return None
