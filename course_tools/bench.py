"""`course bench` / `make bench`: how fast is the course's BERT next to Hugging Face's?

Why one module: the three groups below and the busy-machine run (`--busy N`, the same table under
background load) share one row format, one interleaved timer and the same models and inputs, so
the table is made and written in one place; the timing statistics themselves live in
`course_lib.timing` and the busy workers in `course_tools.threads`.

One interleaved run (every case of a group is called once per round, in a rotated order, so a
slow spell of a shared machine hits all of them alike) of:

1. the MiniLM forward pass (real tokens from Python's documentation) at batch 32 x 128, the
   same batch with half its rows padded to half length (the attention-mask path), and 1 x 128:
   Hugging Face `BertModel` with eager attention and with SDPA, and the course's
   `BertModel` (fused attention, `course_lib.bert`), with the largest difference of the course's
   hidden states from Hugging Face's SDPA model (all tokens of the full batch, and the real
   tokens of a padded batch);
2. one pretraining step (forward, backward, AdamW) of the tiny BERT of lessons 16-17 (its
   `PretrainConfig`), course `BertForPreTraining` vs `transformers.BertForPreTraining` with the
   same config and weights, in tokens per second;
3. lesson 25's CPU paths (`course_lib.fast_inference`) at batch 1 and 32, one thread each as the
   lesson times them (`--runs N`: batch 1 in N separate runs, the slowest and fastest shown):
   PyTorch dynamic int8 (per tensor, per channel, and per channel with 8-bit activations on a CPU
   with VNNI), ONNX Runtime fp32 and int8 (per channel), each as exported (unfused) and fused by
   ONNX Runtime's BERT optimizer (`course_lib.onnx_export`, with the fused-operator counts), against the best
   fp32 path (the fastest of the course's model, Hugging Face's SDPA model and ONNX Runtime fp32,
   fused or not), with the min-max of the per-round speed ratios, the cosine of their
   mean-pooled sentence embeddings to fp32 and, on MiniLM, the STS Spearman of lesson 25's
   similarity pairs against fp32's. CPU only: skipped on a GPU.

Results: `build/bench.csv` (seconds and ratios) and, with `--update-readme`, the table of `docs/results.md`
between `<!-- bench:begin -->` and `<!-- bench:end -->`: ratios only (absolute times depend on
the machine and its load), with the machine stated. `--quick` runs every path on a tiny random
BERT with small shapes (the test suite uses it).
"""
from __future__ import annotations

import os
import platform
import statistics
from pathlib import Path
from typing import Callable

import pandas as pd

from course_tools.threads import PASSIVE_WAIT

# Idle OpenMP threads sleep instead of spinning (course_tools.threads): OpenMP reads this when torch
# loads it, so it is set before torch's import (`course bench` imports torch here first; a value
# already set is kept). On a busy machine spinning threads stalled torch many-fold (`--busy N`).
for _key, _value in PASSIVE_WAIT.items():
    os.environ.setdefault(_key, _value)

import torch  # noqa: E402

from course_lib.timing import ratio_range, time_interleaved  # noqa: E402

from .runner import BUILD, replace_readme_block  # noqa: E402

BENCH_BEGIN, BENCH_END = "<!-- bench:begin -->", "<!-- bench:end -->"
BUSY_BEGIN, BUSY_END = "<!-- bench-busy:begin -->", "<!-- bench-busy:end -->"
COLUMNS = ["group", "case", "reference", "seconds", "reference seconds", "speed ratio",
           "max abs diff", "cosine", "note", "speed ratio min", "speed ratio max",
           "STS Spearman", "Spearman diff", "fused ops", "runs", "run ratio min", "run ratio max"]


# ---------------------------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------------------------

def _synchronizer(device: torch.device) -> Callable[[], None]:
    return torch.cuda.synchronize if device.type == "cuda" else (lambda: None)


def median_seconds(runs: dict[str, Callable[[], object]], repeats: int, warmup: int = 1,
                   sync: Callable[[], None] | None = None, seed: int | None = None,
                   inference_mode: bool = True) -> dict[str, float]:
    """Median seconds per call of each function, measured round-robin by lesson 25's timer
    (`course_lib.timing.time_interleaved`: each round calls every function once,
    starting one further along each round, or in a random order when `seed` is given)."""
    times = time_interleaved(runs, repeats, warmup, seed=seed, sync=sync, inference_mode=inference_mode)
    return {name: statistics.median(t) for name, t in times.items()}


