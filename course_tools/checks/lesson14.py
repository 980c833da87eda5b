"""Graded checks for lesson 14: BERT's pair packing and input embeddings."""
import random

import torch

from course_lib.bert import BertConfig, BertEmbeddings
from ..grading import CheckFailed, exercise, expect, expect_close

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "##s", "run", "fast", "[UNK]", "!", "?", "it"]


@exercise("14.pack-pair", points=2, uses="pack_pair")
def check_pack_pair(fn, rng):
    """[CLS] A [SEP] (B [SEP]) with segment ids 0 for the first part and 1 for the second."""
    pick = random.Random(int(torch.randint(0, 2**31, (1,), generator=rng)))
    cases = [([], None), ([], [])] + [
        ([pick.choice(WORDS) for _ in range(pick.randint(0, 6))],
         None if pick.random() < 0.3 else [pick.choice(WORDS) for _ in range(pick.randint(0, 6))])
        for _ in range(8)]
    for a, b in cases:
        expected = ["[CLS]", *a, "[SEP]"] + ([] if b is None else [*b, "[SEP]"])
        segments = [0] * (len(a) + 2) + ([] if b is None else [1] * (len(b) + 1))
        got = fn(list(a)) if b is None else fn(list(a), list(b))
        if not (isinstance(got, tuple) and len(got) == 2):
            raise CheckFailed(f"[A={a}, B={b}] return (tokens, token_type_ids), got {type(got).__name__}")
        tokens, token_type_ids = list(got[0]), [int(t) for t in got[1]]
        expect(tokens == expected, f"[A={a}, B={b}] tokens {tokens}, expected {expected}")
        expect(token_type_ids == segments, f"[A={a}, B={b}] token_type_ids {token_type_ids}, expected "
               f"{segments} (0 up to and including the first [SEP], 1 for B and its [SEP])")


@exercise("14.input-embeddings", points=2, uses="bert_input_embeddings")
def check_input_embeddings(fn, rng):
    """LayerNorm(word + position + segment) equal to course_lib.bert.BertEmbeddings (eval mode)."""
    for case in range(4):
        H = int(torch.randint(2, 9, (1,), generator=rng)) * 4
        config = BertConfig(vocab_size=50, hidden_size=H, num_hidden_layers=1, num_attention_heads=2,
                            intermediate_size=2 * H, max_position_embeddings=16, type_vocab_size=2)
        torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=rng)))
        reference = BertEmbeddings(config).eval()
        with torch.no_grad():
            for p in reference.parameters():
                p.add_(torch.randn(p.shape, generator=rng) * 0.1)  # non-trivial LayerNorm weights too
        B, T = int(torch.randint(1, 4, (1,), generator=rng)), int(torch.randint(1, 17, (1,), generator=rng))
        ids = torch.randint(0, 50, (B, T), generator=rng)
        # every row switches to segment 1 at its own boundary, so rows cannot share segment ids
        boundary = torch.randint(0, T + 1, (B, 1), generator=rng)
        segments = (torch.arange(T) >= boundary).long()                      # (B, T)
        with torch.no_grad():
            got = fn(ids, segments, reference.word_embeddings, reference.position_embeddings,
                     reference.token_type_embeddings, reference.LayerNorm)
            expected = reference(ids, segments)
            no_layernorm = (reference.word_embeddings(ids) + reference.position_embeddings.weight[:T]
                            + reference.token_type_embeddings(segments))
        case_name = f"case {case}: B={B}, T={T}, hidden_size={H}"
        if (isinstance(got, torch.Tensor) and got.shape == no_layernorm.shape
                and torch.allclose(got, no_layernorm, atol=1e-5)):
            raise CheckFailed(f"[{case_name}] you returned the sum itself: BERT applies LayerNorm "
                              f"to it (pass it through `layer_norm`)")
        expect_close(case_name, got, expected, atol=1e-5)
