"""Knowledge distillation (lesson 24): soft targets with a temperature, the T² factor, a
half-depth student initialised from the teacher's layers (DistilBERT), and PKD's
intermediate-layer matching (skip vs last).

Soft targets (Hinton, Vinyals & Dean 2015). Divide both models' logits by a temperature T,
soften them with a softmax and make the student's distribution match the teacher's:

    p_t = softmax(t / T),  p_s = softmax(s / T)
    soft loss = T² · KL(p_t || p_s), averaged over the rows of the batch

Hinton et al. write the cross-entropy H(p_t, p_s); it differs from the KL divergence by the
teacher's entropy, a constant for the student, so the gradients are the same. We use the KL
divergence (as DistilBERT and `F.kl_div` do): it is 0 when the student matches the teacher.
The gradient with respect to one student logit is (p_s - p_t) / (T · B): it shrinks with T, as
1/T² when T is large compared with the logits. Multiplying by T² keeps the soft term's gradient
of the same size whatever T, so that changing T does not silently re-weight it against the
hard-label term:

    loss = alpha · soft loss + (1 - alpha) · cross-entropy(s, labels)      (at T = 1)

Students. DistilBERT keeps the width and halves the depth, and initialises the student from
the teacher by "taking one layer out of two" (`student_from_teacher`; the released extraction
script picked layers 0, 2, 4, 7, 9, 11 of BERT-base, so the last layer is kept too). Patient KD
(Sun et al. 2019) also makes the student's [CLS] vectors at its intermediate layers match the
teacher's, normalised, at layers chosen every few layers ("skip") or the last ones ("last")
(`pkd_layer_map`, `pkd_loss`).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .bert import BertConfig, BertModel
from .validation import require_int, require_positive, require_positive_int, require_probability, require_shape


def soft_target_loss(student_logits, teacher_logits, temperature: float = 1.0,
                     scale_by_t2: bool = True) -> torch.Tensor:
    """T² · KL(softmax(teacher / T) || softmax(student / T)), mean over rows; a 0-d tensor.

    student_logits, teacher_logits: (..., C), the same shape; every leading position is a row.
    The teacher is a fixed target: no gradient flows into `teacher_logits`.
    scale_by_t2=False leaves out the T² factor (to measure what it is for).
    """
    require_shape("teacher_logits", teacher_logits, student_logits.shape, "student_logits")
    require_positive("temperature", temperature)     # inf: every softmax uniform, the loss NaN
    C = student_logits.shape[-1]
    log_p_s = F.log_softmax(student_logits.reshape(-1, C) / temperature, dim=-1)       # (N, C)
    log_p_t = F.log_softmax(teacher_logits.detach().reshape(-1, C) / temperature, dim=-1)
    # "batchmean": sum over classes, mean over rows (reduction="mean" would also divide by C)
    kl = F.kl_div(log_p_s, log_p_t, reduction="batchmean", log_target=True)
    return kl * temperature ** 2 if scale_by_t2 else kl


def distillation_loss(student_logits, teacher_logits, labels, temperature: float = 2.0,
                      alpha: float = 0.5, scale_by_t2: bool = True) -> torch.Tensor:
    """alpha · soft_target_loss(T) + (1 - alpha) · cross_entropy(student_logits, labels).

    student_logits, teacher_logits: (B, C); labels: (B,) class ids (the hard labels, at T = 1),
    -100 where a row has none; an unlabelled batch (all -100) has no hard term (0), as in
    `course_lib.bert.mlm_cross_entropy`.
    """
    require_shape("labels", labels, student_logits.shape[:1], "the batch of student_logits")
    require_probability("alpha", alpha)
    soft = soft_target_loss(student_logits, teacher_logits, temperature, scale_by_t2)
    if not bool((labels != -100).any()):
        # an unlabelled batch (all -100): no hard term, as mlm_cross_entropy - not cross_entropy's
        # 0/0 = NaN; the graft keeps backward() working
        hard = student_logits.sum() * 0.0
    else:
        hard = F.cross_entropy(student_logits, labels)
    return alpha * soft + (1 - alpha) * hard


# -- students --------------------------------------------------------------------------------

def every_other_layer(num_layers: int) -> list[int]:
    """DistilBERT's choice, "one layer out of two": [0, 2, 4, ...] of `num_layers` layers."""
    num_layers = require_int("num_layers", num_layers, minimum=2)    # numpy ints too, not bools
    return list(range(0, num_layers, 2))