def _row(group, case, reference, seconds, reference_seconds, diff=None, cosine=None, note=""):
    return {"group": group, "case": case, "reference": reference, "seconds": seconds,
            "reference seconds": reference_seconds,
            "speed ratio": reference_seconds / seconds if seconds else float("nan"),
            "max abs diff": diff, "cosine": cosine, "note": note}


# ---------------------------------------------------------------------------------------------
# models and inputs
# ---------------------------------------------------------------------------------------------

def _hf_bert(course_model, attn_implementation: str):
    """A Hugging Face BertModel with the course model's config and weights."""
    import transformers

    c = course_model.config
    config = transformers.BertConfig(**c.to_dict())
    config._attn_implementation = attn_implementation
    model = transformers.BertModel(config)
    missing, unexpected = model.load_state_dict(course_model.to_hf_state_dict(), strict=False)
    if unexpected or any(not k.endswith("_ids") for k in missing):   # buffers only
        raise RuntimeError(f"weights did not copy: missing {missing}, unexpected {unexpected}")
    return model.eval()


def _models(quick: bool, device: torch.device):
    """(course BertModel, HF eager, HF SDPA, tokenizer or None), all in eval mode on device."""
    from course_lib.bert import BertConfig, BertModel

    if quick:
        torch.manual_seed(0)
        config = BertConfig(vocab_size=512, hidden_size=32, num_hidden_layers=2,
                            num_attention_heads=4, intermediate_size=64,
                            max_position_embeddings=64)
        course, tokenizer = BertModel(config).eval(), None
    else:
        from course_lib.pretrained import load_minilm
        course, tokenizer = load_minilm()
    hf_eager, hf_sdpa = _hf_bert(course, "eager"), _hf_bert(course, "sdpa")
    return course.to(device), hf_eager.to(device), hf_sdpa.to(device), tokenizer


def real_token_batch(tokenizer, batch_size: int, seq_len: int) -> dict[str, torch.Tensor]:
    """(batch_size, seq_len) ids of consecutive windows of Python's documentation, each
    [CLS] ... [SEP]: real tokens, no padding."""
    from course_lib.data.corpus import pydoc_texts

    need, ids = batch_size * (seq_len - 2), []
    for text in pydoc_texts():
        ids += tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text[:20_000]))
        if len(ids) >= need:
            break
    rows = [[tokenizer.cls_token_id] + ids[i * (seq_len - 2):(i + 1) * (seq_len - 2)]
            + [tokenizer.sep_token_id] for i in range(batch_size)]
    input_ids = torch.tensor(rows)
    return {"input_ids": input_ids, "token_type_ids": torch.zeros_like(input_ids),
            "attention_mask": torch.ones_like(input_ids)}


def _random_batch(vocab_size: int, batch_size: int, seq_len: int, padded: bool,
                  generator: torch.Generator) -> dict[str, torch.Tensor]:
    ids = torch.randint(5, vocab_size, (batch_size, seq_len), generator=generator)
    mask = torch.ones_like(ids)
    if padded:
        lengths = torch.randint(seq_len // 2, seq_len + 1, (batch_size,), generator=generator)
        lengths[0] = seq_len
        mask = (torch.arange(seq_len)[None, :] < lengths[:, None]).long()
        ids = ids * mask
    return {"input_ids": ids, "token_type_ids": torch.zeros_like(ids), "attention_mask": mask}


def half_padded(batch: dict[str, torch.Tensor], pad_id: int = 0) -> dict[str, torch.Tensor]:
    """The batch with its second half of rows cut to half length and right-padded: the
    attention-mask path of a model, timed at the same shape as the unpadded batch."""
    B, T = batch["input_ids"].shape
    mask = torch.ones_like(batch["input_ids"])
    mask[B // 2:, T // 2:] = 0
    ids = torch.where(mask.bool(), batch["input_ids"], torch.full_like(batch["input_ids"], pad_id))
    return {"input_ids": ids, "token_type_ids": batch["token_type_ids"] * mask, "attention_mask": mask}


def _padded_real_batch(tokenizer) -> dict[str, torch.Tensor]:
    from course_lib.data.corpus import pydoc_texts

    sentences = [s.strip() for s in pydoc_texts()[3].split(".") if s.strip()][:16]
    return tokenizer(sentences, max_length=128)


def _to(batch: dict, device) -> dict:
    return {k: v.to(device) for k, v in batch.items()}


def _course_hidden(model, batch):
    return model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]).last_hidden_state


