"""What each exercise forbids, and the static check of the learner's cells.

Why one module: the forbidden lists and the one AST walk that reads imports, aliases and escapes
are a single rule set; split, the rules would be read out of order.

An exercise forbids the course's own implementation of the object it grades and the torch
built-ins that do the whole job. A check may also declare more with
`@exercise(..., forbids=("torch.nn.functional:gelu",))`. Names are "module:qualname".

Two independent detectors use the same list:
- static (here): the AST of the learner's cells (answers, cells the learner added and what they
  added to provided cells, after IPython's magics are transformed). Only the code the graded
  object depends on is examined: its definition, the statements that set its attributes
  (`f.__code__ = ...`) and, transitively, the learner's top-level names they refer to - so a
  learner may still compare against the course's version in a cell of their own; a graded name
  that no statement defines depends on the statements that could bind it dynamically (exec,
  globals()). Names are resolved scope by scope (a parameter or local shadows a module alias)
  through imports anywhere, a function's own included (`import torch.nn.functional as F;
  F.softmax`, `from course_lib import attention`, `from x import f as g`, `G = torch.nn.functional`);
  `.name` on any object counts for Tensor methods. Dynamic lookups that could reach anything fail
  the item too: `__import__`, `importlib`, bare `eval`/`exec`/`compile`/`globals()`,
  `sys.modules`, `builtins`, torch's internals (`torch._C`, `torch.ops`), getattr/setattr/vars/
  `__dict__` on a module, `getattr(x, "<forbidden name>")`, code and frame attributes, and
  switching the trip-wires off (`sys.setprofile`, `DisableTorchFunction`). Strings are not code
  (a docstring may name `torch.nn.LayerNorm`), and neither `re.compile`, `model.eval()`,
  `locals()` nor `getattr(self, f"layer{i}")` is a lookup of anything forbidden. The cells are
  parsed once per notebook and every statement is walked a fixed number of times: linear time.
  By kernel, not by name (issue 31): a forbidden torch built-in forbids its kernel family
  (KERNELS: the ATen operators that do its job) under every name - `torch.rms_norm`,
  `torch._native_batch_norm_legit`, `torch._C._nn.cross_entropy_loss`,
  `torch.ops.aten.quantize_per_channel.default`, a Tensor method, getattr with the name; a path
  is followed through the modules it passes (`F.torch._C`, `tokenizers.tokenizers.models.Unigram`
  is the forbidden object itself); paths that run code out of the trip-wires' sight (another
  process, torch.compile/jit, ctypes, a profiler's switches) are escapes; and a def or class that
  copies a forbidden course function (or the lesson's own def of a graded or forbidden name) -
  names, docstrings, comments and layout aside, difflib ratio >= COPY_RATIO - is a finding.
- dynamic (grader/learner/tripwires.py, kernel_watch.py): trip-wires in the learner's process while a graded call runs: the code of
  forbidden functions (copies included), forbidden C functions and classes, and the kernels the
  dispatcher runs (torch's profiler, every thread), so whatever name, dict or thread reached them.
"""
from __future__ import annotations

import ast
import collections
import contextlib
import difflib
import gc
import re
import sys
import types

SOFTMAX = ("torch:softmax", "torch.nn.functional:softmax", "torch:Tensor.softmax", "torch.nn:Softmax",
           "torch.special:softmax", "torch:log_softmax", "torch.nn.functional:log_softmax",
           "torch:Tensor.log_softmax", "torch:_softmax", "torch.nn.functional:softmin")
ATTENTION = ("torch.nn.functional:scaled_dot_product_attention", "torch.nn:MultiheadAttention",
             "torch.nn.functional:multi_head_attention_forward")
LAYER_NORM = ("torch.nn.functional:layer_norm", "torch:layer_norm", "torch:native_layer_norm",
              "torch.nn:LayerNorm", "torch.nn.functional:group_norm", "torch.nn:GroupNorm",
              "torch.nn.functional:rms_norm", "torch.nn:RMSNorm", "course_lib.layernorm:LayerNorm",
              # a batch or instance norm of a transposed (or mirrored: [x, -x]) input is a layer
              # or RMS norm: the norm kernels do each other's job
              "torch.nn.functional:batch_norm", "torch.nn:BatchNorm1d", "torch.nn.functional:instance_norm",
              "torch.nn:InstanceNorm1d")

