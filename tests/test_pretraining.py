"""course_lib.data.corpus and course_lib.pretraining: the synthetic corpus, NSP/SOP pairs, the tiny
BERT pretraining loop, its cache, and its DistributedDataParallel run under torchrun."""
from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import torch

from course_lib import ROOT
from course_lib.data.corpus import TOPICS, corpus_tokenizer, make_documents, pydoc_texts
from course_lib import pretraining
from course_lib.pretraining import (PretrainConfig, cache_key, cache_path, evaluate, load_or_pretrain,
                                    pretrain, source_digest, source_modules)
from course_lib.pretraining_batches import PairBatcher
from course_lib.sentence_pairs import consecutive_pairs, sample_pair

TINY = dict(n_docs=60, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=64, max_position_embeddings=48, steps=8, batch_size=8,
            warmup_steps=2, log_every=1)


# ----------------------------------------------------------------------------- corpus

def test_documents_are_deterministic_and_seeded():
    a = make_documents(20, seed=1)
    b = make_documents(20, seed=1)
    c = make_documents(20, seed=2)
    assert [d.sentences for d in a] == [d.sentences for d in b]
    assert [d.sentences for d in a] != [d.sentences for d in c]
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    assert [d.text for d in make_documents(5, g1)] == [d.text for d in make_documents(5, g2)]


def test_topics_have_their_own_words_and_episodes_follow_the_script():
    own = [set(t.objects) | set(t.places) | set(t.script) for t in TOPICS]
    for i in range(len(own)):
        for j in range(i + 1, len(own)):
            assert not own[i] & own[j], (TOPICS[i].name, TOPICS[j].name, own[i] & own[j])
    docs = make_documents(200, seed=0, min_sentences=4, max_sentences=30)
    for doc in docs:
        topic = next(t for t in TOPICS if t.name == doc.topic)
        for i, sentence in enumerate(doc.sentences):
            assert topic.script[doc.steps[i]] in sentence.lower().split()
            if i and doc.episodes[i] == doc.episodes[i - 1]:
                assert doc.steps[i] > doc.steps[i - 1]  # script order within an episode
    tok = corpus_tokenizer()
    assert all("[UNK]" not in tok.tokenize(d.text) for d in docs)


def test_long_documents():
    docs = make_documents(3, seed=0, min_sentences=100, max_sentences=100)
    tok = corpus_tokenizer()
    assert all(len(d.sentences) == 100 for d in docs)
    assert all(len(tok.encode(d.text)["input_ids"]) > 512 for d in docs)
    with pytest.raises(ValueError, match="min_sentences"):
        make_documents(3, min_sentences=5, max_sentences=2)


def test_pydoc_texts_are_real_english():
    texts = pydoc_texts()
    words = " ".join(texts).split()
    assert len(texts) > 50 and len(words) > 50_000
    assert texts == pydoc_texts()  # fixed order


# ----------------------------------------------------------------------------- pairs

def test_batches_draw_from_the_shared_sampler():
    """PairBatcher's rows are sentence_pairs.sample_pair's pairs (Hugging Face labels)."""
    import random

    docs = make_documents(50, seed=0)
    tok = corpus_tokenizer()
    for task in ("nsp", "sop"):
        batch = PairBatcher(docs, tok, task).batch(32, random.Random(7))
        rng, candidates = random.Random(7), consecutive_pairs(docs)
        for r in range(32):
            (da, ia), (db, ib), label = sample_pair(docs, candidates, task, rng)
            a = tok.convert_tokens_to_ids(tok.tokenize(docs[da].sentences[ia]))
            b = tok.convert_tokens_to_ids(tok.tokenize(docs[db].sentences[ib]))
            ids = [tok.cls_token_id] + a + [tok.sep_token_id] + b + [tok.sep_token_id]
            assert batch["input_ids"][r, :len(ids)].tolist() == ids
            assert int(batch["next_sentence_label"][r]) == label


def test_batches():
    docs = make_documents(50, seed=0)
    tok = corpus_tokenizer()
    batcher = PairBatcher(docs, tok, "sop")
    import random

    batch = batcher.batch(16, random.Random(0))
    ids, types, mask = batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]
    assert ids.shape == types.shape == mask.shape and ids.shape[0] == 16
    assert (ids[:, 0] == tok.cls_token_id).all()
    assert ((ids == tok.sep_token_id).sum(1) == 2).all()
    assert torch.equal(batch["special_tokens_mask"],
                       torch.isin(ids, torch.tensor(tok.special_ids)))
    assert (types[mask == 0] == 0).all() and (ids[mask == 0] == tok.pad_token_id).all()


# ----------------------------------------------------------------------------- training

