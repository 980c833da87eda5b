"""Issue 31, Deliver 6: shortcut rules by kernel, not by name.

An item that forbids a function forbids the kernels behind it under every name: the torch.*
built-ins, torch._C._nn, torch._C._VariableFunctions, torch.ops.aten (packets and overloads), the
_native_* variants, Tensor methods; reached by attribute, getattr with a built string, a dict, an
import under another name, from another thread - and copies of a forbidden course function (exec of
its source, a pasted near-verbatim copy, the lesson's own def). Honest code keeps full marks.

- unit tests, in this process: the kernel families, the static rules (shortcuts.py), the copy
  fingerprint and the kernel watch (grader/learner/);
- the escapes the red team found (07, 13, 17, 24, 25) and their variants, each built from the
  current exercise and solution with one answer replaced, graded once in parallel by the sandboxed
  grader: 0 on every item of the graded object, with feedback that names the forbidden kernel;
- every honest variant of the corpus of those lessons, and their official solutions, through the
  same grader: full marks.
"""
from __future__ import annotations

import inspect
import textwrap
import threading
import time
from concurrent.futures import ProcessPoolExecutor

import pytest
import torch

from course_tools.grader.authoring import load_all
from course_tools.grader.learner import kernel_watch, tripwires
from course_tools.shortcuts import (KERNELS, forbidden_for, kernel_family, kernel_label, kernels_for,
                                    shortcut_feedback, static_findings)

pytestmark = pytest.mark.grader

REGISTRY = load_all()
LESSONS = (7, 13, 17, 24, 25)
ITEM_S, CELL_S = 8.0, 40.0


# ------------------------------------------------------------------ kernel families

@pytest.mark.parametrize("spec,family", [
    ("torch.nn.functional:rms_norm", "rms_norm"), ("torch.nn:RMSNorm", "rms_norm"),
    ("torch.nn:LayerNorm", "layer_norm"), ("torch:native_layer_norm", "layer_norm"),
    ("torch.nn:BatchNorm1d", "batch_norm"), ("torch.nn:SyncBatchNorm", "batch_norm"),
    ("torch.nn:LazyBatchNorm1d", "batch_norm"), ("torch:native_batch_norm", "batch_norm"),
    ("torch.nn:InstanceNorm1d", "instance_norm"), ("torch.nn:GroupNorm", "group_norm"),
    ("torch.nn.functional:cross_entropy", "cross_entropy"), ("torch.nn:CrossEntropyLoss", "cross_entropy"),
    ("torch.nn:NLLLoss", "nll_loss"), ("torch.nn:GELU", "gelu"), ("torch:Tensor.softmax", "softmax"),
    ("torch:_softmax", "softmax"), ("torch.special:softmax", "softmax"), ("torch.nn.functional:softmin", "softmax"),
    ("torch:quantize_per_channel", "quantize_per_channel"), ("torch:Tensor.int_repr", "int_repr"),
    ("torch.nn:CosineEmbeddingLoss", "cosine_embedding_loss"),
    ("torch.nn.functional:scaled_dot_product_attention", "scaled_dot_product_attention"),
    ("torch.nn:MultiheadAttention", "multi_head_attention"),
    ("torch.autograd:grad", None), ("course_lib.distillation:soft_target_loss", None),
    ("tokenizers.models:Unigram", None)])
def test_kernel_family_of_a_public_name(spec, family):
    assert kernel_family(spec) == family