#: exercise-id prefix -> forbidden objects (every item whose id starts with the prefix).
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "00.": SOFTMAX + ("course_lib.attention:scaled_dot_product_attention",),   # its weights: a masked softmax
    # 01 measures scores and softmax weights by hand: the attention layers (which hide the weights) are
    # forbidden; randn, softmax, var/std and logsumexp, all an honest measurement needs, stay allowed
    "01.": ATTENTION + ("course_lib.attention:scaled_dot_product_attention",
                        "course_lib.attention:MultiHeadAttention"),
    "02.": ATTENTION + ("course_lib.self_attention:SelfAttention", "course_lib.attention:MultiHeadAttention"),
    "04.": ("course_lib.complexity:attention_flops", "course_lib.complexity:count_flops"),
    "05.": ("course_lib.positional:sinusoidal_table", "course_lib.positional:SinusoidalPositionalEncoding"),
    "06.": ("course_lib.embedding:ScaledEmbedding",),
    "07.": LAYER_NORM,
    "08.": ("course_lib.residual:Residual",),
    "09.": ("course_lib.schedules:linear_warmup_decay", "course_lib.schedules:noam",
            "course_lib.schedules:make_scheduler"),
    "12.": ("course_lib.weight_tying:tie_weights",),
    "13.": ("course_lib.tokenization:wordpiece", "course_lib.tokenization:WordPieceTokenizer"),
    "14.pack": ("course_lib.bert:pack_pair",),
    "15.": ("course_lib.masking:mask_tokens", "course_lib.masking:random_word_ids"),
    "16.": ("course_lib.sentence_pairs:make_sop_pairs", "course_lib.sentence_pairs:make_pairs",
            "course_lib.sentence_pairs:make_pair", "course_lib.sentence_pairs:sample_pair"),
    "17.": ("course_lib.bert:mlm_cross_entropy", "course_lib.bert:BertForPreTraining"),
    "18.": ("course_lib.bert:hf_to_course_state_dict", "course_lib.bert:_hf_key_map",
            "course_lib.bert:BertModel.from_hf_state_dict", "course_lib.pretrained:load_minilm",
            "course_lib.pretrained:_minilm_state_dict"),
    "19.": ("course_lib.pooling:mean_pooling", "course_lib.pooling:pool", "course_lib.pooling:max_pooling",
            "sentence_transformers.models:Pooling", "sentence_transformers:SentenceTransformer"),
    "20.": ("course_lib.lm_masks:direction_mask", "course_lib.lm_masks:lm_attention_mask",
            "course_lib.lm_masks:elmo_predictive_states", "course_lib.transformer:causal_mask"),
    "21.": ("course_lib.long_text:sliding_windows",),
    "22.": ("course_lib.transformer_xl:rel_shift", "course_lib.transformer_xl:rel_shift_by_index",
            "course_lib.transformer_xl:update_memory"),
    "24.": ("course_lib.distillation:soft_target_loss", "course_lib.distillation:distillation_loss"),
    "25.": ("course_lib.quantization:quantize_per_channel_int8",
            "course_lib.quantization:quantize_per_tensor_int8", "course_lib.quantization:dequantize_int8",
            "course_lib.quantization:quantization_error", "course_lib.quantization:quantize_int8",
            "torch:quantize_per_channel", "torch:quantize_per_tensor", "torch:fake_quantize_per_channel_affine",
            "torch:fake_quantize_per_tensor_affine", "torch.ao.quantization:quantize_dynamic"),
}

# Dynamic lookups that could reach any object: they fail a graded item when the code it depends on
# uses them. Builtins count as bare names only (`re.compile`, `model.eval()` are ordinary code);
# getattr/setattr with a computed name count on modules only (`getattr(self, f"layer{i}")` is fine).
ESCAPE_NAMES = {"__import__", "importlib", "eval", "exec", "compile", "globals", "__builtins__"}
ESCAPE_ATTRIBUTES = {"__globals__", "__builtins__", "__subclasses__", "__code__", "__closure__",
                     "__getattribute__", "f_globals", "f_locals", "f_back", "f_builtins", "_getframe",
                     "import_module", "run_path", "run_module", "setprofile", "settrace",
                     "setprofile_all_threads", "settrace_all_threads",
                     "DisableTorchFunction", "DisableTorchFunctionSubclass", "_disabled_torch_function_impl",
                     # code run from a string by IPython or the code module; the profiler's switches
                     "run_cell", "run_code", "safe_execfile", "safe_run_module", "runsource", "runcode",
                     "_enable_profiler", "_disable_profiler", "_prepare_profiler", "_clear_callbacks",
                     "_enable_profiler_legacy", "_disable_profiler_legacy"}
# imported paths that reach everything, torch's internals below its public functions, code that
# runs where the trip-wires cannot see it (another process, a compiled graph, a C symbol called
# directly) or that switches the kernel trip-wire (a profiler) off
ESCAPE_PATHS = ("sys.modules", "importlib", "builtins", "torch._C", "torch.ops", "torch._ops", "torch._VF",
                "torch.library", "torch.compile", "torch.jit", "torch._dynamo", "torch._inductor", "torch.export",
                "torch.utils.cpp_extension", "torch.profiler", "torch.autograd.profiler", "torch._prims",
                "torch._refs", "torch._decomp", "ctypes", "cffi", "marshal", "types.FunctionType", "types.CodeType",
                "types.LambdaType", "pydoc", "runpy", "code", "subprocess", "multiprocessing", "torch.multiprocessing", "pty",
                "concurrent.futures.ProcessPoolExecutor", "concurrent.futures.process", "os.fork", "os.forkpty",
                "os.system", "os.popen", "os.posix_spawn", "os.posix_spawnp", "os.execv", "os.execve", "os.execl",
                "os.execle", "os.execlp", "os.execlpe", "os.execvp", "os.execvpe", "os.spawnl", "os.spawnle",
                "os.spawnlp", "os.spawnlpe", "os.spawnv", "os.spawnve", "os.spawnvp", "os.spawnvpe")
ESCAPES = ESCAPE_NAMES | ESCAPE_ATTRIBUTES   # (all the names, for callers of the old constant)
_DYNAMIC_BINDERS = {"exec", "eval", "compile", "globals", "vars", "setattr", "__import__", "importlib",
                    "__dict__", "__builtins__", "builtins", "modules"}
MAGICS_ALLOWED = {"time", "timeit", "capture", "matplotlib", "precision", "who", "whos", "config",
                  "pinfo", "pinfo2", "pdef", "pdoc", "psource", "debug", "prun", "lsmagic", "magic"}
_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError)


def forbidden_for(exercise_id: str, declared=()) -> list[str]:
    out = list(declared)
    for prefix, names in FORBIDDEN.items():
        if exercise_id.startswith(prefix):
            out.extend(names)
    return sorted(set(out))


