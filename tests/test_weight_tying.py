"""course_lib.weight_tying against autograd on an untied copy, nn.Module bookkeeping and
Hugging Face GPT-2's own tie_word_embeddings."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_lib.embedding import ScaledEmbedding
from course_lib.transformer import CausalLM, CausalLMConfig
from course_lib.weight_tying import count_parameters, shared_parameters, tie_weights


def test_same_object_and_forward():
    embedding, head = nn.Embedding(11, 6), nn.Linear(6, 11, bias=False)
    assert embedding.weight.shape == head.weight.shape == (11, 6)   # (out, in) = (V, d)
    tie_weights(embedding, head)
    assert head.weight is embedding.weight
    h = torch.randn(3, 6)
    torch.testing.assert_close(head(h), h @ embedding.weight.T)


def test_gradients_accumulate_from_both_uses():
    g = torch.Generator().manual_seed(0)
    V, d = 13, 5
    ids, targets = torch.randint(0, V, (4, 7), generator=g), torch.randint(0, V, (4, 7), generator=g)
    mixer = nn.Linear(d, d)

    def loss_of(embedding, head):
        return F.cross_entropy(head(torch.tanh(mixer(embedding(ids)))).flatten(0, 1), targets.flatten())

    embedding, head = nn.Embedding(V, d), nn.Linear(d, V)
    untied_head = nn.Linear(d, V)
    with torch.no_grad():
        untied_head.weight.copy_(embedding.weight)
        untied_head.bias.copy_(head.bias)
    untied_embedding = nn.Embedding(V, d)
    untied_embedding.load_state_dict(embedding.state_dict())
    grads = torch.autograd.grad(loss_of(untied_embedding, untied_head),
                                (untied_embedding.weight, untied_head.weight))

    tie_weights(embedding, head)
    loss_of(embedding, head).backward()
    torch.testing.assert_close(embedding.weight.grad, grads[0] + grads[1])
    assert head.bias is not None and head.bias.grad is not None       # the bias stays the head's own


def test_parameter_saving_and_bookkeeping():
    V, d = 50, 8
    untied = CausalLM(CausalLMConfig(vocab_size=V, d_model=d, n_heads=2, d_ff=16, n_layers=1,
                                     max_len=4, tie_weights=False))
    tied = CausalLM(CausalLMConfig(vocab_size=V, d_model=d, n_heads=2, d_ff=16, n_layers=1,
                                   max_len=4, tie_weights=True))
    assert count_parameters(untied) - count_parameters(tied) == V * d
    assert shared_parameters(tied) == [["embed.weight", "lm_head.weight"]]
    assert shared_parameters(untied) == []
    # the state dict lists the tied matrix under both names
    assert sum(v.numel() for v in tied.state_dict().values()) == count_parameters(untied)
    # tying an untied model by hand gives the tied model's count
    tie_weights(untied.embed, untied.lm_head)
    assert count_parameters(untied) == count_parameters(tied)


def test_matches_hugging_face_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    V, d = 100, 8
    counts = {}
    for tie in (True, False):
        config = GPT2Config(vocab_size=V, n_positions=16, n_embd=d, n_layer=1, n_head=2,
                            bos_token_id=0, eos_token_id=0, tie_word_embeddings=tie)
        model = GPT2LMHeadModel(config)
        assert (model.lm_head.weight is model.transformer.wte.weight) == tie
        counts[tie] = count_parameters(model)
    assert counts[False] - counts[True] == V * d
    # our function on an untied GPT-2 reproduces Hugging Face's tied layout and count
    tie_weights(model.transformer.wte, model.lm_head)
    assert count_parameters(model) == counts[True]


def test_course_embedding_and_bad_shapes():
    embedding, head = ScaledEmbedding(9, 4), nn.Linear(4, 9)
    tie_weights(embedding, head)
    assert head.weight is embedding.weight
    with pytest.raises(ValueError, match=r"lm_head\.weight.*\(9, 4\).*\(4, 9\).*transposed"):
        tie_weights(nn.Embedding(9, 4), nn.Linear(9, 4))
    with pytest.raises(ValueError, match=r"lm_head\.weight.*\(9, 4\).*\(9, 5\)"):
        tie_weights(nn.Embedding(9, 4), nn.Linear(5, 9))
    with pytest.raises(ValueError, match="lm_head: expected the output layer"):    # swapped arguments
        tie_weights(nn.Linear(4, 9), nn.Embedding(9, 4))