def _hf_hidden(model, batch):
    return model(**batch).last_hidden_state


def _max_diff(course, hf, batch) -> float:
    with torch.inference_mode():
        a, b = _course_hidden(course, batch), _hf_hidden(hf, batch)
    real = batch["attention_mask"].bool()
    return (a - b)[real].abs().max().item()


# ---------------------------------------------------------------------------------------------
# the three groups
# ---------------------------------------------------------------------------------------------

def bench_forward(course, hf_eager, hf_sdpa, batch, repeats, sync, padded_batch=None) -> list[dict]:
    B, T = batch["input_ids"].shape
    padded_rows = int((batch["attention_mask"] == 0).any(1).sum())
    group = f"forward {B}x{T}" + (f", {padded_rows} rows padded to half length" if padded_rows else "")
    runs = {"Hugging Face eager": lambda: _hf_hidden(hf_eager, batch),
            "Hugging Face SDPA": lambda: _hf_hidden(hf_sdpa, batch),
            "course BertModel": lambda: _course_hidden(course, batch)}
    t = median_seconds(runs, repeats, sync=sync, seed=0)               # in inference mode
    diff = _max_diff(course, hf_sdpa, batch)
    note = "max abs diff: all tokens of this batch"
    if padded_batch is not None:
        diff = max(diff, _max_diff(course, hf_sdpa, padded_batch))
        note += " and the real tokens of a padded batch"
    ref = t["Hugging Face SDPA"]
    return [_row(group, "Hugging Face eager", "Hugging Face SDPA", t["Hugging Face eager"], ref),
            _row(group, "course BertModel", "Hugging Face SDPA", t["course BertModel"], ref,
                 diff=diff, note=note)]


def bench_pretraining(quick: bool, device, repeats, sync) -> list[dict]:
    """One optimizer step of course vs Hugging Face BertForPreTraining, same config and weights."""
    import transformers

    from course_lib.bert import BertForPreTraining
    from course_lib.masking import IGNORE_INDEX
    from course_lib.pretraining import PretrainConfig

    pc = PretrainConfig()
    config = pc.bert_config(vocab_size=1000)
    B, T = (4, 16) if quick else (pc.batch_size, 48)
    torch.manual_seed(0)
    hf_config = transformers.BertConfig(**config.to_dict())
    hf_config._attn_implementation = "sdpa"
    hf = transformers.BertForPreTraining(hf_config).to(device).train()
    course = BertForPreTraining.from_hf_state_dict(config, hf.state_dict()).to(device).train()
    g = torch.Generator().manual_seed(0)
    batch = _random_batch(config.vocab_size, B, T, padded=True, generator=g)
    selected = (torch.rand(B, T, generator=g) < pc.mask_ratio) & batch["attention_mask"].bool()
    labels = torch.where(selected, batch["input_ids"],                # never a padded position
                         torch.full_like(batch["input_ids"], IGNORE_INDEX))
    labels[:, 1] = batch["input_ids"][:, 1]                  # at least one MLM target per row
    nsp = torch.randint(0, 2, (B,), generator=g)
    batch, labels, nsp = _to(batch, device), labels.to(device), nsp.to(device)
    with torch.no_grad():             # without dropout: its draws differ (the course skips padding)
        course.eval(), hf.eval()
        loss_diff = abs(course(**batch, labels=labels, next_sentence_label=nsp).loss.item()
                        - hf(**batch, labels=labels, next_sentence_label=nsp).loss.item())
        course.train(), hf.train()
    optimizers = {m: torch.optim.AdamW(m.parameters(), lr=1e-4) for m in (course, hf)}

    def step(model):
        opt = optimizers[model]
        opt.zero_grad(set_to_none=True)
        model(**batch, labels=labels, next_sentence_label=nsp).loss.backward()
        opt.step()

    # a training step needs autograd: timed outside inference mode
    t = median_seconds({"hf": lambda: step(hf), "course": lambda: step(course)},
                       repeats, sync=sync, inference_mode=False)
    group = f"tiny-BERT pretraining step {B}x{T}"
    return [_row(group, "course BertForPreTraining", "transformers BertForPreTraining",
                 t["course"], t["hf"], diff=loss_diff,
                 note=f"{B * T / t['course']:,.0f} vs {B * T / t['hf']:,.0f} tokens/s; "
                      f"max abs diff: first loss, dropout off")]