def test_every_kernel_is_an_aten_operator_of_this_torch():
    """A renamed or removed operator would silently stop being watched: each family keeps at least
    its main operator, and a name that is no operator at all is a typo."""
    ops = {n.split("::", 1)[1].split(".")[0] for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")}
    unknown = sorted(op for family in KERNELS.values() for op in family if op not in ops)
    assert len(unknown) <= 4, unknown          # (a few are build-specific: cudnn, miopen, triton)
    assert all(any(op in ops for op in family) for family in KERNELS.values())


def test_the_check_of_an_item_names_kernels_only_for_torch_built_ins():
    kernels = kernels_for(forbidden_for("07.rms-norm"))
    assert {"rms_norm", "_fused_rms_norm", "native_layer_norm", "_native_batch_norm_legit"} <= set(kernels)
    assert kernel_label("rms_norm", kernels["rms_norm"]) == "aten::rms_norm (the kernel of torch.nn.functional.rms_norm)"
    assert not kernels_for(["course_lib.distillation:soft_target_loss", "tokenizers.models:Unigram"])
    # 17 forbids the loss kernels, never log_softmax (the honest way to write it)
    assert not {"log_softmax", "_log_softmax"} & set(kernels_for(forbidden_for("17.smoothed-mlm-loss",
                                                                              REGISTRY["17.smoothed-mlm-loss"].forbids)))


# ------------------------------------------------------------------ static rules: every alias of a forbidden kernel

RMS = ["torch.nn.functional:rms_norm", "torch.nn:RMSNorm", "torch.nn.functional:batch_norm"]


@pytest.mark.parametrize("what,source", [
    ("torch.X", "import torch\ndef f(x):\n    return torch.rms_norm(x, (4,))\n"),
    ("_C._VariableFunctions", "import torch\ndef f(x):\n    return torch._C._VariableFunctions.rms_norm(x, (4,))\n"),
    ("ops.aten overload", "import torch\ndef f(x):\n    return torch.ops.aten.rms_norm.default(x, [4])\n"),
    ("_native_ variant", "import torch\ndef f(x):\n    return torch._native_batch_norm_legit(x, None, None, True, 0.1, 1e-5)\n"),
    ("private variant, imported", "from torch import _fused_rms_norm as g\ndef f(x):\n    return g(x, [4], None, 1e-6)\n"),
    ("through a module's module", "import torch.nn.functional as F\ndef f(x):\n    return F.torch.rms_norm(x, (4,))\n"),
    ("private module path", "from torch.nn.modules.normalization import RMSNorm as N\ndef f(x):\n    return N(4)(x)\n"),
    ("getattr with the kernel's name", "def f(x, m):\n    return getattr(m, 'rms_norm')(x, (4,))\n"),
    ("getattr with a built name on a module", "import torch\ndef f(x):\n    return getattr(torch, 'rms' + '_norm')(x, (4,))\n"),
    ("alias by assignment", "import torch\nK = torch.rms_norm\ndef f(x):\n    return K(x, (4,))\n"),
    ("a dict in the closure", "import torch\nT = {'n': torch.rms_norm}\ndef f(x):\n    return T['n'](x, (4,))\n"),
])
def test_static_rules_name_every_alias_of_a_forbidden_kernel(what, source):
    findings = static_findings([source], ["import torch"], ["f"], RMS)
    assert findings, what
    text = " ".join(f.what for f in findings)
    assert any(word in text for word in ("rms_norm", "batch_norm", "RMSNorm", "getattr")), (what, text)


def test_static_rules_follow_private_paths_to_a_c_class():
    item = "13.unigram-viterbi"
    forbidden = forbidden_for(item, REGISTRY[item].forbids)
    for source in ("import tokenizers.tokenizers as T\ndef f(w):\n    return T.models.Unigram([])\n",
                   "from tokenizers import tokenizers as T\ndef f(w):\n    m = T.models\n    return m.Unigram([])\n"):
        assert "tokenizers.models.Unigram" in " ".join(f.what for f in static_findings([source], [], ["f"], forbidden))


@pytest.mark.parametrize("source", [
    "import torch\ndef f(x):\n    return x.log_softmax(-1)\n",                          # not forbidden in 17
    "import torch\ndef f(x):\n    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)\n",
    "import torch.nn.functional as F\ndef f(x):\n    return F.linear(x, x)\n",
    "def f(x):\n    '''Not torch.rms_norm nor F.cross_entropy: by hand.'''\n    return x\n",
    "import torch\ndef f(m, x):\n    return m.norm(x)\n",                                # an own method named norm
])
def test_static_rules_leave_honest_code_alone(source):
    forbidden = RMS + list(REGISTRY["17.smoothed-mlm-loss"].forbids)
    assert not static_findings([source], ["import torch"], ["f"], forbidden), source


def _course_source(obj) -> str:
    return textwrap.dedent(inspect.getsource(obj))


def test_static_rules_find_a_near_verbatim_copy_of_a_forbidden_course_function():
    from course_lib import distillation
    copy = (_course_source(distillation.soft_target_loss)
            .replace("student_logits", "s").replace("teacher_logits", "t").replace("log_p_s", "a")
            .replace("log_p_t", "b").replace("soft_target_loss", "_mine"))
    copy = copy.replace(copy[copy.index('"""'):copy.index('"""', copy.index('"""') + 3) + 3], '"""Mine."""')
    source = ("import torch\nimport torch.nn.functional as F\nfrom course_lib.distillation import require_positive, "
              "require_shape\n\n" + copy +
              "\n\ndef f(s, t, mask, T):\n    return _mine(s[mask.bool()], t[mask.bool()], T)\n")
    forbidden = ["course_lib.distillation:soft_target_loss"]
    found = [x.what for x in static_findings([source], [], ["f"], forbidden)]
    assert "a copy of course_lib.distillation.soft_target_loss" in found, found


def test_static_rules_find_the_lessons_own_def_pasted():
    import json

    from course_tools.manifest import LESSONS
    lesson = next(l for l in LESSONS if l.number == 24)
    cells = ["".join(c["source"]) for c in json.loads(lesson.notebook.read_text(encoding="utf-8"))["cells"]
             if c["cell_type"] == "code"]
    pasted = next((c for c in cells if "def soft_target_loss" in c), None)
    if pasted is None:
        pytest.skip("lesson 24 no longer defines soft_target_loss")
    definition = pasted[pasted.index("def soft_target_loss"):].split("\n\n\n")[0]
    source = ("import torch\nimport torch.nn.functional as F\n\n" + definition +
              "\n\ndef token_distillation_loss(s, t, mask, T):\n    real = mask.bool()\n"
              "    return soft_target_loss(s[real], t[real], T)\n")
    item = "24.token-distillation"
    if item not in REGISTRY:
        pytest.skip("exercise 24 no longer grades token_distillation_loss")
    found = shortcut_feedback(item, [source], [], REGISTRY[item].uses, REGISTRY[item].forbids)
    assert found and "soft_target_loss" in found, found


# ------------------------------------------------------------------ the copy fingerprint (grader/learner/tripwires.py)

def _function(source: str, name: str, namespace=None):
    namespace = {} if namespace is None else namespace
    exec(compile(source, "<learner>", "exec"), namespace)   # noqa: S102 - our own test code
    return namespace[name]


def test_fingerprint_sees_through_renames_docstrings_layout_and_future_flags():
    from course_lib import distillation
    original = distillation.soft_target_loss
    source = _course_source(original)          # exec'd alone: no `from __future__ import annotations`
    renamed = (source.replace("student_logits", "s").replace("log_p_s", "a").replace("log_p_t", "b")
               .replace('"""T²', '"""my own words; T²').replace("\n    C = ", "\n\n    # a comment\n    C = "))
    for text in (source, renamed):
        copy = _function(text, "soft_target_loss", dict(vars(distillation)))
        assert tripwires.fingerprint(copy.__code__) == tripwires.fingerprint(original.__code__)
    assert tripwires.fingerprint(distillation.distillation_loss.__code__) != tripwires.fingerprint(original.__code__)


def test_fingerprint_of_a_small_function_keeps_its_names():
    """Two people writing the same two lines differ in their names, if anywhere: not a copy."""
    a = _function("def f(x):\n    return x.sum() + 1\n", "f")
    b = _function("def g(y):\n    return y.sum() + 1\n", "g")
    assert tripwires.fingerprint(a.__code__) != tripwires.fingerprint(b.__code__)


# ------------------------------------------------------------------ the kernel watch (grader/learner/kernel_watch.py), in this process

def test_kernel_watch_sees_every_route_to_a_kernel_and_nothing_else():
    import operator
    import queue

    import torch.nn.functional as F
    labels = {op: kernel_label(op, public) for op, public in kernels_for(RMS + ["torch.nn.functional:cross_entropy"]).items()}
    x = torch.randn(3, 4, requires_grad=True)
    target = torch.zeros(3, dtype=torch.long)
    jobs, done = queue.Queue(), queue.Queue()

    def worker():
        while True:
            job = jobs.get()
            if job is None:
                return
            done.put(job())
    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    routes = {
        "torch.X": (lambda: torch.rms_norm(x, (4,)), "aten::rms_norm"),
        "attrgetter with a built name": (lambda: operator.attrgetter("rms" + "_norm")(torch)(x, (4,)), "aten::rms_norm"),
        "a worker thread": (lambda: (jobs.put(lambda: F.rms_norm(x, (4,))), done.get())[1], "aten::rms_norm"),
        "_native_ variant": (lambda: torch._native_batch_norm_legit(x.detach()[None], None, None, True, 0.1, 1e-5),
                             "aten::_native_batch_norm_legit"),
        "torch._C._nn through a dict": (lambda: {"ce": torch._C._nn.cross_entropy_loss}["ce"](x, target),
                                        "aten::cross_entropy_loss"),
        "ops.aten overload": (lambda: torch.ops.aten.rms_norm.default(x, [4]), "aten::rms_norm"),
        "honest": (lambda: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6), None),
        "honest log-softmax": (lambda: -x.log_softmax(-1).gather(-1, target[:, None]).mean(), None),
    }
    try:
        for what, (call, expected) in routes.items():
            watch = kernel_watch.KernelWatch(labels)
            watch.start()
            try:
                call()
            finally:
                seen = watch.stop()
            if expected is None:
                assert seen == [], (what, seen)
            else:
                assert any(s.startswith(expected + " ") for s in seen), (what, seen)
    finally:
        jobs.put(None)
        thread.join(5)


