"""course_tools.bench: every path runs (quick mode, a tiny random BERT) and the docs/results.md block."""
from __future__ import annotations

import os

import pandas as pd
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from course_tools import bench  # noqa: E402


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bench")
    return bench.run_bench(quick=True, out=folder / "bench.csv", cache_dir=folder / "onnx", runs=2), folder


def test_quick_bench_runs_every_path_and_writes_the_csv(table):
    table, folder = table
    again = pd.read_csv(folder / "bench.csv")
    assert list(again.columns[:len(bench.COLUMNS)]) == bench.COLUMNS
    groups = set(table["group"])
    assert {"forward 4x16", "forward 1x16", "tiny-BERT pretraining step 4x16",
            "forward 4x16, 2 rows padded to half length"} <= groups
    cases = set(table["case"])
    assert {"course BertModel", "Hugging Face eager", "course BertForPreTraining"} <= cases
    if bench.machine()["device"].startswith("cpu"):
        assert {"torch int8, per channel", "ONNX Runtime fp32",
                "ONNX Runtime int8, per channel"} <= cases
        assert {"ONNX Runtime fp32, fused (BERT optimizer)",
                "ONNX Runtime int8, per channel, fused graph"} <= cases
        paths = table[table["group"].str.startswith("lesson 25 paths")]
        fused = paths[paths["case"] == "ONNX Runtime fp32, fused (BERT optimizer)"]
        assert fused["fused ops"].str.contains("Attention 2").all()          # the tiny BERT's 2 layers
        assert fused["fused ops"].str.contains("EmbedLayerNormalization 1").all()
        assert (paths["speed ratio min"] <= paths["speed ratio"] + 1e-12).all()
        assert (paths["speed ratio"] <= paths["speed ratio max"] + 1e-12).all()
        # --runs 2: the batch-1 rows were timed in two runs (their slowest and fastest run's ratio),
        # the bigger batch once
        one = paths[paths["group"].str.contains(" 1x")]
        assert (one["runs"] == 2).all() and (one["run ratio min"] <= one["run ratio max"]).all()
        assert (paths[~paths["group"].str.contains(" 1x")]["runs"] == 1).all()
        assert "min–max over 2 runs" in bench.markdown(table)
    assert (table["seconds"].dropna() > 0).all()
    assert (table["speed ratio"].dropna() > 0).all()
    # the course model equals Hugging Face's (same weights) and the pretraining losses agree
    course = table[table["case"] == "course BertModel"]
    assert (course["max abs diff"] <= 1e-5).all()
    step = table[table["case"] == "course BertForPreTraining"]
    assert (step["max abs diff"] <= 1e-5).all()
    assert (table["cosine"].dropna() > 0.9).all()
    for key in ("cores", "torch threads", "torch", "device"):
        assert key in table.columns


def test_readme_block_shows_ratios_and_the_machine(table, tmp_path):
    table, _ = table
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{bench.BENCH_BEGIN}\nold\n{bench.BENCH_END}\n\nafter\n")
    bench.update_readme(table, readme=readme)
    text = readme.read_text()
    assert "old" not in text and text.endswith("after\n")
    assert "speed vs reference" in text and "×" in text and "torch threads" in text
    assert "min–max over rounds" in text
    assert "seconds" not in text.split(bench.BENCH_BEGIN)[1].split("|\n\n")[0]  # ratios, not times


def test_the_results_page_has_the_bench_markers():
    from course_tools.runner import RESULTS

    text = RESULTS.read_text(encoding="utf-8")
    assert text.count(bench.BENCH_BEGIN) == 1 and text.count(bench.BENCH_END) == 1


def test_interleaved_timer_calls_every_function_each_round():
    calls = []
    t = bench.median_seconds({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
                             repeats=3, warmup=1)
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]
    assert set(t) == {"a", "b"} and all(v >= 0 for v in t.values())


def test_half_padded_batch_masks_the_second_half_of_the_rows():
    import torch

    ids = torch.arange(1, 33).reshape(4, 8)
    batch = {"input_ids": ids, "token_type_ids": torch.ones_like(ids), "attention_mask": torch.ones_like(ids)}
    padded = bench.half_padded(batch)
    assert padded["attention_mask"][:2].all() and padded["attention_mask"][2:, :4].all()
    assert not padded["attention_mask"][2:, 4:].any()
    assert (padded["input_ids"][2:, 4:] == 0).all() and torch.equal(padded["input_ids"][:2], ids[:2])
    assert (padded["token_type_ids"][2:, 4:] == 0).all()


def test_shuffled_timer_still_calls_every_function_each_round():
    calls = []
    bench.median_seconds({n: (lambda n=n: calls.append(n)) for n in "abc"}, repeats=4, warmup=0, seed=0)
    assert all(sorted(calls[i:i + 3]) == list("abc") for i in range(0, 12, 3))