def _any_hidden(model, batch):
    """Token vectors of a course / Hugging Face / int8 BertModel or an ONNX Runtime encoder."""
    return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                 token_type_ids=batch["token_type_ids"]).last_hidden_state


def _sts_set(course):
    """(sentences, labels) of lesson 19's similarity pairs (seed 0, 120 pairs per label: lesson 25's
    60 pairs cannot resolve a Spearman difference of 0.005) and the MiniLM tokenizer, when `course`
    is MiniLM; else None (--quick's tiny BERT)."""
    from course_lib.pretrained import minilm_config, minilm_tokenizer

    if course.config != minilm_config():
        return None
    from course_lib.data.similarity_pairs import similarity_pairs

    pairs = similarity_pairs(0, n_per_label=120)
    return [a for a, _, _ in pairs] + [b for _, b, _ in pairs], [y for *_, y in pairs], minilm_tokenizer()


def _sts_spearman(model, sts) -> float:
    """Spearman of the pairs' embedding cosines with their labels (`_sts_set`)."""
    from course_lib import fast_inference as fi
    from course_lib.sentence_similarity import spearman

    sentences, labels, tokenizer = sts
    vectors = torch.cat([fi.embed(model, fi.pad_batch([tokenizer.encode(t) for t in sentences[i:i + 64]]))
                         for i in range(0, len(sentences), 64)])
    n = len(labels)
    return spearman(torch.nn.functional.cosine_similarity(vectors[:n], vectors[n:]), labels)


def _fused_ops(model) -> str:
    """'Attention 6, EmbedLayerNormalization 1, ...' for an ONNX Runtime session, '' otherwise."""
    from course_lib.onnx_export import OnnxEncoder

    if not isinstance(model, OnnxEncoder):
        return ""
    counts = model.fused_operators()
    return ", ".join(f"{k} {counts[k]}" for k in ("Attention", "QAttention", "EmbedLayerNormalization",
                                                  "SkipLayerNormalization", "BiasGelu", "Softmax"))


def _timed_runs(models: dict, fp32: dict, batch: dict, repeats: int, n_runs: int):
    """`n_runs` separate interleaved timings of `models` on `batch` (in inference mode), each run's
    ratios against that run's own fastest fp32 path. Returns (median time per model over the runs'
    medians, the fastest fp32 path by that time, per model its ratio in each run, every round pooled)."""
    calls = {name: (lambda m=m: _any_hidden(m, batch)) for name, m in models.items()}
    per_run = [time_interleaved(calls, repeats, seed=run) for run in range(n_runs)]
    medians = [{name: statistics.median(v) for name, v in times.items()} for times in per_run]
    run_ratios = {name: [t[min(fp32, key=t.get)] / t[name] for t in medians] for name in models}
    t = {name: statistics.median(m[name] for m in medians) for name in models}
    pooled = {name: [x for times in per_run for x in times[name]] for name in models}
    return t, min(fp32, key=t.get), run_ratios, pooled


