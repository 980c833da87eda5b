"""course_lib.distillation against independent references: torch.distributions' KL divergence,
finite differences, the closed-form gradient, and a student forward rebuilt by hand."""
import pytest
import torch
import torch.nn.functional as F
from torch.distributions import Categorical, kl_divergence

from course_lib.bert import BertConfig, BertModel
from course_lib.distillation import (BertClassifier, classifier_student, distillation_loss,
                                     every_other_layer, pkd_layer_map, pkd_loss, soft_target_loss,
                                     student_from_teacher)


def _logits(B=6, C=5, scale=3.0, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return (scale * torch.randn(B, C, generator=g, dtype=dtype),
            scale * torch.randn(B, C, generator=g, dtype=dtype))


@pytest.mark.parametrize("T", [0.5, 1.0, 2.0, 4.0, 10.0])
def test_soft_loss_is_t2_times_kl_of_torch_distributions(T):
    s, t = _logits()
    kl = kl_divergence(Categorical(logits=t / T), Categorical(logits=s / T)).mean()
    torch.testing.assert_close(soft_target_loss(s, t, T), T ** 2 * kl)
    torch.testing.assert_close(soft_target_loss(s, t, T, scale_by_t2=False), kl)


def test_soft_loss_zero_when_student_equals_teacher_and_rows_of_3d_inputs_count():
    s, t = _logits()
    assert soft_target_loss(t, t, 3.0).abs().item() < 1e-12
    flat = soft_target_loss(s, t, 2.0)
    torch.testing.assert_close(soft_target_loss(s.reshape(2, 3, 5), t.reshape(2, 3, 5), 2.0), flat)


def test_soft_loss_gradient_matches_finite_differences_and_closed_form():
    s, t = _logits(B=4, C=6)
    T = 3.0
    leaf = s.clone().requires_grad_(True)
    soft_target_loss(leaf, t, T, scale_by_t2=False).backward()
    B = s.shape[0]
    closed = (torch.softmax(s / T, -1) - torch.softmax(t / T, -1)) / (T * B)
    torch.testing.assert_close(leaf.grad, closed)
    eps = 1e-6
    numeric = torch.zeros_like(s)
    for i in range(s.shape[0]):
        for j in range(s.shape[1]):
            up, down = s.clone(), s.clone()
            up[i, j] += eps
            down[i, j] -= eps
            numeric[i, j] = (soft_target_loss(up, t, T, False) - soft_target_loss(down, t, T, False)) / (2 * eps)
    torch.testing.assert_close(leaf.grad, numeric, atol=1e-8, rtol=1e-5)


def test_teacher_gets_no_gradient():
    s, t = _logits()
    t = t.clone().requires_grad_(True)
    s = s.clone().requires_grad_(True)
    soft_target_loss(s, t, 2.0).backward()
    assert t.grad is None and s.grad is not None


def test_distillation_loss_is_weighted_sum():
    s, t = _logits(B=8, C=4)
    labels = torch.randint(0, 4, (8,), generator=torch.Generator().manual_seed(1))
    T, alpha = 4.0, 0.7
    kl = kl_divergence(Categorical(logits=t / T), Categorical(logits=s / T)).mean()
    ce = -torch.log_softmax(s, -1)[torch.arange(8), labels].mean()
    torch.testing.assert_close(distillation_loss(s, t, labels, T, alpha), alpha * T ** 2 * kl + (1 - alpha) * ce)
    torch.testing.assert_close(distillation_loss(s, t, labels, T, 0.0), ce)


def test_bad_inputs():
    s, t = _logits()
    with pytest.raises(ValueError, match="teacher_logits"):
        soft_target_loss(s, t[:, :3], 2.0)
    with pytest.raises(ValueError, match="temperature"):
        soft_target_loss(s, t, 0.0)
    with pytest.raises(ValueError, match="alpha"):
        distillation_loss(s, t, torch.zeros(6, dtype=torch.long), 2.0, 1.5)
    with pytest.raises(ValueError, match="labels"):
        distillation_loss(s, t, torch.zeros(5, dtype=torch.long), 2.0, 0.5)
    with pytest.raises(ValueError, match="layers"):
        student_from_teacher(_teacher(), [2, 0])
    with pytest.raises(ValueError, match="strategy"):
        pkd_layer_map(12, 6, "middle")


def _teacher(layers=4):
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=layers, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=12,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return BertModel(config).eval()


def test_student_from_teacher_runs_the_chosen_teacher_layers():
    teacher = _teacher(5)
    assert every_other_layer(5) == [0, 2, 4] and every_other_layer(12) == [0, 2, 4, 6, 8, 10]
    student = student_from_teacher(teacher).eval()
    assert student.config.num_hidden_layers == 3
    ids = torch.randint(0, 30, (3, 10), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        x = teacher.embeddings(ids)
        for i in (0, 2, 4):
            x = teacher.layers[i](x)
        expected = (x, teacher.pooler(x))
        got = student(ids)
    torch.testing.assert_close(got.last_hidden_state, expected[0])
    torch.testing.assert_close(got.pooler_output, expected[1])
    # copies, not shared: changing the student leaves the teacher alone
    with torch.no_grad():
        student.layers[0].linear1.weight.add_(1.0)
    assert not torch.equal(student.layers[0].linear1.weight, teacher.layers[0].linear1.weight)


def test_classifier_student_copies_the_head():
    teacher = BertClassifier(_teacher(4), 3).eval()
    student = classifier_student(teacher, [1, 3]).eval()
    torch.testing.assert_close(student.classifier.weight, teacher.classifier.weight)
    assert student.classifier.weight is not teacher.classifier.weight
    ids = torch.randint(0, 30, (2, 8), generator=torch.Generator().manual_seed(3))
    out = student(ids, output_hidden_states=True)
    assert out.logits.shape == (2, 3) and len(out.hidden_states) == 3
    plain = student(ids)
    assert type(plain) is type(out) and plain.hidden_states is None
    torch.testing.assert_close(plain.logits, out.logits)


def test_pkd_layer_map_matches_the_paper():
    # Sun et al. 2019, BERT-base (12) -> 6 layers
    assert pkd_layer_map(12, 6, "skip") == [2, 4, 6, 8, 10]
    assert pkd_layer_map(12, 6, "last") == [7, 8, 9, 10, 11]
    assert pkd_layer_map(12, 3, "skip") == [4, 8]
    assert pkd_layer_map(4, 2, "skip") == [2] and pkd_layer_map(4, 2, "last") == [3]


def test_pkd_loss_against_a_loop():
    g = torch.Generator().manual_seed(4)
    s = [torch.randn(3, 7, 8, generator=g) for _ in range(2)]
    t = [torch.randn(3, 7, 8, generator=g) for _ in range(2)]
    expected = 0.0
    for a, b in zip(s, t):
        for r in range(3):
            u, v = a[r, 0], b[r, 0]
            expected += ((u / u.norm() - v / v.norm()) ** 2).sum() / 3
    torch.testing.assert_close(pkd_loss(s, t), expected)
    torch.testing.assert_close(pkd_loss([x[:, 0] for x in s], [x[:, 0] for x in t]), expected)
