"""Transformers, Question by Question: the course's helper library.

One concept per module; lessons build a piece in the open, later lessons import it from here.
The modules are flat, one per lesson idea, except the synthetic data, which live in
`course_lib.data` (seeded generators: toy sets, sequence tasks, a Markov language, the story
corpus, labelled similarity pairs). Importing `course_lib` changes no process-wide state (no
warning filters, no environment variables): what must be quiet or offline is made so where it
happens.

Reading order: every lesson, the modules it builds (written in the open, then imported from here)
and the other modules it imports. `device`, `evidence` and `quiz` serve every lesson; `cache` and
`validation` serve the modules. The same table is in CONTRIBUTING.md; tests/test_layout.py keeps
both in step with the notebooks' imports.

| lesson | builds | imports |
|---|---|---|
| 00_welcome |  |  |
| 01_scale_sqrt_dk | attention |  |
| 02_qkv_projections | self_attention | attention, pretrained, training |
| 03_multi_head | attention |  |
| 04_attention_complexity | complexity | attention |
| 05_positional_encoding | positional | pretrained, training, transformer |
| 06_embedding_scale | embedding | data.tasks, positional, pretrained, training, transformer |
| 07_layernorm_vs_batchnorm | layernorm | data.corpus, pretrained, training, transformer |
| 08_residual | residual | data.toy, training |
| 09_warmup_pre_post_ln | schedules | attention, data.tasks, layernorm, training, transformer |
| 10_nonlinearity | activations, feedforward | attention, layernorm, pretrained, training, transformer |
| 11_encoder_decoder | transformer | attention, data.tasks, layernorm, schedules, training |
| 12_weight_tying | weight_tying | training, transformer |
| 13_wordpiece_vs_bpe | tokenization | data.corpus, pretrained |
| 14_bert_input | tokenization | pretrained |
| 15_mlm_masking | masking | data.markov, training, transformer |
| 16_nsp_vs_sop | pretraining, pretraining_batches, pretraining_cli, sentence_pairs | bert, data.corpus, training |
| 17_pretraining_loss | pretraining | bert, data.corpus, masking, pretraining_batches |
| 18_pretrained_parity | bert, pretrained |  |
| 19_cls_vs_pooling | data.similarity_pairs, pooling, sentence_similarity | bert, data.corpus, pretrained, pretraining, pretraining_batches, schedules, sentence_pairs, training |
| 20_bidirectional | lm_masks | masking, positional, training, transformer |
| 21_long_text | long_text | bert, complexity, data.corpus, pretrained, training |
| 22_transformer_xl | transformer_xl | training |
| 23_bert_family | albert, permutation_masks, span_corruption | bert, complexity, data.markov, masking, training, transformer |
| 24_distillation | distillation | bert, training |
| 25_fast_inference | fast_inference, model_surgery, onnx_export, quantization, timing | data.corpus, data.similarity_pairs, pretrained, sentence_similarity |
| every lesson |  | device, evidence, quiz |
| no lesson directly | cache, validation |  |
"""
from pathlib import Path

__version__ = "0.1.0"

#: The repository root (the package is installed in editable mode from it).
ROOT = Path(__file__).resolve().parent.parent


def _import_tqdm_auto_quietly() -> None:
    """Import `tqdm.auto` once, with its "IProgress not found" warning silenced for this import only.

    transformers, sentence-transformers and huggingface_hub import `tqdm.auto`; inside a Jupyter
    kernel without ipywidgets that first import warns "IProgress not found" (tqdm then falls back to
    the text bars the course uses anyway), and the warning would show in every stored notebook that
    imports transformers. The lessons import `course_lib` before transformers, so doing that first
    import here, under a filter restored right after, leaves nothing for the later imports to say
    and no filter behind."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        import tqdm.auto  # noqa: F401


_import_tqdm_auto_quietly()
