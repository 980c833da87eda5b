"""Pretrain a tiny BERT on the synthetic corpus: masked LM + NSP or SOP (lessons 16 and 17).

    result = load_or_pretrain(PretrainConfig(task="sop"), seed=0)     # model, tokenizer, history

The command line and the processes torchrun starts are `course_lib.pretraining_cli`:

    python -m course_lib.pretraining_cli                               # one process, ~85 s
    torchrun --nproc_per_node=2 -m course_lib.pretraining_cli ...      # two processes, same result

Data: sentence pairs from `course_lib.data.corpus.make_documents`, drawn by
`course_lib.sentence_pairs.sample_pair` (the sampler lesson 16 uses) and batched by
`course_lib.pretraining_batches.PairBatcher`: a positive is two
consecutive sentences of one episode (label 0, Hugging Face's `next_sentence_label`); NSP's
negative replaces the second sentence by a sentence of another document, SOP's negative swaps
the two (label 1).

Distributed data parallel: every rank draws the same *global* batch from the same seeded
generators, masks it, and keeps its own contiguous slice of rows. The loss of a slice is
normalised by the global number of masked tokens (and of pairs) and multiplied by the world
size, so after DDP averages the gradients the update equals the single-process update on the
whole batch (up to floating-point summation order).

`load_or_pretrain(config, seed)` caches the trained weights in build/cache/pretraining/ under a
key made of everything that decides them: the source text of the course_lib modules that train
the model (this file and everything it imports from course_lib), the config, the seed, the number
of torch threads and torch's version (see `cache_key`; built by `course_lib.cache`, as every cache
of the course), so later lessons pay for pretraining once, and a change to the code never loads
weights that the old code trained.
"""
from __future__ import annotations

import os
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.std import tqdm  # text bars: readable in stored notebooks, no widget dependency

from . import cache
from .bert import BertConfig, BertForPreTraining
from .data.corpus import Document, corpus_tokenizer, make_documents
from .device import get_device, requested_threads, seed_everything, torch_threads
from .masking import IGNORE_INDEX
from .pretraining_batches import PairBatcher
from .schedules import make_scheduler
from .sentence_pairs import TASKS
from .tokenization import WordPieceTokenizer
from .validation import (require_choice, require_divisible, require_finite, require_int, require_positive,
                         require_positive_int, require_probability)


# ---------------------------------------------------------------------------------------------
# Configuration and training
# ---------------------------------------------------------------------------------------------

@dataclass
class PretrainConfig:
    """Everything that determines the trained weights (with the seed)."""
    task: str = "nsp"                  # "nsp" or "sop"
    n_docs: int = 2000
    min_sentences: int = 4
    max_sentences: int = 8
    hidden_size: int = 64
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    intermediate_size: int = 256
    max_position_embeddings: int = 64
    dropout: float = 0.0               # 0 keeps multi-process runs identical to one process
    # BERT uses 0.02; at hidden_size 64 that leaves attention uniform for so long that NSP sat
    # at ln 2 for ~2,300 steps (seed 0). 0.05 learned it by step ~1,050-1,300 (seeds 0-2).
    initializer_range: float = 0.05
    mask_ratio: float = 0.15
    mask_prob_split: tuple[float, float, float] = (0.8, 0.1, 0.1)
    steps: int = 3000                  # seed 1 left the NSP plateau only at step ~1,570 (2,000 left it at ln 2)
    batch_size: int = 64               # the global batch, whatever the number of processes
    lr: float = 2e-3                   # peak learning rate
    warmup_steps: int = 300
    weight_decay: float = 0.01
    log_every: int = 10

    def __post_init__(self):
        # checked here, so that a bad field is named as the config names it, not as the function
        # deep inside pretrain() that first reads it (warmup_steps, ratio, docs ...)
        require_choice("task", self.task, TASKS)
        require_int("n_docs", self.n_docs, minimum=2)            # NSP negatives need another document
        for name in ("min_sentences", "max_sentences", "hidden_size", "num_hidden_layers",
                     "num_attention_heads", "intermediate_size", "max_position_embeddings",
                     "steps", "batch_size", "log_every"):
            require_positive_int(name, getattr(self, name))
        if self.min_sentences > self.max_sentences:
            raise ValueError(f"max_sentences: expected >= min_sentences={self.min_sentences}, "
                             f"got {self.max_sentences}")
        require_divisible("hidden_size", self.hidden_size, "num_attention_heads", self.num_attention_heads)
        for name in ("dropout", "mask_ratio"):
            require_probability(name, getattr(self, name))
        for name in ("initializer_range", "lr"):
            require_positive(name, getattr(self, name))
        require_int("warmup_steps", self.warmup_steps, minimum=0)
        require_finite("weight_decay", self.weight_decay, minimum=0.0)
        self.mask_prob_split = tuple(float(p) for p in self.mask_prob_split)   # one key for (0.8, .1, .1)
        if len(self.mask_prob_split) != 3 or min(self.mask_prob_split) < 0 \
                or not abs(sum(self.mask_prob_split) - 1.0) <= 1e-6:
            raise ValueError(f"mask_prob_split: expected three non-negative shares summing to 1 "
                             f"(mask, random, keep), got {self.mask_prob_split}")

    def bert_config(self, vocab_size: int) -> BertConfig:
        return BertConfig(vocab_size=vocab_size, hidden_size=self.hidden_size,
                          num_hidden_layers=self.num_hidden_layers,
                          num_attention_heads=self.num_attention_heads,
                          intermediate_size=self.intermediate_size,
                          hidden_dropout_prob=self.dropout,
                          attention_probs_dropout_prob=self.dropout,
                          max_position_embeddings=self.max_position_embeddings,
                          initializer_range=self.initializer_range)

    def key(self, seed: int, num_threads: int = 1) -> str:
        """The checkpoint's cache key: see `cache_key`."""
        return cache_key(self, seed, num_threads)