def _dotted(name: str) -> str:
    return name.replace(":", ".")


# ------------------------------------------------------------------ kernels: forbidding by what runs, not by name

#: Kernel families: the ATen operators (every overload) that do a forbidden torch built-in's whole
#: job. Forbidding a built-in forbids its family under every name that reaches it - torch.X,
#: torch.nn.functional.X, torch._C._nn.X, torch._C._VariableFunctions.X, torch.ops.aten.X[.overload],
#: the _X / native_X / _native_X variants, Tensor methods: statically by those names (any module
#: path that reaches them, getattr with the name), and in the learner's process by the operators
#: the dispatcher runs during a graded call, in every thread (grader/learner/kernel_watch.py: the profiler's view).
KERNELS: dict[str, tuple[str, ...]] = {
    "softmax": ("softmax", "_softmax", "_safe_softmax", "_masked_softmax", "special_softmax", "_sparse_softmax",
                "_nested_tensor_softmax_with_shape"),
    "log_softmax": ("log_softmax", "_log_softmax", "special_log_softmax", "_sparse_log_softmax"),
    "layer_norm": ("layer_norm", "native_layer_norm"),
    "rms_norm": ("rms_norm", "_fused_rms_norm"),
    "group_norm": ("group_norm", "native_group_norm"),
    "batch_norm": ("batch_norm", "native_batch_norm", "_native_batch_norm_legit",
                   "_native_batch_norm_legit_no_training", "_native_batch_norm_legit_functional",
                   "_batch_norm_impl_index", "_batch_norm_with_update", "_batch_norm_with_update_functional",
                   "_batch_norm_no_update", "cudnn_batch_norm", "miopen_batch_norm", "batch_norm_stats",
                   "batch_norm_elemt", "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts",
                   "batch_norm_update_stats", "quantized_batch_norm"),
    "instance_norm": ("instance_norm",),
    "gelu": ("gelu", "gelu_", "gelu_backward"),
    "glu": ("glu",),
    "scaled_dot_product_attention": (
        "scaled_dot_product_attention", "_scaled_dot_product_attention_math",
        "_scaled_dot_product_attention_math_for_mps", "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_fused_attention_overrideable",
        "_flash_attention_forward", "_efficient_attention_forward", "_cudnn_attention_forward",
        "_triton_scaled_dot_attention"),
    "multi_head_attention": ("_native_multi_head_attention", "_triton_multi_head_attention"),
    "cross_entropy": ("cross_entropy_loss",),
    "nll_loss": ("nll_loss", "nll_loss_nd", "nll_loss_forward", "nll_loss2d", "nll_loss2d_forward"),
    "cosine_embedding_loss": ("cosine_embedding_loss",),
    "quantize_per_channel": ("quantize_per_channel", "_make_per_channel_quantized_tensor"),
    "quantize_per_tensor": ("quantize_per_tensor", "quantize_per_tensor_dynamic", "_make_per_tensor_quantized_tensor"),
    "fake_quantize_per_channel_affine": ("fake_quantize_per_channel_affine", "fake_quantize_per_channel_affine_cachemask",
                                         "_fake_quantize_learnable_per_channel_affine"),
    "fake_quantize_per_tensor_affine": ("fake_quantize_per_tensor_affine", "fake_quantize_per_tensor_affine_cachemask",
                                        "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
                                        "_fake_quantize_learnable_per_tensor_affine"),
    "int_repr": ("int_repr",),
    "dequantize": ("dequantize",),
}
_OP_FAMILY = {op: family for family, ops in KERNELS.items() for op in ops}
# public names that are not their kernel family's name
_FAMILY_ALIASES = {"softmin": "softmax", "multihead_attention": "multi_head_attention",
                   "multi_head_attention_forward": "multi_head_attention"}


