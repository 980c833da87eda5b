"""Graded checks for lesson 23: ALBERT's parameter count (factorised embedding, cross-layer
sharing), compared with Hugging Face's `AlbertModel` instantiated on the meta device."""
import torch

from ..grading import CheckFailed, exercise, randint

FORBIDS = ("transformers:AlbertModel", "transformers:AlbertConfig", "transformers:AlbertForPreTraining",
           "transformers:AlbertForMaskedLM",
           "transformers.models.albert.modeling_albert:AlbertModel",
           "transformers.models.albert.configuration_albert:AlbertConfig",
           "course_lib.albert:albert_parameter_count", "course_lib.albert:AlbertModel",
           "course_lib.albert:count_parameters", "course_lib.albert:meta_model",
           "course_lib.albert:from_hf_state_dict")

RELEASED = {  # hidden_size, num_hidden_layers, num_attention_heads, intermediate_size
    "ALBERT-base": (768, 12, 12, 3072), "ALBERT-large": (1024, 24, 16, 4096),
    "ALBERT-xlarge": (2048, 24, 16, 8192), "ALBERT-xxlarge": (4096, 12, 64, 16384)}


def _config(**kw) -> dict:
    base = dict(vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=12,
                num_attention_heads=12, intermediate_size=3072, max_position_embeddings=512,
                type_vocab_size=2, num_hidden_groups=1)
    base.update(kw)
    return base


def _hf_count(config: dict) -> int:
    import transformers
    with torch.device("meta"):
        model = transformers.AlbertModel(transformers.AlbertConfig(**config))
    return sum(p.numel() for p in model.parameters())


def _layer(H, I):
    return 4 * (H * H + H) + (H * I + I) + (I * H + H) + 4 * H


def _diagnose(config: dict, got: int, expected: int) -> str:
    """Name the usual mistakes by recomputing the count with each one made."""
    c = config
    V, E, H = c["vocab_size"], c["embedding_size"], c["hidden_size"]
    L, G, I = c["num_hidden_layers"], c["num_hidden_groups"], c["intermediate_size"]
    tables = c["max_position_embeddings"] + c["type_vocab_size"]
    pooler = H * H + H
    if got == expected - pooler:
        return "you left out the pooler (a dense H x H layer with bias on [CLS])"
    if got == expected + (L - G) * _layer(H, I):
        return (f"you counted all {L} layers; ALBERT shares them: only num_hidden_groups = {G} "
                f"distinct layers hold parameters")
    if got == expected - (V + tables) * E - 2 * E - (E * H + H) + (V + tables) * H + 2 * H:
        return "you counted BERT's H-wide embedding tables; ALBERT's are E wide, plus one E -> H map"
    if got == expected - (E * H + H):
        return "you left out the E -> H projection (embedding_hidden_mapping_in, with its bias)"
    if got == expected - H:
        return "one bias of size H is missing (the E -> H projection has a bias)"
    if got == expected - (c["max_position_embeddings"] + c["type_vocab_size"]) * E:
        return "the position and token-type tables are missing (they are E wide too)"
    return ""


def _call(fn, case: str, config: dict) -> int:
    got = fn(dict(config))
    if isinstance(got, torch.Tensor) and got.numel() == 1 and not got.dtype.is_floating_point:
        got = int(got.item())
    if isinstance(got, bool) or not isinstance(got, int):
        raise CheckFailed(f"[{case}] return the count as an int, got {type(got).__name__} {got!r}")
    return got


def _compare(fn, case: str, config: dict) -> None:
    expected = _hf_count(config)
    got = _call(fn, case, config)
    if got != expected:
        hint = _diagnose(config, got, expected)
        raise CheckFailed(f"[{case}] expected {expected:,} parameters (Hugging Face's AlbertModel), "
                          f"got {got:,} (off by {got - expected:+,})" + (f": {hint}" if hint else ""))


@exercise("23.albert-released", points=2, uses="albert_num_parameters", forbids=FORBIDS)
def check_released(fn, rng):
    """The released ALBERT sizes (base 12M ... xxlarge 223M)."""
    for name, (H, L, A, I) in RELEASED.items():
        config = _config(hidden_size=H, num_hidden_layers=L, num_attention_heads=A, intermediate_size=I)
        _compare(fn, f"{name}: {config}", config)


@exercise("23.albert-random", points=3, uses="albert_num_parameters", forbids=FORBIDS)
def check_random(fn, rng):
    """Hidden random configurations, including several layer groups and other table sizes."""
    for case in range(8):
        heads = randint(rng, 1, 9)
        head_dim = randint(rng, 4, 65)
        layers = int(torch.tensor([1, 2, 3, 4, 6, 8, 12, 24])[
            torch.randint(0, 8, (1,), generator=rng)])
        divisors = [g for g in range(1, layers + 1) if layers % g == 0]
        groups = divisors[randint(rng, 0, len(divisors))] if case % 2 else 1
        config = _config(
            vocab_size=randint(rng, 50, 60000),
            embedding_size=randint(rng, 8, 300),
            hidden_size=heads * head_dim, num_attention_heads=heads, num_hidden_layers=layers,
            intermediate_size=randint(rng, 16, 4096),
            max_position_embeddings=randint(rng, 16, 2048),
            type_vocab_size=randint(rng, 1, 5), num_hidden_groups=groups)
        _compare(fn, f"case {case}: {config}", config)