def bench_fast_inference(course, hf_sdpa, batches: list[dict], repeats: Callable[[int], int],
                         cache_dir, runs: int = 1) -> list[dict]:
    """Lesson 25's int8 and ONNX Runtime paths against the best fp32 path (CPU); at batch 1 timed in
    `runs` separate interleaved runs (their median, and the slowest and fastest run's ratio)."""
    from course_lib import fast_inference as fi
    from course_lib import quantization as q8
    from course_lib.onnx_export import onnx_session

    def ort(int8: bool, fused: bool):
        return onnx_session(course, int8=int8, per_channel=True, fused=fused, cache_dir=cache_dir,
                            num_threads=1)

    # ONNX Runtime's fp32 graph is an fp32 path too: on some CPUs it is the fastest one, and the
    # int8 speed-up must be measured against whichever fp32 path is fastest here
    fp32 = {"course fp32": course, "Hugging Face SDPA fp32": hf_sdpa,
            "ONNX Runtime fp32": ort(False, False),
            "ONNX Runtime fp32, fused (BERT optimizer)": ort(False, True)}
    int8 = {"torch int8, per tensor": q8.quantize_int8(course, per_channel=False),
            "torch int8, per channel": q8.quantize_int8(course, per_channel=True),
            **({"torch int8, per channel, 8-bit activations":
                q8.quantize_int8(course, per_channel=True, reduce_range=False)}
               if q8.vnni_supported() else {}),
            "ONNX Runtime int8, per channel": ort(True, False),
            "ONNX Runtime int8, per channel, fused graph": ort(True, True)}
    models = {**fp32, **int8}
    sts = _sts_set(course)
    spearmans = {name: _sts_spearman(m, sts) for name, m in models.items()} if sts else {}
    ops = {name: _fused_ops(m) for name, m in models.items()}
    rows = []
    # One thread, as lesson 25 times them and as the course runs a job (course_tools.threads): what
    # int8 changes is the work per thread; a second thread on 2 cores adds its synchronisation
    threads_before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for batch in batches:
            B, T = batch["input_ids"].shape
            n_runs = runs if B == 1 else 1          # 32 x 128: one run, each round takes seconds
            t, best, run_ratios, pooled = _timed_runs(models, fp32, batch, repeats(B), n_runs)
            reference = fi.embed(course, batch)
            for name, model in models.items():                 # the best fp32 path itself shows 1.0x
                cosine = torch.nn.functional.cosine_similarity(fi.embed(model, batch), reference).min()
                row = _row(f"lesson 25 paths {B}x{T} (CPU)", name, f"best fp32 ({best})",
                           t[name], t[best], cosine=cosine.item(),
                           note="cosine: smallest over the batch, mean-pooled embeddings vs fp32; "
                                "speed ratio min/max: the slowest and fastest round (paired); "
                                "run ratio min/max: the slowest and fastest run's median against its "
                                "own fastest fp32 path")
                row["speed ratio min"], row["speed ratio max"] = ratio_range(pooled, best, name)
                row["runs"] = n_runs
                if n_runs > 1:
                    row["run ratio min"], row["run ratio max"] = min(run_ratios[name]), max(run_ratios[name])
                if spearmans:
                    row["STS Spearman"] = spearmans[name]
                    row["Spearman diff"] = spearmans[name] - spearmans["course fp32"]
                row["fused ops"] = ops[name]
                rows.append(row)
    finally:
        torch.set_num_threads(threads_before)
    return rows


# ---------------------------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------------------------

def machine() -> dict:
    import transformers

    device = __import__("course_lib.device", fromlist=["get_device"]).get_device()
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    else:
        name = platform.processor() or platform.machine()
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
    return {"device": f"{device.type} ({name})", "cores": os.cpu_count(),
            "torch threads": torch.get_num_threads(),
            "OpenMP wait": os.environ.get("OMP_WAIT_POLICY", "default (spin)"), "torch": torch.__version__,
            "transformers": transformers.__version__}