def _snake(name: str) -> str:
    """RMSNorm -> rms_norm, NLLLoss -> nll_loss, BatchNorm1d -> batch_norm1d."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def kernel_family(spec: str) -> str | None:
    """The kernel family (a key of KERNELS) of a forbidden torch object "module:qualname", or None
    (not torch's, or no single kernel does its job)."""
    module, _, qualname = spec.partition(":")
    if module.split(".")[0] != "torch":
        return None
    name = qualname.rsplit(".", 1)[-1]
    name = _snake(name) if name[:1].isupper() else name
    name = re.sub(r"_?[123]d$", "", name)
    while True:
        stripped = name.lstrip("_")
        for prefix in ("native_", "lazy_", "sync_", "special_", "fused_"):
            if stripped.startswith(prefix):
                stripped = stripped[len(prefix):]
        if stripped == name:
            break
        name = stripped
    for candidate in (name, name[:-len("_loss")] if name.endswith("_loss") else None):
        if candidate is None:
            continue
        candidate = _FAMILY_ALIASES.get(candidate, candidate)
        if candidate in KERNELS:
            return candidate
        if candidate in _OP_FAMILY:
            return _OP_FAMILY[candidate]
    return None


def kernels_for(forbidden) -> dict[str, str]:
    """{ATen operator name: the forbidden object it stands for} of a forbidden list: every operator
    of the kernel family of each forbidden torch object."""
    public: dict[str, str] = {}
    for spec in sorted(forbidden, key=lambda f: ("functional" not in f, len(f), f)):
        family = kernel_family(spec)
        if family is not None and family not in public:
            public[family] = _dotted(spec)
    return {op: public[family] for family in public for op in KERNELS[family]}


def kernel_label(op: str, public: str) -> str:
    """How feedback names a forbidden kernel: `aten::rms_norm (the kernel of torch.nn.functional.rms_norm)`."""
    return f"aten::{op} (the kernel of {public})"


_MISSING = object()


def _canonical(path: str):
    """(the path of the object that `path` names, the object or _MISSING): through the modules it
    passes, so that `F.torch._C._nn.x` is `torch._C._nn.x` and a private module path ends where the
    public one does. Only modules already imported here, and only what their (or their classes')
    __dict__ holds: nothing is imported, no attribute hook runs."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        obj = sys.modules.get(".".join(parts[:i]))
        if obj is not None:
            break
    else:
        return path, _MISSING
    name = getattr(obj, "__name__", None)
    out = [name if isinstance(name, str) and name in sys.modules else ".".join(parts[:i])]
    for j, part in enumerate(parts[i:], start=i):
        try:
            value = vars(obj).get(part, _MISSING) if isinstance(obj, (types.ModuleType, type)) else _MISSING
        except TypeError:
            value = _MISSING
        if value is _MISSING:
            return ".".join(out + parts[j:]), _MISSING
        if isinstance(value, types.ModuleType) and isinstance(getattr(value, "__name__", None), str) \
                and sys.modules.get(value.__name__) is value:
            out = [value.__name__]
        else:
            out.append(part)
        obj = value
    return ".".join(out), obj


def _identities(forbidden, root: str) -> dict[int, str]:
    """{id(object): its label} of the forbidden objects of package `root` (imported here if need be:
    our own list names them), so that a learner's private path to one of them
    (`tokenizers.tokenizers.models.Unigram`, `torch.nn.modules.normalization.LayerNorm`) is it."""
    found = {}
    for spec in forbidden:
        module, _, qualname = spec.partition(":")
        if module.split(".")[0] != root:
            continue
        if module not in sys.modules:
            try:
                __import__(module)
            except Exception:  # noqa: BLE001 - not installed here: nothing to compare with
                continue
        _, obj = _canonical(f"{module}.{qualname}")
        if obj is not _MISSING and not isinstance(obj, (int, float, str, bool, type(None))):
            found[id(obj)] = _dotted(spec)
    return found


def _tensor_methods(kernels) -> set[str]:
    """The kernels that are also Tensor methods (`x.softmax`)."""
    if not kernels:
        return set()
    import torch
    return {op for op in kernels if op in vars(torch._C.TensorBase) or op in vars(torch.Tensor)}


class Finding:
    def __init__(self, what: str, escape: bool):
        self.what, self.escape = what, escape


# ------------------------------------------------------------------ walking one scope (iteratively)

_SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


_LITERALS = (ast.List, ast.Tuple, ast.Set)


def _children(node) -> list:
    """The child nodes of `node`; none for a literal of constants (a list of a million numbers
    costs one pass over it, not a million nodes to visit)."""
    kind = type(node)
    if kind is ast.Constant or kind is ast.Name:
        return []
    if kind in _LITERALS or kind is ast.Dict:
        elements = node.elts if kind is not ast.Dict else [k for k in node.keys if k is not None] + node.values
        if all(type(e) is ast.Constant for e in elements):
            return []
        return list(elements)
    out = []
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out.extend(v for v in value if isinstance(v, ast.AST))
    return out


def _walk(root):
    """Every node under `root` (itself included) that can hold a name, in source order, without
    recursion (a deeply nested expression is walked like any other)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(_children(node)))


def _own_nodes(root):
    """`root` and the nodes of its own scope, in source order, without recursion. A nested
    function, lambda or class is yielded itself with the parts evaluated where it is defined
    (decorators, defaults, bases), not its body."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPE_NODES):
            parts = list(getattr(node, "decorator_list", ()))
            if isinstance(node, ast.ClassDef):
                parts += node.bases + [k.value for k in node.keywords]
            else:
                parts += node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
            stack.extend(reversed(parts))
        else:
            stack.extend(reversed(_children(node)))


def _body(node) -> list:
    return node.body if isinstance(node.body, list) else [node.body]


def _resolve(node, scope) -> str | None:
    """The dotted path `node` (a name or attribute chain) stands for, when its first name is an
    import alias in `scope` (a mapping name -> path, None for a name bound to something else)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        base = scope.get(node.id)
        if base is None:
            return None
        return ".".join([base] + parts[::-1])
    return None


def _bind_imports(node, scope) -> None:
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.asname:
                scope[a.asname] = a.name
            else:
                top = a.name.split(".")[0]
                scope[top] = top
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        for a in node.names:
            if a.name != "*":
                scope[a.asname or a.name] = f"{node.module}.{a.name}"