def source_modules() -> list[Path]:
    """The files of course_lib that pretraining runs: this module and, transitively, every
    course_lib module it imports (`course_lib.cache.source_modules`)."""
    return cache.source_modules(Path(__file__))


def source_digest(paths: list[Path] | None = None) -> str:
    """sha256 over the (name, text) of the pretraining source files (`course_lib.cache.source_digest`)."""
    return cache.source_digest(paths if paths is not None else source_modules())


def cache_key(config: PretrainConfig, seed: int, num_threads: int = 1,
              source: str | None = None) -> str:
    """A short hash of (config, seed, torch threads; the torch version; the pretraining source),
    made by `course_lib.cache.cache_key` like every cache of the course. The source is
    `source_digest()` unless given; the thread count is part of it because another count sums
    in another order, so it trains other weights (`course sweep`'s 2-thread run must not load
    the 1-thread checkpoint), and so is torch's version (another release may sum otherwise too)."""
    require_int("seed", seed)                   # a seed of 1.0 would key another file than 1
    inputs = {"config": asdict(config), "seed": seed, "threads": num_threads}
    return cache.cache_key(inputs, cache.versions("torch"),
                           source if source is not None else source_digest(), length=12)


def training_threads() -> int:
    """The torch threads pretraining uses: 1 (tiny matrices gain nothing from a second thread),
    unless COURSE_TORCH_THREADS says otherwise: the count `course_lib.device.torch_threads()`
    sets, named here because it is part of the cache key."""
    return requested_threads(1)


def rank_and_world() -> tuple[int, int]:
    """(rank, world_size); initialises the gloo process group under torchrun (WORLD_SIZE > 1)."""
    import torch.distributed as dist

    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size == 1:
        return 0, 1
    if not dist.is_initialized():
        dist.init_process_group("gloo")
    return dist.get_rank(), world_size


def training_device(device, world: int) -> torch.device:
    """Several processes train on the CPU (gloo); one process on `device` or the best available."""
    return torch.device("cpu") if world > 1 else torch.device(device or get_device())


class PretrainResult(NamedTuple):
    model: BertForPreTraining
    tokenizer: WordPieceTokenizer
    history: pd.DataFrame


def pretraining_losses(out, labels, next_sentence_label, n_masked: int, n_pairs: int):
    """(mlm, nsp) summed over this slice and divided by the *global* counts, so the slices'
    losses add up to the global batch's mean losses."""
    V = out.prediction_logits.shape[-1]
    mlm = F.cross_entropy(out.prediction_logits.reshape(-1, V), labels.reshape(-1),
                          ignore_index=IGNORE_INDEX, reduction="sum") / max(n_masked, 1)
    nsp = F.cross_entropy(out.seq_relationship_logits, next_sentence_label, reduction="sum") / n_pairs
    return mlm, nsp