def run_bench(quick: bool = False, out: Path | None = None, cache_dir: Path | None = None,
              repeats: int | None = None, runs: int = 1) -> pd.DataFrame:
    """Run every group (lesson 25's paths `runs` times); write the CSV (default build/bench.csv) and
    return the table."""
    from course_lib.device import get_device

    device = get_device()
    sync = _synchronizer(device)
    course, hf_eager, hf_sdpa, tokenizer = _models(quick, device)
    g = torch.Generator().manual_seed(0)
    if quick:
        shapes = [(4, 16), (1, 16)]
        batches = [_random_batch(course.config.vocab_size, B, T, False, g) for B, T in shapes]
        padded = _random_batch(course.config.vocab_size, 4, 16, True, g)
    else:
        batches = [real_token_batch(tokenizer, 32, 128), real_token_batch(tokenizer, 1, 128)]
        padded = _padded_real_batch(tokenizer)

    def n(batch_size: int) -> int:
        """Repeats: fewer for the big batch (each call takes ~0.5 s on 2 CPU cores)."""
        if repeats:
            return repeats
        if quick:
            return 2
        return (10 if batch_size > 1 else 40) * (3 if device.type == "cuda" else 1)

    rows = []
    for batch in batches + [half_padded(batches[0])]:
        rows += bench_forward(course, hf_eager, hf_sdpa, _to(batch, device),
                              n(batch["input_ids"].shape[0]), sync,
                              padded_batch=_to(padded, device))
    rows += bench_pretraining(quick, device, repeats or (2 if quick else 20), sync)
    if device.type == "cpu":
        rows += bench_fast_inference(course, hf_sdpa, batches[::-1],
                                     lambda B: n(B) if B > 1 else n(B) // 2 or 1,   # >= 10 rounds each
                                     cache_dir, runs=runs)
    else:
        rows.append(_row("lesson 25 paths", "int8 / ONNX Runtime", "-", float("nan"),
                         float("nan"), note=f"CPU-only paths, skipped on {device.type}"))
    table = pd.DataFrame(rows, columns=COLUMNS)
    for key, value in machine().items():
        table[key] = value
    out = Path(out) if out is not None else BUILD / "bench.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False)
    return table


# ---------------------------------------------------------------------------------------------
# `course bench --busy N`: the same table with N background processes burning cores
# ---------------------------------------------------------------------------------------------

def busy_table(quiet: pd.DataFrame, busy: pd.DataFrame, burners: int) -> pd.DataFrame:
    """Per row of the table: seconds quiet and busy, the slow-down busy / quiet, and the row's speed
    ratio against its reference quiet and busy (within each table the cases were interleaved, so
    those two are fair; quiet and busy were two runs, one after the other)."""
    keys = ["group", "case"]            # the reference (the fastest fp32 path) may differ quiet and busy
    merged = quiet[keys + ["reference", "seconds", "speed ratio"]].merge(
        busy[keys + ["reference", "seconds", "speed ratio"]], on=keys, suffixes=(" quiet", " busy"),
        how="outer", sort=False)
    merged["busy / quiet"] = merged["seconds busy"] / merged["seconds quiet"]
    merged["burners"] = burners
    for key, value in machine().items():
        merged[key] = value
    return merged


def run_busy_bench(burners: int, quick: bool = False, out: Path | None = None,
                   cache_dir: Path | None = None, repeats: int | None = None) -> pd.DataFrame:
    """The bench table twice, quiet and with `burners` background processes each burning a core
    (`course_lib.timing.busy_cores`, stopped on the way out, Ctrl-C included); writes
    build/bench-busy.csv (or `out`) and returns `busy_table`. `repeats` defaults to 3 (5 with
    `quick`): the point is the collapse, many-fold where it happens, not the last percent."""
    from course_lib.timing import busy_cores

    out = Path(out) if out is not None else BUILD / "bench-busy.csv"
    repeats = repeats or (5 if quick else 3)
    quiet = run_bench(quick=quick, out=out.with_name(out.stem + "-quiet.csv"), cache_dir=cache_dir,
                      repeats=repeats)
    with busy_cores(burners):
        busy = run_bench(quick=quick, out=out.with_name(out.stem + "-loaded.csv"), cache_dir=cache_dir,
                         repeats=repeats)
    table = busy_table(quiet, busy, burners)
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False)
    return table


def busy_markdown(table: pd.DataFrame) -> str:
    """`course bench --busy N`'s table: slow-down under load, speed vs reference quiet and busy."""
    shown = pd.DataFrame({
        "group": table["group"], "case": table["case"],
        "reference": [q if q == b or pd.isna(b) else f"{q} (busy: {b})"
                      for q, b in zip(table["reference quiet"], table["reference busy"])],
        "busy / quiet time": [_fmt(x, 3) + "×" if not pd.isna(x) else "" for x in table["busy / quiet"]],
        "speed vs reference, quiet": [_fmt(x, 3) + "×" if not pd.isna(x) else ""
                                      for x in table["speed ratio quiet"]],
        "speed vs reference, busy": [_fmt(x, 3) + "×" if not pd.isna(x) else ""
                                     for x in table["speed ratio busy"]]})
    m = table.iloc[0]
    return (shown.to_markdown(index=False)
            + f"\n\nBusy: {m['burners']} background processes each burning a core. Machine: "
              f"{m['device']}, {m['cores']} cores, torch threads {m['torch threads']}, OpenMP wait "
              f"{m['OpenMP wait']}. A busy / quiet "
              f"time far above (burners + cores) / cores is a collapse, not a fair share of the CPU.")