def _alias_assignment(node, scope):
    """(name, path) for `name = <an imported path>` (`F = torch.nn.functional`), else None."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        path = _resolve(node.value, scope)
        if path:
            return node.targets[0].id, path
    return None


class _Facts:
    """What one module-level statement does, from a single walk: the names it loads (any depth),
    stores (any depth), binds at module level (in order), whose attributes it sets, whether it
    could bind names dynamically, and the code inside its magics."""
    __slots__ = ("loads", "stores", "binds", "touches", "dynamic", "magic")

    def __init__(self, stmt):
        self.loads, self.stores, self.binds, self.touches = [], set(), [], set()
        self.dynamic, self.magic = False, []
        stack = [(stmt, False)]
        while stack:
            node, nested = stack.pop()
            kind = type(node)
            if kind is ast.Name:
                if type(node.ctx) is ast.Load:
                    self.loads.append(node.id)
                else:
                    self.stores.add(node.id)
                    if not nested:
                        self.binds.append(("name", node))
                self.dynamic = self.dynamic or node.id in _DYNAMIC_BINDERS
                continue
            if kind is ast.Constant:
                continue
            if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda):
                if not nested and kind is not ast.Lambda:
                    self.binds.append(("def", node.name))
                parts = list(getattr(node, "decorator_list", ()))
                if kind is ast.ClassDef:
                    parts += node.bases + [k.value for k in node.keywords]
                else:
                    parts += node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
                stack.extend((part, True) for part in reversed(_body(node)))
                stack.extend((part, nested) for part in reversed(parts))
                continue
            if kind is ast.Attribute:
                self.dynamic = self.dynamic or node.attr in _DYNAMIC_BINDERS
            elif kind is ast.Import or kind is ast.ImportFrom:
                if not nested:
                    self.binds.append(("import", node))
            elif kind is ast.Global:
                self.loads.extend(node.names)
            elif kind is ast.Call:
                for what, text in _magic_sources(node):
                    if what == "src":
                        self.magic.append(text)
                if not nested and type(node.func) is ast.Name and node.func.id in ("setattr", "delattr") \
                        and node.args:
                    self._touch(node.args[0])
            if kind in (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete):
                if kind is ast.Assign and not nested:
                    self.binds.append(("assign", node))
                if not nested:
                    for target in getattr(node, "targets", None) or [node.target]:
                        if isinstance(target, (ast.Attribute, ast.Subscript)):
                            self._touch(target)
            stack.extend((child, nested) for child in reversed(_children(node)))

    def _touch(self, target) -> None:
        while isinstance(target, (ast.Attribute, ast.Subscript)):
            target = target.value
        if isinstance(target, ast.Name):
            self.touches.add(target.id)

    def bind(self, scope) -> None:
        """Apply the bindings to `scope`, in order: imports and `name = <path>` make aliases, any
        other binding of a name ends its alias."""
        aliased: set[int] = set()
        for kind, what in self.binds:
            if kind == "name":
                if id(what) not in aliased:
                    scope[what.id] = None
            elif kind == "def":
                scope[what] = None
            elif kind == "import":
                _bind_imports(what, scope)
            else:
                alias = _alias_assignment(what, scope)
                if alias:
                    scope[alias[0]] = alias[1]
                    aliased.add(id(what.targets[0]))


def _bind_statement(stmt, scope) -> None:
    """Apply one module-level statement's bindings to `scope` (see _Facts.bind)."""
    _Facts(stmt).bind(scope)


def _function_scope(fn, parent):
    """The names of a function (or lambda): its parameters and local bindings shadow the enclosing
    aliases; its own imports and `name = <path>` are aliases; `global` names are not local."""
    local: dict[str, str | None] = {}
    a = fn.args
    for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
        if arg is not None:
            local[arg.arg] = None
    declared_global, aliases = set(), []
    for stmt in _body(fn):
        for node in _own_nodes(stmt):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                local[node.name] = None
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                declared_global.update(node.names)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                aliases.append(node)
            elif isinstance(node, ast.Assign):
                aliases.append(node)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                local[node.id] = None
    scope = collections.ChainMap(local, parent)
    for node in aliases:
        if isinstance(node, ast.Assign):
            alias = _alias_assignment(node, scope)
            if alias:
                local[alias[0]] = alias[1]
        else:
            _bind_imports(node, local)
    for name in declared_global:
        local.pop(name, None)
    return scope


def _class_scope(cls, parent):
    local: dict[str, str | None] = {}
    for stmt in cls.body:
        _bind_statement(stmt, local)
    return collections.ChainMap(local, parent)


# ------------------------------------------------------------------ the rules

