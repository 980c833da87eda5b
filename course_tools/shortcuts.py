"""What each exercise forbids, and the static check of the learner's cells.

An exercise forbids the course's own implementation of the object it grades and the torch
built-ins that do the whole job. A check may also declare more with
`@exercise(..., forbids=("torch.nn.functional:gelu",))`. Names are "module:qualname".

Two independent detectors use the same list:
- static (here): the AST of the learner's cells (answers and cells the learner added, after
  IPython's magics are transformed). Only the code the graded object depends on is examined:
  its definition and, transitively, the learner's top-level names it refers to, so a learner may
  still compare against the course's version in a cell of their own. Imports and attribute
  chains are resolved through aliases (`import torch.nn.functional as F; F.softmax`,
  `from course_lib import attention`, `from x import f as g`); `.name` on any object counts for
  Tensor methods; dynamic lookups (`__import__`, `importlib`, `getattr` with a computed name,
  `eval`/`exec`, `sys.modules`, `globals()`, `__dict__`, `vars`) in that code fail the item too,
  because they could reach anything.
- dynamic (driver.py): trip-wires in the learner's process while a graded call runs.
"""
from __future__ import annotations

import ast

SOFTMAX = ("torch:softmax", "torch.nn.functional:softmax", "torch:Tensor.softmax", "torch.nn:Softmax",
           "torch.special:softmax", "torch:log_softmax", "torch.nn.functional:log_softmax",
           "torch:Tensor.log_softmax", "torch:_softmax", "torch.nn.functional:softmin")
ATTENTION = ("torch.nn.functional:scaled_dot_product_attention", "torch.nn:MultiheadAttention",
             "torch.nn.functional:multi_head_attention_forward")
LAYER_NORM = ("torch.nn.functional:layer_norm", "torch:layer_norm", "torch:native_layer_norm",
              "torch.nn:LayerNorm", "torch.nn.functional:group_norm", "torch.nn:GroupNorm",
              "torch.nn.functional:rms_norm", "torch.nn:RMSNorm", "course_lib.layernorm:LayerNorm")
GELU = ("torch.nn.functional:gelu", "torch.nn:GELU", "torch:Tensor.gelu", "course_lib.activations:gelu",
        "course_lib.activations:GELU")

#: exercise-id prefix -> forbidden objects (every item whose id starts with the prefix).
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "00.softmax": SOFTMAX,
    "01.": ATTENTION + ("course_lib.attention:scaled_dot_product_attention",
                        "course_lib.attention:MultiHeadAttention"),
    "02.": ATTENTION + ("course_lib.self_attention:SelfAttention", "course_lib.attention:MultiHeadAttention"),
    "03.split-heads": ("course_lib.attention:split_heads", "course_lib.attention:MultiHeadAttention"),
    "03.merge-heads": ("course_lib.attention:merge_heads", "course_lib.attention:MultiHeadAttention"),
    "03.mha": ATTENTION + ("course_lib.attention:MultiHeadAttention",),
    "04.": ("course_lib.complexity:attention_flops", "course_lib.complexity:count_flops"),
    "05.": ("course_lib.positional:sinusoidal_table", "course_lib.positional:SinusoidalPositionalEncoding"),
    "06.": ("course_lib.embedding:ScaledEmbedding",),
    "07.": LAYER_NORM,
    "08.": ("course_lib.residual:Residual",),
    "09.linear": ("course_lib.schedules:linear_warmup_decay", "course_lib.schedules:make_scheduler"),
    "09.noam": ("course_lib.schedules:noam", "course_lib.schedules:make_scheduler"),
    "10.gelu": GELU,
    "10.feedforward": ("course_lib.feedforward:FeedForward",),
    "11.causal-mask": ("course_lib.transformer:causal_mask", "torch.nn:Transformer"),
    "11.decoder": ("course_lib.transformer:DecoderLayer", "torch.nn:TransformerDecoderLayer",
                   "torch.nn:TransformerEncoderLayer"),
    "12.": ("course_lib.weight_tying:tie_weights",),
    "13.": ("course_lib.tokenization:wordpiece", "course_lib.tokenization:WordPieceTokenizer"),
    "14.pack": ("course_lib.bert:pack_pair",),
    "14.input": ("course_lib.bert:BertEmbeddings", "course_lib.bert:BertModel"),
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
    "25.": ("course_lib.fast_inference:quantize_per_channel_int8",
            "course_lib.fast_inference:quantize_per_tensor_int8", "course_lib.fast_inference:dequantize_int8",
            "course_lib.fast_inference:quantization_error", "course_lib.fast_inference:quantize_int8",
            "torch:quantize_per_channel", "torch:quantize_per_tensor", "torch:fake_quantize_per_channel_affine",
            "torch:fake_quantize_per_tensor_affine", "torch.ao.quantization:quantize_dynamic"),
}

ESCAPES = {"__import__", "importlib", "eval", "exec", "compile", "globals", "vars", "locals",
           "__dict__", "__builtins__", "__getattribute__", "__subclasses__",
           "__globals__", "import_module", "run_path", "run_module", "_getframe"}
MAGICS_ALLOWED = {"time", "timeit", "capture", "matplotlib", "precision", "who", "whos", "config",
                  "pinfo", "pinfo2", "pdef", "pdoc", "psource", "debug", "prun", "lsmagic", "magic"}


def forbidden_for(exercise_id: str, declared=()) -> list[str]:
    out = list(declared)
    for prefix, names in FORBIDDEN.items():
        if exercise_id.startswith(prefix):
            out.extend(names)
    return sorted(set(out))


