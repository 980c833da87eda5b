"""Graded checks for lesson 18: the Hugging Face -> course parameter-name mapping of BERT.

The learner's `hf_key_to_course(name: str) -> str` is called once per name (strings cross the
grader's wire); the check loads the real MiniLM through it and compares the hidden states with
Hugging Face's `BertModel`.
"""
import torch

from course_lib.bert import BertModel, _hf_key_map
from course_lib.pretrained import _minilm_state_dict, minilm_config, minilm_path, minilm_tokenizer
from ..grading import CheckFailed, exercise, expect, randint

FORBIDS = ("course_lib.bert:BertModel.to_hf_state_dict",)
SENTENCES = ["The cat sat on the mat.", "Transformers replaced recurrence with attention.",
             "A dog is playing in the park with a ball that it found under a bench.", "Hello!",
             "BERT reads the whole sentence at once, left and right context together.",
             "Is our BERT the real BERT?", "Attention weights are a softmax over the keys.",
             "She sells sea shells by the sea shore."]
PER_LAYER = ("attention.self.query", "attention.self.key", "attention.self.value",
             "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense",
             "output.dense", "output.LayerNorm")


def _name(fn, key: str, case: str) -> str:
    got = fn(key)
    if not isinstance(got, str):
        raise CheckFailed(f"[{case}] hf_key_to_course({key!r}) should return a str, "
                          f"got {type(got).__name__}")
    return got


def _hidden_states(model, batch):
    with torch.no_grad():
        return model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                     output_hidden_states=True).hidden_states


@exercise("18.key-map", points=3, uses="hf_key_to_course", forbids=FORBIDS)
def check_minilm_loads(fn, rng):
    """Every MiniLM tensor renamed: loads with strict=True, hidden states equal Hugging Face's."""
    from transformers import BertModel as HFBertModel

    state = {k: v for k, v in _minilm_state_dict().items() if not k.endswith("_ids")}  # no buffers
    order = torch.randperm(len(state), generator=rng).tolist()
    keys = [list(state)[i] for i in order]
    config = minilm_config()
    target = BertModel(config).state_dict()
    renamed, source = {}, {}
    for key in keys:
        ours = _name(fn, key, "MiniLM")
        if ours in renamed:
            raise CheckFailed(f"[MiniLM] {source[ours]!r} and {key!r} both became {ours!r}: "
                              f"each Hugging Face tensor needs a name of its own")
        if ours not in target:
            raise CheckFailed(f"[MiniLM] {key!r} became {ours!r}, which the course's BertModel "
                              f"does not have (its layer names: layers.N.self_attn.q_proj, "
                              f"...; print(BertModel(config).state_dict().keys()))")
        if target[ours].shape != state[key].shape:
            raise CheckFailed(f"[MiniLM] {key!r} {tuple(state[key].shape)} became {ours!r}, "
                              f"which has shape {tuple(target[ours].shape)}")
        renamed[ours], source[ours] = state[key], key
    missing = sorted(set(target) - set(renamed))
    expect(not missing, f"[MiniLM] the course's BertModel has {len(missing)} tensors that no "
           f"Hugging Face name mapped to, e.g. {missing[:3]}")
    model = BertModel(config)
    model.load_state_dict(renamed, strict=True)
    model.eval()
    reference = HFBertModel.from_pretrained(str(minilm_path()), attn_implementation="eager").eval()
    picks = torch.randperm(len(SENTENCES), generator=rng)[:5].tolist()
    batch = minilm_tokenizer()([SENTENCES[i] for i in picks])
    real = batch["attention_mask"].bool()
    ours = _hidden_states(model, batch)
    with torch.no_grad():
        theirs = reference(**batch, output_hidden_states=True).hidden_states
    for layer, (a, b) in enumerate(zip(ours, theirs)):
        diff = (a - b)[real].abs().max().item()
        if diff > 1e-5:
            where = "the embeddings" if layer == 0 else f"layer {layer - 1}"
            raise CheckFailed(f"[MiniLM, {len(picks)} sentences] every tensor loaded, but the "
                              f"output of {where} differs from Hugging Face's by {diff:.3g} "
                              f"(tolerance 1e-5): two tensors of the same shape swapped places "
                              f"(query/key/value, the two dense layers or the two LayerNorms?)")


@exercise("18.key-map-any-layer", points=1, uses="hf_key_to_course", forbids=FORBIDS)
def check_any_layer(fn, rng):
    """Layer indices beyond MiniLM's six (a 24-layer BERT-large, and two-digit numbers)."""
    reference = _hf_key_map(48)
    for case in range(12):
        layer = randint(rng, 6, 48)
        part = PER_LAYER[randint(rng, 0, len(PER_LAYER))]
        leaf = ("weight", "bias")[case % 2]
        key = f"encoder.layer.{layer}.{part}.{leaf}"
        try:
            got = _name(fn, key, f"case {case}")
        except ValueError as error:
            raise CheckFailed(f"[case {case}] hf_key_to_course({key!r}) raised ValueError ({error}), expected "
                              f"{reference[key]!r}: layer {layer} of a deeper BERT - any layer index works, "
                              f"not only MiniLM's 0-5") from None
        expect(got == reference[key], f"[case {case}] hf_key_to_course({key!r}) returned "
               f"{got!r}, expected {reference[key]!r} (layer {layer} of a deeper BERT)")


UNKNOWN = ["cls.predictions.bias", "encoder.layer.0.crossattention.self.query.weight",
           "encoder.layer.3.attention.self.query.gamma", "encoder.layers.2.output.dense.weight",
           "encoder.layer.two.output.dense.weight", "embeddings.word_embedding.weight",
           "pooler.dense.kernel", "encoder.layer.1.output.dense", "", "encoder.layer..output.dense.weight"]


@exercise("18.key-map-unknown", points=1, uses="hf_key_to_course", forbids=FORBIDS)
def check_unknown(fn, rng):
    """A name that is no BertModel parameter raises ValueError naming it (no silent guess)."""
    for case in torch.randperm(len(UNKNOWN), generator=rng)[:6].tolist():
        key = UNKNOWN[case]
        try:
            got = fn(key)
        except ValueError as error:
            expect(key in str(error), f"[{key!r}] the ValueError should name the key; got {error!r}")
        else:
            raise CheckFailed(f"[{key!r}] is no parameter of Hugging Face's BertModel: expected a "
                              f"ValueError naming it, got {got!r}")