class _Rules:
    def __init__(self, forbidden: list[str], references=()):
        self.dotted = {_dotted(f): f for f in forbidden}
        self.methods = {f.split(":", 1)[1].split(".", 1)[1] for f in forbidden if ":Tensor." in f}
        self.last = {f.rsplit(".", 1)[-1].split(":")[-1] for f in forbidden}
        self.modules = {_dotted(f).rsplit(".", 1)[0] for f in forbidden}
        self.kernels = kernels_for(forbidden)
        self.last |= set(self.kernels)
        self.methods |= _tensor_methods(self.kernels)
        self.forbidden = forbidden
        self.roots = {f.split(".", 1)[0].split(":", 1)[0] for f in forbidden}
        self.identities: dict[str, dict[int, str]] = {}
        self.references = references
        self.findings: list[Finding] = []

    def hit(self, path: str | None) -> str | None:
        if not path:
            return None
        full = path
        while True:
            if full in self.dotted:
                return _dotted(self.dotted[full])
            if "." not in full:
                return None
            full = full.rsplit(".", 1)[0]

    def add(self, what: str, escape: bool) -> None:
        self.findings.append(Finding(what, escape))

    def path(self, path: str | None) -> None:
        if not path:
            return
        found = self.hit(path)
        root = path.split(".", 1)[0]
        if not found and root in self.roots and root not in self.identities:
            self.identities[root] = _identities(self.forbidden, root)     # (imports what it names)
        if not found and root in sys.modules:
            canonical, obj = _canonical(path)
            found = self.hit(canonical)
            if not found and obj is not _MISSING:
                for root in {path.split(".", 1)[0], canonical.split(".", 1)[0]} & self.roots:
                    if root not in self.identities:
                        self.identities[root] = _identities(self.forbidden, root)
                    found = found or self.identities[root].get(id(obj))
            if found and canonical != path and found != path:
                found = f"{path} ({found})"
            path = canonical
        parts = path.split(".")
        at = next((i for i, part in enumerate(parts) if i and part in self.kernels), None) \
            if self.kernels and parts[0] == "torch" else None
        if at is not None:    # (named up to the kernel: `torch.ops.aten.x.default` is `torch.ops.aten.x`)
            self.add(f"{found or '.'.join(parts[:at + 1])}, which runs {kernel_label(parts[at], self.kernels[parts[at]])}",
                     False)
        elif found:
            self.add(found, False)
        for prefix in ESCAPE_PATHS:
            if path == prefix or path.startswith(prefix + "."):
                self.add(prefix, True)
                break

    def copy(self, node) -> None:
        """A function or class that is a copy of a forbidden one (names, docstrings, comments and
        layout aside): the course's own, or a lesson cell's that the exercise forbids."""
        if not self.references or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        found = copied_from(node, self.references)
        if found:
            self.add(f"a copy of {found}", False)

    def node(self, node, scope, scan_source) -> None:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                if a.name == "*":
                    if any(m == node.module or m.startswith(node.module + ".") for m in self.modules):
                        self.add(f"from {node.module} import *", True)
                else:
                    self.path(f"{node.module}.{a.name}")
            self.path(node.module if node.module.split(".")[0] in ("importlib", "builtins") else None)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in ("importlib", "builtins"):
                    self.add(a.name.split(".")[0], True)
        elif isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                path = _resolve(node, scope)
                self.path(path)
                if path is None and node.id in ESCAPE_NAMES and node.id not in scope:
                    self.add(node.id, True)
        elif isinstance(node, ast.Attribute):
            self.path(_resolve(node, scope))
            if node.attr in self.methods:
                self.add(f"Tensor.{node.attr}", False)
            if node.attr in ESCAPE_ATTRIBUTES or (node.attr == "__dict__" and _resolve(node.value, scope)):
                self.add(node.attr, True)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id not in scope:
                if func.id in ("getattr", "setattr", "delattr", "hasattr") and len(node.args) >= 2:
                    key = node.args[1]
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        if key.value in self.last or key.value in ESCAPE_ATTRIBUTES:
                            self.add(f"{func.id}(..., {key.value!r})", True)
                    elif func.id != "hasattr" and _resolve(node.args[0], scope):
                        self.add(f"{func.id}() with a computed name on a module", True)
                elif func.id == "vars" and node.args and _resolve(node.args[0], scope):
                    self.add("vars() of a module", True)
            for kind, text in _magic_sources(node):
                if kind == "!":
                    self.add(text, True)
                else:
                    scan_source(text, scope)


# ------------------------------------------------------------------ copies of forbidden code

COPY_RATIO = 0.85        # difflib's ratio of two definitions' normalised token sequences
COPY_MIN_TOKENS = 40     # a smaller definition is what anyone would write: never a copy


def _without_docstring(body: list) -> list:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def _def_tokens(node) -> list[str]:
    """A def or class as tokens that leave out what a copy changes without changing what it does:
    its name, docstrings, annotations, comments and layout, the text of strings, and the names it
    binds (parameters and locals, renamed in the order they are bound)."""
    bound: dict[str, str] = {}
    for n in _walk(node):
        kind = type(n)
        if kind is ast.arg:
            bound.setdefault(n.arg, f"v{len(bound)}")
        elif kind is ast.Name and type(n.ctx) is not ast.Load:
            bound.setdefault(n.id, f"v{len(bound)}")
        elif n is not node and kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            bound.setdefault(n.name, f"v{len(bound)}")
    out: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        kind = type(n)
        if kind is ast.Name:
            out.append(bound.get(n.id, n.id))
            continue
        if kind is ast.Constant:
            out.append("<str>" if isinstance(n.value, (str, bytes)) else repr(n.value)[:24])
            continue
        if kind is ast.arg:
            out.append(bound[n.arg])
            continue
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef):
            out.append(kind.__name__)
            children = list(n.decorator_list) + [n.args] + _without_docstring(n.body)
        elif kind is ast.ClassDef:
            out.append("ClassDef")
            children = list(n.bases) + _without_docstring(n.body)
        elif kind is ast.AnnAssign:
            out.append("Assign")
            children = [n.target] + ([n.value] if n.value is not None else [])
        else:
            out.append("." + n.attr if kind is ast.Attribute else kind.__name__)
            children = _children(n)
        stack.extend(reversed(children))
    return out


def copied_from(node, references) -> str | None:
    """The label of the reference definition that `node` copies, or None. `references`:
    [(label, tokens)], tokens from _def_tokens."""
    tokens = _def_tokens(node)
    if len(tokens) < COPY_MIN_TOKENS:
        return None
    for label, reference in references:
        shorter, longer = sorted((len(tokens), len(reference)))
        if 2 * shorter < COPY_RATIO * (shorter + longer):   # the ratio cannot reach the threshold
            continue
        matcher = difflib.SequenceMatcher(None, tokens, reference, autojunk=False)
        if matcher.quick_ratio() >= COPY_RATIO and matcher.ratio() >= COPY_RATIO:
            return label
    return None


_REFERENCES: dict = {}


