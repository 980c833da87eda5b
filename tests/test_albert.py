"""course_lib.albert against Hugging Face's AlbertModel / BertModel (shapes on the meta device,
outputs with copied weights)."""
import pytest
import torch
import transformers

from course_lib.albert import (AlbertConfig, AlbertModel, albert_parameter_count,
                               bert_parameter_count, count_parameters, from_hf_state_dict,
                               meta_model)
from course_lib.bert import BertConfig, BertModel

RELEASED_ALBERT = {
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
    "xxlarge": dict(hidden_size=4096, num_hidden_layers=12, num_attention_heads=64, intermediate_size=16384),
    "groups": dict(hidden_size=256, num_hidden_layers=6, num_attention_heads=4, intermediate_size=512,
                   num_hidden_groups=3, embedding_size=64, vocab_size=1000),
}


def hf_count(model_cls, config):
    with torch.device("meta"):
        return sum(p.numel() for p in model_cls(config).parameters())


@pytest.mark.parametrize("name", sorted(RELEASED_ALBERT))
def test_albert_counts_equal_hugging_face(name):
    kw = RELEASED_ALBERT[name]
    config = AlbertConfig(**kw)
    expected = hf_count(transformers.AlbertModel, transformers.AlbertConfig(**kw))
    assert count_parameters(meta_model(AlbertModel, config)) == expected
    assert albert_parameter_count(config) == expected


def test_known_sizes():
    # numbers printed by Hugging Face for the released configs
    assert albert_parameter_count(AlbertConfig()) == 11_683_584
    assert bert_parameter_count(BertConfig()) == 109_482_240


@pytest.mark.parametrize("kw", [dict(), dict(hidden_size=1024, num_hidden_layers=24,
                                             num_attention_heads=16, intermediate_size=4096),
                                dict(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1,
                                     pad_token_id=1)])
def test_bert_counts_equal_hugging_face(kw):
    config = BertConfig(**kw)
    expected = hf_count(transformers.BertModel, transformers.BertConfig(**kw))
    assert count_parameters(meta_model(BertModel, config)) == expected == bert_parameter_count(config)
    assert bert_parameter_count(config, pooler=False) == expected - (config.hidden_size + 1) * config.hidden_size


def test_sharing_is_real():
    model = AlbertModel(AlbertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=4,
                                     num_attention_heads=2, intermediate_size=32, embedding_size=8,
                                     num_hidden_groups=2, max_position_embeddings=12))
    assert model.layer_for(0) is model.layer_for(1) and model.layer_for(2) is model.layer_for(3)
    assert model.layer_for(1) is not model.layer_for(2)


def test_forward_equals_hugging_face():
    kw = dict(vocab_size=100, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
              intermediate_size=64, embedding_size=16, num_hidden_groups=2, max_position_embeddings=20)
    torch.manual_seed(0)
    hf = transformers.AlbertModel(transformers.AlbertConfig(**kw)).eval()
    ours = from_hf_state_dict(AlbertConfig(**kw), hf.state_dict()).eval()
    ids = torch.randint(0, 100, (3, 9))
    attention_mask = torch.ones(3, 9, dtype=torch.long)
    attention_mask[1, 6:] = 0
    out = ours(ids, attention_mask=attention_mask)
    ref = hf(ids, attention_mask=attention_mask)
    real = attention_mask.bool()
    torch.testing.assert_close(out.last_hidden_state[real], ref.last_hidden_state[real], atol=1e-5, rtol=0)
    torch.testing.assert_close(out.pooler_output, ref.pooler_output, atol=1e-5, rtol=0)
    with_states = ours(ids, attention_mask=attention_mask, output_hidden_states=True)
    assert len(with_states.hidden_states) == 5                      # embeddings + 4 layers
    torch.testing.assert_close(with_states.hidden_states[-1], out.last_hidden_state)


@pytest.mark.parametrize("kw, name", [(dict(num_hidden_groups=5), "num_hidden_groups"),
                                      (dict(embedding_size=0), "embedding_size"),
                                      (dict(hidden_size=100), "hidden_size")])
def test_bad_configs(kw, name):
    with pytest.raises(ValueError, match=name):
        AlbertConfig(**kw)


def _tiny_albert():
    torch.manual_seed(0)
    return AlbertModel(AlbertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=4,
                                    num_attention_heads=4, intermediate_size=64, embedding_size=16,
                                    num_hidden_groups=2, max_position_embeddings=20)).eval()


def test_an_all_ones_mask_takes_berts_fast_path(monkeypatch):
    """BERT's mask helper (course_lib.bert.encoder_mask): no padding, no mask for the fused
    kernel, and the same vectors as the masked path; a padded batch keeps its (B, 1, 1, T) mask."""
    import torch.nn.functional as F

    import course_lib.attention as attention

    model, masks = _tiny_albert(), []
    fused = F.scaled_dot_product_attention
    monkeypatch.setattr(attention.F, "scaled_dot_product_attention",
                        lambda *a, attn_mask=None, **k: masks.append(attn_mask) or
                        fused(*a, attn_mask=attn_mask, **k))
    ids = torch.randint(0, 100, (3, 9), generator=torch.Generator().manual_seed(1))
    ones = torch.ones_like(ids)
    with torch.no_grad():
        fast = model(ids, attention_mask=ones).last_hidden_state
        assert len(masks) == 4 and all(m is None for m in masks)
        masks.clear()
        x = model.embedding_hidden_mapping_in(model.embeddings(ids))    # the masked path, by hand
        for i in range(4):
            x = model.layer_for(i)(x, ones.bool()[:, None, None, :])
        assert len(masks) == 4 and all(m is not None for m in masks)
        torch.testing.assert_close(fast, x, atol=1e-6, rtol=0)
        padded = ones.clone()
        padded[1, 6:] = 0
        masks.clear()
        model(ids, attention_mask=padded)
        assert len(masks) == 4 and masks[0].shape == (3, 1, 1, 9)


def test_a_traced_albert_keeps_the_padding_mask():
    """Traced on an unpadded batch by the ONNX exporter's own wrapper, the graph still applies
    the mask: the no-padding shortcut is skipped while tracing."""
    import warnings

    from course_lib.onnx_export import _KeywordEncoder

    model = _tiny_albert()
    ids = torch.randint(0, 100, (2, 9), generator=torch.Generator().manual_seed(2))
    padded, types = torch.ones_like(ids), torch.zeros_like(ids)
    padded[0, 4:] = 0
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")            # tracer warnings about Python-side checks
        traced = torch.jit.trace(_KeywordEncoder(model), (ids, torch.ones_like(ids), types),
                                 check_trace=False)
        diff = traced(ids, padded, types) - model(ids, attention_mask=padded).last_hidden_state
    assert diff[padded.bool()].abs().max().item() <= 1e-5


def test_albert_reads_its_mask_as_bert_does():
    model = _tiny_albert()
    ids = torch.randint(0, 100, (2, 9))
    with pytest.raises(ValueError, match=r"^attention_mask: expected shape \(2, 9\) \(B, T\) like input_ids, got \(2, 1, 1, 9\)"):
        model(ids, attention_mask=torch.ones(2, 1, 1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match=r"^attention_mask: expected only 0 \(padding\) and 1 \(token\) values"):
        model(ids, attention_mask=torch.full((2, 9), 2))
    with pytest.raises(ValueError, match=r"^input_ids: expected a torch\.Tensor, got list"):
        model(ids.tolist())