def _fmt(value, digits):
    return "" if value is None or pd.isna(value) else f"{value:.{digits}g}"


def markdown(table: pd.DataFrame) -> str:
    """The docs/results.md block: speed ratios (reference time / case time: above 1 = faster than the
    reference), fidelity, and the machine."""
    shown = pd.DataFrame({
        "group": table["group"], "case": table["case"], "reference": table["reference"],
        "speed vs reference": [_fmt(x, 3) + "×" if not pd.isna(x) else "" for x in table["speed ratio"]],
        "min–max over rounds": _range_column(table),
        **({f"min–max over {int(table['runs'].max())} runs": _range_column(table, "run ratio")}
           if table.get("runs", pd.Series(dtype=float)).max() > 1 else {}),
        "max abs diff": [_fmt(x, 2) for x in table["max abs diff"]],
        "cosine": [_fmt(x, 4) for x in table["cosine"]],
        "Spearman diff": [_fmt(x, 2) for x in table.get("Spearman diff", pd.Series([None] * len(table)))]})
    m = table.iloc[0]
    return (shown.to_markdown(index=False)
            + f"\n\nSpeed vs reference: the reference's time divided by the case's (1.2× = 20% "
              f"more throughput), medians of interleaved runs; min–max: the slowest and fastest "
              f"round's paired ratio (lesson 25's paths, 1 thread each, as the lesson times them); over "
              f"runs: the slowest and fastest run's median ratio against that run's fastest fp32 path. "
              f"Spearman diff: STS Spearman (lesson 19's similarity pairs, 120 per label) minus fp32's; "
              f"cosine: the smallest over the batch. Machine: {m['device']}, "
              f"{m['cores']} cores, torch threads {m['torch threads']}, torch {m['torch']}, "
              f"transformers {m['transformers']}. Absolute times: `build/bench.csv`." + _operators(table))


def _operators(table: pd.DataFrame) -> str:
    """The operators of each ONNX graph of the table (its "fused ops" column), one line per case."""
    fused = table[table.get("fused ops", pd.Series([""] * len(table))).fillna("").astype(str) != ""]
    lines = "".join(f"\n- {row['case']}: {row['fused ops']}" for _, row in fused.drop_duplicates("case").iterrows())
    return ("\n\nOperators in each ONNX graph (counted in the file; ONNX Runtime's BERT optimizer fuses "
            "attention, the embeddings' LayerNorm, the residual LayerNorms and GELU, and leaves no "
            "Softmax):" + lines) if lines else ""


def _range_column(table: pd.DataFrame, prefix: str = "speed ratio") -> list[str]:
    """'1.6–2.9×' from a row's min and max ratio (per round, or per run: `prefix`), '' where it has none."""
    lows = table.get(f"{prefix} min", pd.Series([None] * len(table)))
    highs = table.get(f"{prefix} max", pd.Series([None] * len(table)))
    return [f"{_fmt(lo, 3)}–{_fmt(hi, 3)}×" if not (lo is None or pd.isna(lo)) else ""
            for lo, hi in zip(lows, highs)]


def update_readme(table: pd.DataFrame, readme: Path | None = None, busy: bool = False) -> None:
    """Write the speed table into docs/results.md (or `readme`), between the bench markers; with
    `busy`, `course bench --busy N`'s table (`busy_table`) between the busy markers beside it."""
    kwargs = {} if readme is None else {"readme": readme}
    if busy:
        replace_readme_block(BUSY_BEGIN, BUSY_END, busy_markdown(table), **kwargs)
    else:
        replace_readme_block(BENCH_BEGIN, BENCH_END, markdown(table), **kwargs)