def student_from_teacher(teacher: BertModel, layers: list[int] | None = None) -> BertModel:
    """A BertModel as wide as `teacher`, with copies of the teacher's layers `layers` (0-based,
    increasing; default `every_other_layer`), its embeddings and its pooler.

    The student owns its weights (copies): training it leaves the teacher unchanged.
    """
    n = teacher.config.num_hidden_layers
    layers = every_other_layer(n) if layers is None else list(layers)
    if not layers or layers != sorted(set(layers)) or not 0 <= layers[0] <= layers[-1] < n:
        raise ValueError(f"layers: expected increasing distinct layer indices in [0, {n}), got {layers!r}")
    config = BertConfig(**{**teacher.config.to_dict(), "num_hidden_layers": len(layers)})
    student = BertModel(config).to(next(teacher.parameters()).device)
    student.embeddings.load_state_dict(teacher.embeddings.state_dict())
    student.pooler.load_state_dict(teacher.pooler.state_dict())
    for mine, theirs in zip(student.layers, layers):
        mine.load_state_dict(teacher.layers[theirs].state_dict())
    return student


def pkd_layer_map(teacher_layers: int, student_layers: int, strategy: str = "skip") -> list[int]:
    """The teacher layers (1-based, as indices into BertModel's `hidden_states`) that PKD
    matches to the student's layers 1 .. student_layers - 1 (the last layer is trained by the
    soft-target loss on the logits).

    "skip": every teacher_layers / student_layers layers (12 -> 6: [2, 4, 6, 8, 10]);
    "last": the last ones before the top (12 -> 6: [7, 8, 9, 10, 11]).
    """
    require_positive_int("student_layers", student_layers)
    if student_layers > teacher_layers or (strategy == "skip" and teacher_layers % student_layers):
        raise ValueError(f"student_layers: expected at most teacher_layers={teacher_layers} (and a divisor "
                         f"of it for the skip strategy), got {student_layers}")
    if strategy == "skip":
        step = teacher_layers // student_layers
        return [step * j for j in range(1, student_layers)]
    if strategy == "last":
        return [teacher_layers - student_layers + j for j in range(1, student_layers)]
    raise ValueError(f"strategy: expected 'skip' or 'last', got {strategy!r}")


def pkd_loss(student_hidden, teacher_hidden) -> torch.Tensor:
    """PKD's patient loss: sum over matched layers of the squared distance between the
    L2-normalised [CLS] vectors, mean over the batch; a 0-d tensor.

    student_hidden, teacher_hidden: sequences (one entry per matched layer) of (B, H) [CLS]
    vectors, or (B, T, H) hidden states whose position 0 is taken. The teacher is a fixed target.
    """
    if len(student_hidden) != len(teacher_hidden) or not len(student_hidden):   # zip would drop some
        raise ValueError(f"student_hidden: expected as many layers as teacher_hidden "
                         f"({len(teacher_hidden)}), at least one, got {len(student_hidden)}")
    total = 0.0
    for i, (s, t) in enumerate(zip(student_hidden, teacher_hidden)):
        require_shape(f"student_hidden[{i}]", s, t.shape, f"teacher_hidden[{i}]")
        if s.dim() == 3:
            s, t = s[:, 0], t[:, 0]                                      # [CLS]: (B, H)
        diff = F.normalize(s, dim=-1) - F.normalize(t.detach(), dim=-1)
        total = total + diff.pow(2).sum(-1).mean()
    return total


@dataclass
class SequenceClassifierOutput:
    """What BertClassifier returns, whatever the flags - Hugging Face's names."""
    logits: torch.Tensor                                   # (B, num_labels)
    hidden_states: tuple[torch.Tensor, ...] | None = None  # output_hidden_states (for PKD)


class BertClassifier(nn.Module):
    """BertModel + a linear layer on the pooled [CLS] vector: (B, T) ids ->
    SequenceClassifierOutput, logits (B, num_labels); with output_hidden_states=True also
    BertModel's hidden states (for PKD)."""

    def __init__(self, bert: BertModel, num_labels: int):
        super().__init__()
        require_positive_int("num_labels", num_labels)
        self.bert = bert
        self.classifier = nn.Linear(bert.config.hidden_size, num_labels)

    def forward(self, input_ids, attention_mask=None, output_hidden_states: bool = False
                ) -> SequenceClassifierOutput:
        out = self.bert(input_ids, attention_mask=attention_mask,
                        output_hidden_states=output_hidden_states)
        return SequenceClassifierOutput(self.classifier(out.pooler_output), out.hidden_states)


def classifier_student(teacher: BertClassifier, layers: list[int] | None = None) -> BertClassifier:
    """`student_from_teacher` for a classifier: the chosen layers and a copy of its head."""
    student = BertClassifier(student_from_teacher(teacher.bert, layers),
                             teacher.classifier.out_features)
    student.classifier = copy.deepcopy(teacher.classifier)
    return student