def pretrain(config: PretrainConfig | None = None, seed: int = 0, progress: bool = True,
             device=None, num_threads: int | None = None) -> PretrainResult:
    """Train a BertForPreTraining from scratch; history has one row per `log_every` steps
    with step, loss, mlm_loss, nsp_loss, mlm_acc, nsp_acc (on the training batch), lr.

    Under torchrun (WORLD_SIZE > 1) it trains with DistributedDataParallel over gloo on
    the CPU; every rank returns the same model and history.

    num_threads: torch's intra-op threads while training (restored afterwards); None means
    `training_threads()`: 1 unless COURSE_TORCH_THREADS says otherwise. The tensors are so
    small that a second thread gains ~20% on an idle 2-core machine and loses many times that
    when the cores are shared; a fixed count also makes the weights independent of the
    caller's thread setting.
    """
    with torch_threads(num_threads):          # None: training_threads(); restored afterwards
        return _pretrain(config or PretrainConfig(), seed, progress, device)


def _pretrain(config: PretrainConfig, seed: int, progress: bool, device) -> PretrainResult:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    rank, world = rank_and_world()
    if config.batch_size % world:
        raise ValueError(f"batch_size={config.batch_size} must be divisible by the number of "
                         f"processes {world}")
    device = training_device(device, world)

    tokenizer = corpus_tokenizer(max_position_embeddings=config.max_position_embeddings)
    docs = make_documents(config.n_docs, seed, config.min_sentences, config.max_sentences)
    batcher = PairBatcher(docs, tokenizer, config.task)
    data_rng = random.Random(seed + 1)                        # same stream on every rank
    mask_gen = torch.Generator().manual_seed(seed + 2)

    seed_everything(seed)                                      # same initial weights everywhere
    model = BertForPreTraining(config.bert_config(len(tokenizer))).to(device)
    train_model = DistributedDataParallel(model) if world > 1 else model
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]  # biases, LayerNorm
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=config.lr, foreach=True)
    scheduler = make_scheduler(optimizer, "linear", total_steps=config.steps,
                               warmup_steps=min(config.warmup_steps, config.steps))

    rows = []
    lo, hi = rank * config.batch_size // world, (rank + 1) * config.batch_size // world
    bar = tqdm(range(config.steps), desc=f"pretrain {config.task}",
               disable=not progress or rank > 0,
               mininterval=float(os.environ.get("TQDM_MININTERVAL", 10)))
    model.train()
    for step in bar:
        batch = batcher.masked_batch(config.batch_size, data_rng, mask_gen,   # the global batch
                                     config.mask_ratio, config.mask_prob_split)
        n_masked = int((batch["labels"] != IGNORE_INDEX).sum())
        part = {k: batch[k][lo:hi].to(device) for k in
                ("input_ids", "token_type_ids", "attention_mask", "labels", "next_sentence_label")}
        out = train_model(part["input_ids"], part["token_type_ids"], part["attention_mask"])
        mlm, nsp = pretraining_losses(out, part["labels"], part["next_sentence_label"],
                                      n_masked, config.batch_size)
        optimizer.zero_grad(set_to_none=True)
        ((mlm + nsp) * world).backward()                       # DDP averages over the ranks
        lr = optimizer.param_groups[0]["lr"]
        optimizer.step()
        scheduler.step()
        if step % config.log_every == 0 or step == config.steps - 1:
            with torch.no_grad():
                sel = part["labels"] != IGNORE_INDEX
                mlm_hits = (out.prediction_logits.argmax(-1)[sel] == part["labels"][sel]).sum()
                nsp_hits = (out.seq_relationship_logits.argmax(-1)
                            == part["next_sentence_label"]).sum()
                stats = torch.stack([mlm.detach(), nsp.detach(), mlm_hits.float(),
                                     nsp_hits.float()]).cpu()
            if world > 1:
                dist.all_reduce(stats)                         # slices add up to the global batch
            row = {"step": step, "loss": float(stats[0] + stats[1]), "mlm_loss": float(stats[0]),
                   "nsp_loss": float(stats[1]), "mlm_acc": float(stats[2]) / max(n_masked, 1),
                   "nsp_acc": float(stats[3]) / config.batch_size, "lr": lr}
            rows.append(row)
            bar.set_postfix(mlm=f"{row['mlm_loss']:.3f}", nsp=f"{row['nsp_loss']:.3f}",
                            refresh=False)
    model.eval()
    return PretrainResult(model, tokenizer, pd.DataFrame(rows))


