"""Graded checks for lesson 12: tie an output layer to the input embedding."""
import torch
import torch.nn.functional as F
from torch import nn

from course_lib.embedding import ScaledEmbedding
from ..grading import CheckFailed, exercise, expect, expect_close
from course_lib.transformer import CausalLM, CausalLMConfig
from course_lib.weight_tying import count_parameters


def _sizes(rng):
    # V > d, so a transposed layer never has the right shape by accident
    V = int(torch.randint(12, 60, (1,), generator=rng))
    d = int(torch.randint(2, 12, (1,), generator=rng))
    return V, d


def _pair(rng, V, d, kind: int, bias: bool):
    """A fresh (embedding, lm_head) pair with random values; kind picks the embedding class."""
    embedding = nn.Embedding(V, d) if kind == 0 else ScaledEmbedding(V, d, scale=kind == 1)
    head = nn.Linear(d, V, bias=bias)
    with torch.no_grad():
        embedding.weight.copy_(torch.randn(V, d, generator=rng))
        head.weight.copy_(torch.randn(V, d, generator=rng))
        if bias:
            head.bias.copy_(torch.randn(V, generator=rng))
    return embedding, head


def _name(embedding) -> str:
    return "nn.Embedding" if isinstance(embedding, nn.Embedding) else type(embedding).__name__


def _expect_tied(case, embedding, head):
    if head.weight is embedding.weight:
        return
    if not isinstance(head.weight, nn.Parameter):
        raise CheckFailed(f"[{case}] lm_head.weight is a {type(head.weight).__name__}, not an nn.Parameter")
    if head.weight.shape == embedding.weight.shape and head.weight.data_ptr() == embedding.weight.data_ptr():
        raise CheckFailed(f"[{case}] lm_head.weight shares memory with embedding.weight but is a different "
                          "Parameter object (did you assign `.data`, or wrap it in nn.Parameter(...)?). Then "
                          "it is counted twice, gets only its own gradient and its own optimizer state: "
                          "assign the Parameter itself, lm_head.weight = embedding.weight")
    raise CheckFailed(f"[{case}] lm_head.weight is not the embedding's Parameter (a copy, or untouched?): "
                      "after tying, `lm_head.weight is embedding.weight` must be True")


@exercise("12.tie-same-object", points=2, uses="tie_weights")
def check_same_object(fn, rng):
    """After tying, lm_head.weight is the embedding's Parameter; the count drops by V·d."""
    for case_no in range(4):
        V, d = _sizes(rng)
        kind, bias = case_no % 3, case_no % 2 == 0
        embedding, head = _pair(rng, V, d, kind, bias)
        case = (f"{_name(embedding)}({V}, {d}) and nn.Linear({d}, {V}, bias={bias})")
        values, old_bias = embedding.weight.detach().clone(), head.bias
        pair = nn.ModuleDict({"embed": embedding, "lm_head": head})
        before = count_parameters(pair)
        fn(embedding, head)
        _expect_tied(case, embedding, head)
        expect_close(case, embedding.weight, values, atol=0,
                     name="embedding.weight after tying (the embedding's values must be kept)")
        expect(head.bias is old_bias, f"[{case}] lm_head.bias was changed or removed: tying concerns "
                                      "the weight only, the output bias stays the head's own")
        saved = before - count_parameters(pair)
        expect(saved == V * d, f"[{case}] tying should save V·d = {V * d} parameters, saved {saved}")
        h = torch.randn(3, d, generator=rng)
        expected = h @ values.T + (old_bias.detach() if bias else 0)
        expect_close(case, head(h), expected, atol=1e-5, name="lm_head(h) (should be h @ E.T + bias)")
    # a whole untied language model from course_lib
    V, d = _sizes(rng)
    model = CausalLM(CausalLMConfig(vocab_size=V, d_model=2 * d, n_heads=2, d_ff=8, n_layers=1, max_len=4,
                                    tie_weights=False))
    before = count_parameters(model)
    fn(model.embed, model.lm_head)
    case = f"CausalLM(vocab_size={V}, d_model={2 * d}, tie_weights=False)"
    _expect_tied(case, model.embed, model.lm_head)
    saved = before - count_parameters(model)
    expect(saved == V * 2 * d, f"[{case}] tying should save V·d = {V * 2 * d} parameters, saved {saved}")