def test_pretraining_learns():
    config = PretrainConfig(**{**TINY, "steps": 80, "log_every": 10, "lr": 3e-3, "batch_size": 32})
    result = pretrain(config, seed=0, progress=False)
    h = result.history
    assert list(h.columns) == ["step", "loss", "mlm_loss", "nsp_loss", "mlm_acc", "nsp_acc", "lr"]
    assert h.step.iloc[-1] == 79
    vocab = len(result.tokenizer)
    assert abs(h.mlm_loss.iloc[0] - torch.log(torch.tensor(float(vocab)))) < 0.5  # ~uniform
    assert h.mlm_loss.iloc[-1] < h.mlm_loss.iloc[0] - 1.0, h
    assert not result.model.training
    # on unseen documents it beats always predicting the most frequent token ("the")
    docs = make_documents(50, seed=99)
    counts = Counter(t for d in docs for s in d.sentences for t in result.tokenizer.tokenize(s))
    baseline = counts.most_common(1)[0][1] / sum(counts.values())
    metrics = evaluate(result.model, result.tokenizer, docs, n_pairs=256)
    assert metrics["mlm_acc"] > baseline + 0.05, (metrics, baseline)


def test_load_or_pretrain_caches(tmp_path):
    config = PretrainConfig(**TINY)
    path = cache_path(config, 3, tmp_path)
    assert not path.exists()
    first = load_or_pretrain(config, seed=3, cache_dir=tmp_path, progress=False, device="cpu")
    assert path.exists() and path.name.startswith("tiny_bert_")
    second = load_or_pretrain(config, seed=3, cache_dir=tmp_path, progress=False, device="cpu")
    for (k1, v1), (k2, v2) in zip(first.model.state_dict().items(),
                                  second.model.state_dict().items()):
        assert k1 == k2 and torch.equal(v1, v2)
    pd.testing.assert_frame_equal(first.history, second.history)
    # another seed or config is another file
    assert cache_path(config, 4, tmp_path) != path
    assert cache_path(PretrainConfig(**{**TINY, "task": "sop"}), 3, tmp_path) != path
    # a GPU-trained checkpoint never stands in for the CPU one
    assert cache_path(config, 3, tmp_path, "cuda").name == path.stem + "_cuda.pt"
    # nor a 2-thread one for the 1-thread one
    assert cache_path(config, 3, tmp_path, num_threads=2) != path


def test_cache_key_follows_the_source_config_seed_and_threads(tmp_path, monkeypatch):
    config = PretrainConfig(**TINY)
    names = {p.name for p in source_modules()}
    assert {"pretraining.py", "pretraining_batches.py", "bert.py", "masking.py",
            "sentence_pairs.py", "corpus.py", "tokenization.py", "transformer.py", "schedules.py"} <= names
    assert "pretraining_cli.py" not in names      # the launcher imports pretraining, not the other way
    # the subpackage's modules and its __init__.py (which importing them runs) are followed too
    package = Path(pretraining.__file__).parent
    assert {package / "data" / "corpus.py", package / "data" / "__init__.py"} <= set(source_modules())
    key = cache_key(config, 0)
    assert key == cache_key(PretrainConfig(**TINY), 0)                  # deterministic
    assert cache_key(PretrainConfig(**{**TINY, "lr": 1e-3}), 0) != key   # config
    assert cache_key(PretrainConfig(**{**TINY, "task": "sop"}), 0) != key
    assert cache_key(config, 1) != key                                   # seed
    assert cache_key(config, 0, num_threads=2) != key                    # threads
    # the source: a copy of the modules with one character changed gives another digest
    copies = []
    for path in source_modules():
        copy = tmp_path / path.relative_to(package)       # course_lib/data/__init__.py too
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(path.read_bytes())
        copies.append(copy)
    assert source_digest(copies) == source_digest()
    masking = tmp_path / "masking.py"
    masking.write_text(masking.read_text() + "\n# changed\n")
    assert source_digest(copies) != source_digest()
    assert cache_key(config, 0, source=source_digest(copies)) != key
    # COURSE_TORCH_THREADS (set by course sweep's 2-thread run) selects the training threads
    monkeypatch.setenv("COURSE_TORCH_THREADS", "2")
    assert pretraining.training_threads() == 2
    assert cache_path(config, 0, tmp_path) == cache_path(config, 0, tmp_path, num_threads=2)


def test_torchrun_two_processes_match_one_process(tmp_path):
    """DDP over gloo with 2 CPU processes: each rank takes half of every global batch, so the
    losses equal the single-process run's up to float summation order (tolerance 1e-4)."""
    config = PretrainConfig(**TINY)
    single = pretrain(config, seed=0, progress=False).history
    out = tmp_path / "history.csv"
    args = [f"--{k.replace('_', '-')}={v}" for k, v in TINY.items()]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "course_lib.pretraining_cli", "--no-cache", "--seed=0", f"--history-out={out}", *args],
        capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "world_size=2" in proc.stdout
    ddp = pd.read_csv(out)
    assert len(ddp) == len(single) == TINY["steps"]
    for column in ("loss", "mlm_loss", "nsp_loss"):
        diff = (ddp[column] - single[column]).abs().max()
        assert diff < 1e-4, f"{column}: max |2 processes - 1 process| = {diff:.2e}"
    # and it did train: the loss moved
    assert single.loss.iloc[-1] < single.loss.iloc[0]