def test_kernel_watch_notices_a_profiler_switched_off():
    from torch.autograd import _disable_profiler
    watch = kernel_watch.KernelWatch({"rms_norm": "x"})
    watch.start()
    _disable_profiler()
    assert any("switched off" in s for s in watch.stop())


# ------------------------------------------------------------------ sandboxed: the escapes and the honest corpus

def _lesson_tools():
    from tests import test_corpus
    return test_corpus


def _answer_index(number: int, name: str) -> int:
    import ast
    answers = _lesson_tools()._cells(number)[1]
    for i, source in enumerate(answers):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        if any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name for n in tree.body):
            return i
    raise LookupError(f"exercise {number:02d} has no answer cell defining {name}")


# lesson, graded name, the answer cell's replacement, the words the feedback must hold
ESCAPES = {
    # --- 00: the watch switched off, restarted, or the work done in another process
    "00-profiler-switched-off": (0, "softmax", '''import torch

_SMUGGLED = []
_SMUGGLED.append((torch.autograd._disable_profiler, torch.softmax))


def softmax(x, mask=None):
    if mask is not None:
        x = x.masked_fill(~mask, -1e9)
    off, fused = _SMUGGLED[0]
    off()
    return fused(x, dim=-1)
''', "switched off the grader's kernel checks"),
    "00-profiler-restarted": (0, "softmax", '''import torch

_SMUGGLED = []
_SMUGGLED.append((torch.autograd._disable_profiler, torch.autograd.profiler.profile, getattr(torch.ops.aten, "_softmax")))


def softmax(x, mask=None):
    if mask is not None:
        x = x.masked_fill(~mask, -1e9)
    off, profile, fused = _SMUGGLED[0]
    off()
    profile().__enter__()
    return fused(x, -1, False)
''', "switched off the grader's kernel checks"),
    "00-forked-process": (0, "softmax", '''import os
import pickle

import torch

_SMUGGLED = []
_SMUGGLED.append((os.fork, os.pipe, torch.softmax))


def softmax(x, mask=None):
    if mask is not None:
        x = x.masked_fill(~mask, -1e9)
    fork, pipe, fused = _SMUGGLED[0]
    r, w = pipe()
    if fork() == 0:
        os.write(w, pickle.dumps(fused(x, dim=-1)))
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.close(r)
    return pickle.loads(data)
''', "os.fork"),
    # --- 07: the norm kernels under other names, a worker thread, a dict
    "07-torch-rms-norm": (7, "rms_norm", '''import torch


def rms_norm(x, weight, eps=1e-6):
    return torch.rms_norm(x.float(), (x.shape[-1],), weight.float(), eps).to(x.dtype)
''', "aten::rms_norm"),
    "07-native-batch-norm-legit": (7, "rms_norm", '''import torch


def rms_norm(x, weight, eps=1e-6):
    work = x.float()
    rows = work.reshape(-1, work.shape[-1])
    mirrored = torch.cat([rows, -rows], dim=-1)[None]        # zero mean: its variance is mean(x^2)
    out = torch._native_batch_norm_legit(mirrored, None, None, True, 0.0, eps)[0][0, :, :work.shape[-1]]
    return (out.reshape(work.shape) * weight.float()).to(x.dtype)
''', "aten::_native_batch_norm_legit"),
    "07-worker-thread": (7, "rms_norm", '''import queue
import threading

import torch
import torch.nn.functional as F

_requests, _answers = queue.Queue(), queue.Queue()


def _serve():
    while True:
        x, weight, eps = _requests.get()
        _answers.put(F.rms_norm(x.float(), (x.shape[-1],), weight.float(), eps).to(x.dtype))


threading.Thread(target=_serve, daemon=True).start()


def rms_norm(x, weight, eps=1e-6):
    _requests.put((x, weight, eps))
    return _answers.get()
''', "aten::rms_norm"),
    "07-raw-thread-and-attrgetter": (7, "rms_norm", '''import _thread
import operator

import torch

_NAME = "rms" + "_norm"


def rms_norm(x, weight, eps=1e-6):
    done, out = _thread.allocate_lock(), []
    done.acquire()

    def work():
        fn = operator.attrgetter(_NAME)(torch)
        out.append(fn(x.float(), (x.shape[-1],), weight.float(), eps).to(x.dtype))
        done.release()
    _thread.start_new_thread(work, ())
    done.acquire()
    return out[0]
''', "aten::rms_norm"),
    "07-batch-norm-through-a-dict": (7, "MaskedBatchNorm", '''import torch
from torch import nn

_KERNELS = {}
_KERNELS.update(bn=torch._native_batch_norm_legit)


class MaskedBatchNorm(nn.Module):
    def __init__(self, d, eps=1e-5, momentum=0.1):
        super().__init__()
        self.eps, self.momentum = eps, momentum
        self.weight, self.bias = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))
        self.register_buffer("running_mean", torch.zeros(d))
        self.register_buffer("running_var", torch.ones(d))

    def forward(self, x, attention_mask=None):
        real = torch.ones(x.shape[:-1], dtype=torch.bool) if attention_mask is None else attention_mask.bool()
        y = _KERNELS["bn"](x[real], self.weight, self.bias, self.running_mean, self.running_var,
                           self.training, self.momentum, self.eps)[0]
        out = torch.zeros_like(x + 0 * self.weight)
        out[real] = y
        return out
''', "aten::_native_batch_norm_legit"),
    # --- 17: the loss kernels through a dict, an overload packet found by a built name
    "17-c-nn-through-a-dict": (17, "smoothed_mlm_loss", '''import torch

_LOSSES = {}
_LOSSES.update(ce=torch._C._nn.cross_entropy_loss)


def smoothed_mlm_loss(prediction_logits, labels, smoothing):
    V = prediction_logits.shape[-1]
    return _LOSSES["ce"](prediction_logits.reshape(-1, V), labels.reshape(-1), None, 1, -100, smoothing)
''', "aten::cross_entropy_loss"),
    "17-ops-aten-packet-by-a-built-name": (17, "smoothed_mlm_loss", '''import torch

_PACKETS = {}
_PACKETS.update(nll=getattr(torch.ops.aten, "nll_loss" + "_nd"))


def smoothed_mlm_loss(prediction_logits, labels, smoothing):
    keep = labels != -100
    logp = prediction_logits[keep].log_softmax(dim=-1)
    nll = _PACKETS["nll"](logp, labels[keep], None, 1, -100)
    return (1 - smoothing) * nll - smoothing * logp.mean(dim=-1).mean()
''', "aten::nll_loss"),
    # --- 25: torch.ops.aten.quantize_per_channel, by a built name and by its overload
    "25-ops-aten-quantize-per-channel": (25, "quantize_asymmetric", '''import torch

_OPS = {}
_OPS.update(quantize=getattr(torch.ops.aten, "quantize_per_" + "channel").default, levels=torch.Tensor.int_repr)


def quantize_asymmetric(weight):
    w = weight.to(torch.float32)
    lo = w.min(dim=1).values.clamp(max=0)
    hi = w.max(dim=1).values.clamp(min=0)
    scale = (hi - lo) / 255
    scale[scale == 0] = 1.0
    zero_point = torch.clamp(-torch.round(lo / scale), 0, 255).long()
    q = _OPS["quantize"](w, scale.double(), zero_point, 0, torch.quint8)
    return _OPS["levels"](q), scale, zero_point
''', "aten::quantize_per_channel"),
    "25-ops-aten-overload-in-the-answer": (25, "quantize_asymmetric", '''import torch


def quantize_asymmetric(weight):
    w = weight.to(torch.float32)
    lo = w.min(dim=1).values.clamp(max=0)
    hi = w.max(dim=1).values.clamp(min=0)
    scale = (hi - lo) / 255
    scale[scale == 0] = 1.0
    zero_point = torch.clamp(-torch.round(lo / scale), 0, 255).long()
    q = torch.ops.aten.quantize_per_channel.default(w, scale.double(), zero_point, 0, torch.quint8)
    return q.int_repr(), scale, zero_point
''', "aten::quantize_per_channel"),
    # --- 13: tokenizers' Unigram by a private path, and found outside the graded code
    "13-unigram-by-a-private-path": (13, "unigram_segment", '''from tokenizers import tokenizers as _private


def unigram_segment(word, log_probs, unk_token="[UNK]"):
    vocab = [(unk_token, -1e9)] + [(p, s) for p, s in log_probs.items() if p != unk_token]
    model = _private.models.Unigram(vocab, 0, False)
    pieces = [t.value for t in model.tokenize(word)]
    return pieces if all(p in log_probs for p in pieces) else [unk_token]
''', "tokenizers.models.Unigram"),
    "13-unigram-found-outside-the-answer": (13, "unigram_segment", '''import tokenizers

_FOUND = {}
_FOUND.update(vars(vars(tokenizers)["tokenizers"])["models"].__dict__)


def unigram_segment(word, log_probs, unk_token="[UNK]"):
    vocab = [(unk_token, -1e9)] + [(p, s) for p, s in log_probs.items() if p != unk_token]
    model = _FOUND["Unigram"](vocab, 0, False)
    pieces = [t.value for t in model.tokenize(word)]
    return pieces if all(p in log_probs for p in pieces) else [unk_token]
''', "tokenizers.models.Unigram"),
    # --- 24: the course's soft_target_loss, exec'd from its source, pasted, and the lesson's
    "24-exec-of-the-course-function": (24, "token_distillation_loss", '''import inspect

import course_lib.distillation as _D

_NS = {}
_NS.update(vars(_D))
exec(inspect.getsource(_D.soft_target_loss), _NS)


def token_distillation_loss(student_logits, teacher_logits, attention_mask, temperature):
    real = attention_mask.bool()
    return _NS["soft_target_loss"](student_logits[real], teacher_logits[real], temperature)
''', "course_lib.distillation.soft_target_loss"),
    "24-exec-of-the-course-function-in-a-thread": (24, "token_distillation_loss", '''import inspect
import queue
import threading

import course_lib.distillation as _D

_NS, _IN, _OUT = {}, queue.Queue(), queue.Queue()
_NS.update(vars(_D))
exec(inspect.getsource(_D.soft_target_loss).replace("student_logits", "s").replace("log_p_s", "a"), _NS)


def _serve():
    while True:
        _OUT.put(_NS["soft_target_loss"](*_IN.get()))


threading.Thread(target=_serve, daemon=True).start()


def token_distillation_loss(student_logits, teacher_logits, attention_mask, temperature):
    real = attention_mask.bool()
    _IN.put((student_logits[real], teacher_logits[real], temperature))
    return _OUT.get()
''', "course_lib.distillation.soft_target_loss"),
}