@exercise("12.tie-gradients", points=1, uses="tie_weights")
def check_gradients(fn, rng):
    """The tied gradient is the sum of both uses' gradients, and one Adam step keeps them tied."""
    for case_no in range(3):
        V, d = _sizes(rng)
        embedding, head = _pair(rng, V, d, kind=case_no % 2, bias=True)
        twin_embedding, twin_head = _pair(rng, V, d, kind=case_no % 2, bias=True)
        twin_embedding.load_state_dict(embedding.state_dict())
        with torch.no_grad():                                  # the twin: same values, two matrices
            twin_head.weight.copy_(embedding.weight)
            twin_head.bias.copy_(head.bias)
        mixer = nn.Linear(d, d)
        ids = torch.randint(0, V, (2, 6), generator=rng)
        targets = torch.randint(0, V, (2, 6), generator=rng)

        def loss_of(emb, out):
            logits = out(torch.tanh(mixer(emb(ids))))           # (2, 6, V)
            return F.cross_entropy(logits.flatten(0, 1), targets.flatten())

        grads = torch.autograd.grad(loss_of(twin_embedding, twin_head), (twin_embedding.weight, twin_head.weight))
        case = f"{_name(embedding)}({V}, {d}) and nn.Linear({d}, {V})"
        fn(embedding, head)
        _expect_tied(case, embedding, head)
        loss_of(embedding, head).backward()
        expect(embedding.weight.grad is not None, f"[{case}] embedding.weight got no gradient")
        expect_close(case, embedding.weight.grad, grads[0] + grads[1], atol=1e-5,
                     name="the tied weight's gradient (should be lookup gradient + output-layer gradient)")
        optimizer = torch.optim.Adam(nn.ModuleDict({"e": embedding, "h": head}).parameters(), lr=0.1)
        optimizer.step()
        expect(torch.equal(head.weight, embedding.weight),
               f"[{case}] after one Adam step lm_head.weight and embedding.weight differ: they are not tied")


@exercise("12.tie-shape-check", points=1, uses="tie_weights")
def check_shapes(fn, rng):
    """Mismatched shapes raise ValueError (naming lm_head.weight) and leave the layers untouched."""
    V, d = _sizes(rng)
    embedding, head = _pair(rng, V, d, kind=0, bias=False)
    fn(embedding, head)
    _expect_tied(f"nn.Embedding({V}, {d}) and nn.Linear({d}, {V}) (a valid pair)", embedding, head)
    for in_features, out_features, what in ((V, d, "a transposed layer"), (d + 1, V, "a wrong d_model"),
                                            (d, V + 2, "a wrong vocabulary size")):
        embedding, _ = _pair(rng, V, d, kind=1, bias=False)
        head = nn.Linear(in_features, out_features)
        old_weight = head.weight
        case = (f"{_name(embedding)}({V}, {d}) with nn.Linear({in_features}, {out_features}) - {what}: "
                f"weights {tuple(embedding.weight.shape)} vs {tuple(head.weight.shape)}")
        try:
            fn(embedding, head)
        except ValueError as error:
            expect("lm_head" in str(error) or "shape" in str(error),
                   f"[{case}] the ValueError should name lm_head.weight and the shapes; got {error!r}")
        else:
            raise CheckFailed(f"[{case}] expected a ValueError for mismatched shapes, nothing was raised "
                              "(nn.Linear accepts a Parameter of any shape, so the error would surface only "
                              "in the forward pass)")
        expect(head.weight is old_weight, f"[{case}] lm_head.weight was replaced although the shapes do not match")