def _source_definitions(source: str):
    """The top-level defs and classes of `source` (a file, or a notebook cell: magics dropped)."""
    try:
        tree = ast.parse(source)
    except _PARSE_ERRORS:
        try:
            tree = ast.parse("\n".join("" if line.lstrip().startswith(("%", "!")) else line
                                       for line in source.splitlines()))
        except _PARSE_ERRORS:
            return []
    return [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def _reference_entries(label: str, node) -> list[tuple[str, list[str]]]:
    out = [(label, _def_tokens(node))]
    if isinstance(node, ast.ClassDef):   # and each method of a class on its own
        out += [(f"{label}.{m.name}", _def_tokens(m)) for m in node.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return [(l, t) for l, t in out if len(t) >= COPY_MIN_TOKENS]


def references_for(forbidden, exercise_id: str | None = None, uses=()) -> list[tuple[str, list[str]]]:
    """The definitions a learner's code must not copy: each forbidden course_lib function or class
    (read from its file), and the lesson's own defs and classes that are the graded object or a
    forbidden one by name (a lesson cell pasted into the exercise)."""
    key = (tuple(sorted(forbidden)), exercise_id, tuple(uses))
    if key in _REFERENCES:
        return _REFERENCES[key]
    import importlib
    import inspect
    import textwrap
    out: list[tuple[str, list[str]]] = []
    names = set(uses)
    for spec in sorted(forbidden):
        module_name, _, qualname = spec.partition(":")
        names.add(qualname.rsplit(".", 1)[-1])
        if module_name.split(".")[0] != "course_lib":
            continue
        try:
            obj = importlib.import_module(module_name)
            for part in qualname.split("."):
                obj = getattr(obj, part)
            node = _source_definitions(textwrap.dedent(inspect.getsource(obj)))
        except Exception:  # noqa: BLE001 - a forbidden name that is not there: nothing to copy
            continue
        for n in node[:1]:
            out += _reference_entries(_dotted(spec), n)
    out += _lesson_references(exercise_id, names)
    if len(_REFERENCES) > 32:
        _REFERENCES.clear()
    _REFERENCES[key] = out
    return out


def _lesson_references(exercise_id: str | None, names: set[str]) -> list[tuple[str, list[str]]]:
    prefix = (exercise_id or "").split(".")[0]
    if not prefix.isdigit():
        return []
    try:
        import json

        from .manifest import LESSONS
        lesson = next((l for l in LESSONS if l.number == int(prefix)), None)
        if lesson is None or not lesson.notebook.exists():
            return []
        cells = json.loads(lesson.notebook.read_text(encoding="utf-8"))["cells"]
    except Exception:  # noqa: BLE001 - no lesson notebook here: nothing to compare with
        return []
    out = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        for node in _source_definitions(source):
            if node.name in names:
                out += _reference_entries(f"the lesson's {node.name}", node)
    return out


def _magic_sources(node) -> list[tuple[str, str]]:
    """Python source inside `get_ipython().run_cell_magic('time', '', 'body')` and line magics."""
    out = []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr in ("run_cell_magic", "run_line_magic", "system", "getoutput"):
        consts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if node.func.attr in ("system", "getoutput"):
            out.append(("!", "shell commands"))
        elif consts:
            magic = consts[0]
            if magic not in MAGICS_ALLOWED:
                out.append(("!", f"the %{magic} magic"))
            out.extend(("src", c) for c in consts[1:])
    return out


def _parse(source: str, transform=None) -> list[ast.stmt]:
    """The statements of a cell as it runs (IPython syntax transformed); [] when it does not
    parse - then it does not run either (the learner's process compiles it the same way)."""
    try:
        return ast.parse(source).body          # plain Python: what IPython would run unchanged
    except SyntaxError:
        pass
    except _PARSE_ERRORS:                      # too deeply nested for Python itself: it cannot run
        return []
    try:
        return ast.parse((transform or globals()["transform"])(source)).body
    except _PARSE_ERRORS:
        return []


def _scan(statements, module_scope, forbidden: list[str], references=()) -> list[Finding]:
    """Findings in `statements`, each name resolved in the scope where it is used; a def or class
    among them that copies one of `references` (see references_for) is a finding too."""
    rules = _Rules(forbidden, references)
    work = [(stmt, module_scope, module_scope) for stmt in reversed(statements)]

    def scan_source(text, scope):
        for stmt in reversed(_parse(text)):
            work.append((stmt, scope, scope))

    while work:
        root, scope, outer = work.pop()
        for node in _own_nodes(root):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                rules.copy(node)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                child = _function_scope(node, outer)
                work.extend((part, child, child) for part in reversed(_body(node)))
            elif isinstance(node, ast.ClassDef):   # methods see the enclosing scope, not the class's
                work.extend((part, _class_scope(node, scope), outer) for part in reversed(node.body))
            else:
                rules.node(node, scope, scan_source)
    return rules.findings


def scan(statements, aliases, forbidden: list[str]) -> list[Finding]:
    """Findings in `statements` given module-level `aliases` (name -> imported path)."""
    return _scan(list(statements), dict(aliases), forbidden, references_for(forbidden))


# ------------------------------------------------------------------ which code a graded object depends on

def _defines(stmt) -> set[str]:
    names = set()
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(stmt.name)
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for a in stmt.names:
            names.add(a.asname or a.name.split(".")[0])
    else:
        for node in _walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


@contextlib.contextmanager
def _no_gc():
    """Parsing and walking build many objects and no cycles: the cyclic collector, which would
    rescan the growing heap again and again, only makes a large notebook superlinear."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Analysis:
    """The parsed learner code of one notebook, shared by its items. Every statement is walked
    a fixed number of times: the whole analysis is linear in the size of the code."""

    def __init__(self, learner_sources, official_sources, transform):
        self.scope: dict[str, str | None] = {}
        official_names: set[str] = set()
        for source in official_sources:
            for stmt in _parse(source, transform):
                _bind_statement(stmt, self.scope)
                official_names |= _defines(stmt)
        self.statements: list[ast.stmt] = []
        self.names: list[list[str]] = []       # per statement: the names it loads (any depth)
        self.defined: dict[str, list[int]] = {}
        self.defined_by_learner: set[str] = set()
        self._dynamic_candidates: list[int] = []
        pending = [stmt for source in learner_sources for stmt in _parse(source, transform)]
        pending.reverse()
        while pending:
            stmt = pending.pop()
            i = len(self.statements)
            self.statements.append(stmt)
            facts = _Facts(stmt)
            for text in reversed(facts.magic):   # magics wrap code in strings: their code counts too
                pending.extend(reversed(_parse(text)))
            self.names.append(facts.loads + list(facts.stores))
            facts.bind(self.scope)
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = {stmt.name}
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                names = {a.asname or a.name.split(".")[0] for a in stmt.names}
            else:
                names = facts.stores
            self.defined_by_learner |= names
            for name in names | facts.touches:
                self.defined.setdefault(name, []).append(i)
            if facts.dynamic and not names:
                self._dynamic_candidates.append(i)
        self.official_names = official_names

    def closure(self, uses) -> list[ast.stmt]:
        """The statements the objects named in `uses` depend on: their definitions and, transitively,
        the definitions of the top-level names those refer to. A graded name that no statement
        defines (bound by exec or globals()) depends on every statement that could bind it."""
        wanted: list[int] = []
        taken: set[int] = set()
        seen: set[str] = set()
        todo: list = list(uses)
        if any(n not in self.defined_by_learner and n not in self.official_names for n in uses):
            todo.append(None)
        while todo:
            name = todo.pop()
            if name is None:
                indices = self._dynamic_candidates
            elif name in seen:
                continue
            else:
                seen.add(name)
                indices = self.defined.get(name, ())
            for i in indices:
                if i in taken:
                    continue
                taken.add(i)
                wanted.append(i)
                todo.extend(n for n in self.names[i] if n in self.defined and n not in seen)
        return [self.statements[i] for i in sorted(wanted)]


_CACHE: dict = {}


def _analysis(learner_sources, official_sources, transform) -> _Analysis:
    key = (tuple(learner_sources), tuple(official_sources), transform)
    found = _CACHE.get(key)
    if found is None:
        with _no_gc():
            found = _Analysis(learner_sources, official_sources, transform)
        if len(_CACHE) >= 4:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = found
    return found


def static_findings(learner_sources: list[str], official_sources: list[str], uses, forbidden: list[str],
                    transform=None, exercise_id: str | None = None) -> list[Finding]:
    """Findings in the code that the objects named in `uses` depend on (see module docstring).
    Linear in the size of the code; the parsed cells are shared by the items of one notebook.
    With `exercise_id`, a copy of the lesson's own def of a graded or forbidden name counts too."""
    analysis = _analysis(learner_sources, official_sources, transform)
    references = references_for(forbidden, exercise_id, uses)
    # (module-level statements that define nothing, e.g. `builtins.f = course_lib...`, are left to
    # the dynamic trip-wires, so that a learner may compare with the course's version in a cell)
    with _no_gc():
        return _scan(analysis.closure(uses), collections.ChainMap({}, analysis.scope), forbidden, references)



def transform(source: str) -> str:
    """A cell's source as IPython runs it (magics become calls), so the AST sees what runs. Plain
    Python is returned as it is (IPython would not change it; a large cell costs no transform)."""
    try:
        ast.parse(source)
        return source
    except SyntaxError:
        pass
    except _PARSE_ERRORS:   # too deeply nested to parse: no magic would change that
        return source
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - a cell IPython cannot transform is checked as it is
        return source


def shortcut_feedback(exercise_id: str, learner_sources: list[str], official_sources: list[str], uses,
                      declared=(), transform=transform) -> str | None:
    """The one verdict on shortcuts, shared by `course grade` and the notebook's `check(...)`
    (hence `course check`): None, or the feedback of an item that is not graded."""
    findings = static_findings(learner_sources, official_sources, uses, forbidden_for(exercise_id, declared),
                               transform, exercise_id)
    if not findings:
        return None
    what = ", ".join(dict.fromkeys(f.what for f in findings))
    escape = any(f.escape for f in findings)
    return f"not graded: your code uses {what}; " + (
        "graded code must call functions directly (no dynamic imports or lookups)"
        if escape else "this exercise asks you to write it yourself")


def latest_definitions(sources: list[str], transform=transform) -> list[str]:
    """Cells as a kernel ran them, in order, reduced to what is still in force: a statement that
    (re)defines names replaces earlier statements that defined only those names (a learner who
    rewrote an answer is judged on the rewrite, as the grader judges the notebook's last text)."""
    kept: list[tuple[ast.stmt, set[str], str]] = []
    for source in sources:
        try:
            text = transform(source)
            tree = ast.parse(text)
        except _PARSE_ERRORS:   # (a cell that does not parse does not run either)
            continue
        for stmt in tree.body:
            names = _defines(stmt)
            if names:
                kept = [(s, n, t) for s, n, t in kept if not (n and n <= names)]
            kept.append((stmt, names, text))
    return [_unparse(stmt, text) for stmt, _, text in kept]


def _unparse(stmt, text: str) -> str:
    try:
        return ast.unparse(stmt)
    except RecursionError:   # a deeply nested expression: its own text (ast.unparse recurses)
        return ast.get_source_segment(text, stmt) or ""