def _pasted_copy() -> str:
    """The course's soft_target_loss pasted with its own names, docstring and comments changed."""
    from course_lib import distillation
    source = _course_source(distillation.soft_target_loss)
    start = source.index('"""')
    source = source[:start] + '"""Mine."""' + source[source.index('"""', start + 3) + 3:]
    source = (source.replace("soft_target_loss", "_soft").replace("student_logits", "student")
              .replace("teacher_logits", "teacher").replace("log_p_s", "log_q").replace("log_p_t", "log_p"))
    return ('import torch\nimport torch.nn.functional as F\n'
            'from course_lib.distillation import require_positive, require_shape\n\n\n'
            + source + '''

def token_distillation_loss(student_logits, teacher_logits, attention_mask, temperature):
    real = attention_mask.bool()
    return _soft(student_logits[real], teacher_logits[real], temperature)
''')


def _forward_replaced() -> str:
    """07's answer that measures with the grader's norm module, after replacing that module's forward
    with one that also runs a forbidden kernel: the grader's module is trusted only as it came."""
    answers = _lesson_tools()._cells(7)[1]
    source = answers[_answer_index(7, "output_change")]
    return source + '''


import torch

_SMUGGLED = {}
_SMUGGLED.update(rms=torch.rms_norm)
_measured_output_change = output_change


def output_change(norm, batch_a, batch_b, count_padding=True):
    own = type(norm).forward
    norm.forward = lambda x, *args, **kwargs: own(norm, x, *args, **kwargs) + 0 * _SMUGGLED["rms"](x, (x.shape[-1],))
    return _measured_output_change(norm, batch_a, batch_b, count_padding)
'''