def _dotted(name: str) -> str:
    return name.replace(":", ".")


class _Scope(ast.NodeVisitor):
    """Collects alias bindings (import statements) of a module."""

    def __init__(self):
        self.aliases: dict[str, str] = {}

    def visit_Import(self, node):
        for a in node.names:
            if a.asname:
                self.aliases[a.asname] = a.name
            else:
                top = a.name.split(".")[0]
                self.aliases[top] = top

    def visit_ImportFrom(self, node):
        if node.level == 0 and node.module:
            for a in node.names:
                if a.name != "*":
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"


def _resolve(node, aliases) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        base = aliases.get(node.id)
        if base is None:
            return None
        return ".".join([base] + parts[::-1])
    return None


def _defines(stmt) -> set[str]:
    names = set()
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(stmt.name)
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for a in stmt.names:
            names.add(a.asname or a.name.split(".")[0])
    else:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


class Finding:
    def __init__(self, what: str, escape: bool):
        self.what, self.escape = what, escape


def _magic_sources(node) -> list[str]:
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


def scan(statements, aliases, forbidden: list[str]) -> list[Finding]:
    dotted = {_dotted(f): f for f in forbidden}
    methods = {f.split(":", 1)[1].split(".", 1)[1] for f in forbidden if ":Tensor." in f}
    last = {f.rsplit(".", 1)[-1].split(":")[-1] for f in forbidden}
    findings: list[Finding] = []

    def hit(path: str | None) -> str | None:
        if not path:
            return None
        for full, original in dotted.items():
            if path == full or path.startswith(full + "."):
                return _dotted(original)
        return None

    def visit(node):
        for sub in ast.walk(node):
            if isinstance(sub, ast.ImportFrom) and sub.module:
                for a in sub.names:
                    found = hit(f"{sub.module}.{a.name}") if a.name != "*" else None
                    if found:
                        findings.append(Finding(found, False))
                    if a.name == "*" and any(_dotted(f).startswith(sub.module + ".") for f in forbidden):
                        findings.append(Finding(f"from {sub.module} import *", True))
            elif isinstance(sub, ast.Import):
                for a in sub.names:
                    if a.name.split(".")[0] == "importlib":
                        findings.append(Finding("importlib", True))
            elif isinstance(sub, (ast.Attribute, ast.Name)):
                path = _resolve(sub, aliases)
                if path and path.startswith("sys.modules"):
                    findings.append(Finding("sys.modules", True))
                found = hit(path)
                if found:
                    findings.append(Finding(found, False))
                name = sub.attr if isinstance(sub, ast.Attribute) else sub.id
                if isinstance(sub, ast.Attribute) and name in methods:
                    findings.append(Finding(f"Tensor.{name}", False))
                if name in ESCAPES:
                    findings.append(Finding(name, True))
            elif isinstance(sub, ast.Call):
                func = sub.func
                if isinstance(func, ast.Name) and func.id in ("getattr", "setattr", "delattr", "hasattr"):
                    if len(sub.args) >= 2:
                        key = sub.args[1]
                        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                            findings.append(Finding(f"{func.id}() with a computed name", True))
                        elif key.value in last or key.value in ESCAPES:
                            findings.append(Finding(f"{func.id}(..., {key.value!r})", True))
                for kind, text in _magic_sources(sub):
                    if kind == "!":
                        findings.append(Finding(text, True))
                    else:
                        try:
                            inner = ast.parse(text)
                        except SyntaxError:
                            continue
                        visit(inner)
            elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                for f in dotted:
                    if f in sub.value:
                        findings.append(Finding(f"the string {f!r}", True))
    for stmt in statements:
        visit(stmt)
    return findings


def static_findings(learner_sources: list[str], official_sources: list[str], uses, forbidden: list[str],
                    transform) -> list[Finding]:
    """Findings in the code that the objects named in `uses` depend on (see module docstring)."""
    aliases: dict[str, str] = {}
    statements: list[ast.stmt] = []
    for source in official_sources:
        try:
            tree = ast.parse(transform(source))
        except SyntaxError:
            continue
        scope = _Scope()
        scope.visit(tree)
        aliases.update(scope.aliases)
    for source in learner_sources:
        try:
            tree = ast.parse(transform(source))
        except SyntaxError:
            continue
        statements.extend(tree.body)
        for stmt in tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                scope = _Scope()
                scope.visit(stmt)
                aliases.update(scope.aliases)
        for node in ast.walk(tree):   # magics wrap code in strings: parse those too
            for kind, text in _magic_sources(node):
                if kind == "src":
                    try:
                        statements.extend(ast.parse(text).body)
                    except SyntaxError:
                        pass
    defined: dict[str, list[ast.stmt]] = {}
    for stmt in statements:
        for name in _defines(stmt):
            defined.setdefault(name, []).append(stmt)
    wanted, seen, todo = [], set(), list(uses)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for stmt in defined.get(name, []):
            if id(stmt) in {id(s) for s in wanted}:
                continue
            wanted.append(stmt)
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and node.id in defined and node.id not in seen:
                    todo.append(node.id)
                if isinstance(node, ast.Global):
                    todo.extend(n for n in node.names if n not in seen)
    # (module-level statements that define nothing, e.g. `builtins.f = course_lib...`, are left to
    # the dynamic trip-wires, so that a learner may compare with the course's version in a cell)
    return scan(wanted, aliases, forbidden)