@torch.no_grad()
def evaluate(model: BertForPreTraining, tokenizer: WordPieceTokenizer, docs: list[Document],
             task: str = "nsp", n_pairs: int = 512, seed: int = 0, mask_ratio: float = 0.15,
             batch_size: int = 128) -> dict[str, float]:
    """MLM loss/accuracy (over masked tokens, 80/10/10 masking) and NSP/SOP loss/accuracy on
    `n_pairs` pairs drawn from `docs` (pass documents the model never saw, e.g.
    `make_documents(200, seed=1000 + seed)`)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    batcher = PairBatcher(docs, tokenizer, task)
    rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
    totals = torch.zeros(4, dtype=torch.float64)  # mlm loss sum, mlm hits, nsp loss sum, nsp hits
    n_masked = 0
    for start in range(0, n_pairs, batch_size):
        batch = batcher.masked_batch(min(batch_size, n_pairs - start), rng, gen, mask_ratio)
        out = model(batch["input_ids"].to(device), batch["token_type_ids"].to(device),
                    batch["attention_mask"].to(device))
        labels, nsp = batch["labels"].to(device), batch["next_sentence_label"].to(device)
        sel = labels != IGNORE_INDEX
        mlm_sum, nsp_sum = pretraining_losses(out, labels, nsp, 1, 1)
        totals += torch.tensor([mlm_sum.item(),
                                (out.prediction_logits.argmax(-1)[sel] == labels[sel]).sum().item(),
                                nsp_sum.item(),
                                (out.seq_relationship_logits.argmax(-1) == nsp).sum().item()],
                               dtype=torch.float64)
        n_masked += int(sel.sum())
    model.train(was_training)
    return {"mlm_loss": totals[0].item() / max(n_masked, 1),
            "mlm_acc": totals[1].item() / max(n_masked, 1),
            "nsp_loss": totals[2].item() / n_pairs, "nsp_acc": totals[3].item() / n_pairs}


def cache_path(config: PretrainConfig, seed: int, cache_dir: str | Path | None = None,
               device_type: str = "cpu", num_threads: int | None = None) -> Path:
    """Where the checkpoint of (config, seed) trained with the current source on `device_type`
    with `num_threads` torch threads (default `training_threads()`) lives. The device is part of
    the name: a GPU computes in another order, so its weights differ in the last bits, and a CPU run
    must not load them in place of its own (the stored notebooks' rounded numbers come from the CPU)."""
    if not isinstance(device_type, str) or torch.device(device_type).type != device_type:  # not "cuda:0"
        raise ValueError(f"device_type: expected a torch device type such as 'cpu' or 'cuda', got "
                         f"{device_type!r:.30}")
    cache_dir = Path(cache_dir) if cache_dir is not None else cache.cache_dir("pretraining")
    threads = num_threads if num_threads is not None else training_threads()
    suffix = "" if device_type == "cpu" else f"_{device_type}"
    return cache_dir / f"tiny_bert_{config.task}_{config.key(seed, threads)}{suffix}.pt"


def load_or_pretrain(config: PretrainConfig | None = None, seed: int = 0,
                     cache_dir: str | Path | None = None, progress: bool = True,
                     device=None, num_threads: int | None = None) -> PretrainResult:
    """The pretrained tiny BERT for (config, seed): loaded from the cache if present, else
    trained (about 85 s with the defaults on one CPU thread) and saved. Eval mode.
    On a GPU it trains there once and caches that checkpoint separately (see `cache_path`).
    num_threads: as in `pretrain` (default `training_threads()`); part of the cache key."""
    config = config or PretrainConfig()
    threads = num_threads if num_threads is not None else training_threads()
    _, world = rank_and_world()
    path = cache_path(config, seed, cache_dir, training_device(device, world).type, threads)
    if path.exists():
        # weights_only: the file holds tensors, lists, numbers and strings only, and
        # torch.load runs no code from it (a cache file is data, never a program)
        saved = torch.load(path, map_location="cpu", weights_only=True)
        tokenizer = corpus_tokenizer(max_position_embeddings=config.max_position_embeddings)
        model = BertForPreTraining(config.bert_config(len(tokenizer)))
        model.load_state_dict(saved["model"])
        model.eval()
        if device is not None:
            model.to(device)
        return PretrainResult(model, tokenizer, pd.DataFrame(saved["history"]))
    result = pretrain(config, seed, progress=progress, device=device, num_threads=threads)
    rank, _ = rank_and_world()
    if rank == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
        with cache.atomic_path(path) as tmp:      # a reader never sees half a file
            torch.save({"model": {k: v.cpu() for k, v in result.model.state_dict().items()},
                        "history": result.history.to_dict("list"), "config": asdict(config),
                        "seed": seed, "threads": threads, "source": source_digest()}, tmp)
    return result