def _escapes() -> dict:
    out = dict(ESCAPES)
    out["24-near-verbatim-copy"] = (24, "token_distillation_loss", _pasted_copy(),
                                    "a copy of course_lib.distillation.soft_target_loss")
    try:
        out["07-grader-module-forward-replaced"] = (7, "output_change", _forward_replaced(),
                                                    "which this exercise asks you not to use")
    except LookupError:      # (exercise 07 no longer hands the learner the grader's modules)
        pass
    return out


def _honest_cases() -> dict:
    corpus = _lesson_tools().CORPORA
    out = {}
    for number in LESSONS:
        out[f"{number:02d}-solution"] = (number, {})
        for honest in getattr(corpus.get(number), "HONEST", []):
            out[f"{number:02d}-honest-{honest.name}"] = (number, honest.answers)
    return out


def _grade(path):
    from course_tools.grader import GradeError, grade
    started = time.monotonic()
    try:
        report = grade(path, cell_timeout=CELL_S, item_timeout=ITEM_S)
    except GradeError as error:
        report = error.as_json()
    report["seconds"] = round(time.monotonic() - started, 1)
    return report


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tools = _lesson_tools()
    folder = tmp_path_factory.mktemp("kernels")
    jobs, skipped = {}, {}
    for name, (number, graded_name, source, _) in _escapes().items():
        try:
            replaced = {_answer_index(number, graded_name): source}
        except LookupError as why:
            skipped[name] = str(why)
            continue
        jobs[f"escape:{name}"] = tools._notebook_file(number, replaced, folder, f"escape-{name}")
    for name, (number, replaced) in _honest_cases().items():
        try:
            jobs[f"honest:{name}"] = tools._notebook_file(number, replaced, folder, f"honest-{name}")
        except AssertionError as why:      # the corpus names an answer cell the exercise lost
            skipped[f"honest:{name}"] = str(why)
    names = list(jobs)
    with ProcessPoolExecutor(2) as pool:
        reports = dict(zip(names, pool.map(_grade, [jobs[n] for n in names])))
    return {"reports": reports, "skipped": skipped}


@pytest.mark.parametrize("name", list(_escapes()))
def test_escape_scores_zero_on_its_items_with_feedback_naming_the_kernel(graded, name):
    if name in graded["skipped"]:
        pytest.skip(graded["skipped"][name])
    number, graded_name, _, words = _escapes()[name]
    report = graded["reports"][f"escape:{name}"]
    assert "items" in report, report
    mine = [i for i in report["items"] if graded_name in REGISTRY[i["id"]].uses]
    assert mine, report
    assert all(i["points"] == 0 for i in mine), report
    assert all(words in i["feedback"] for i in mine), [i["feedback"] for i in mine]


@pytest.mark.parametrize("name", list(_honest_cases()))
def test_honest_corpus_and_solution_keep_full_marks(graded, name):
    key = f"honest:{name}"
    if key in graded["skipped"]:
        pytest.skip(graded["skipped"][key])
    report = graded["reports"][key]
    assert "items" in report, report
    failed = {i["id"]: i["feedback"] for i in report["items"] if not i["passed"] and not i.get("manual")}
    assert report["score"] == report["max_score"] > 0 and not failed, failed
