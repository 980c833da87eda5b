"""Exercise 18 (a parity report between the course's BERT and Hugging Face's): wrong answers a
learner writes from the task text, and honest alternatives. Answer cells: 0 the prediction,
1 parity_report, 2 the measurement, 3 the written answer."""
from . import Honest, Mistake

_DEF = "def parity_report(ours, theirs, batch):\n"
_EVAL = "    ours.eval()\n    theirs.eval()\n"
_RUN = ("    with torch.no_grad():\n"
        "        mine = ours(batch['input_ids'], batch['token_type_ids'], batch['attention_mask'],\n"
        "                    output_hidden_states=True).hidden_states\n"
        "        ref = theirs(**batch, output_hidden_states=True).hidden_states\n"
        "    real = batch['attention_mask'].bool()\n")


def _report(body, run=_RUN, evaluate=_EVAL):
    return {1: _DEF + evaluate + run + body}


_MAX = "    return [(a - b)[real].abs().max().item() for a, b in zip(mine, ref)]\n"
_CHANGES = "('gelu-tanh', 'layer-norm-eps', 'embeddings-layer-norm-eps', 'query-key-swap')"

MISTAKES = [
    Mistake("18.parity-report", "padding-compared-too", _report(
        "    return [(a - b).abs().max().item() for a, b in zip(mine, ref)]\n"), "padded positions too"),
    Mistake("18.parity-report", "left-in-training-mode", _report(_MAX, evaluate=""), "dropout is on"),
    Mistake("18.parity-report", "embeddings-left-out", _report(
        "    return [(a - b)[real].abs().max().item() for a, b in zip(mine[1:], ref[1:])]\n"),
        "the embeddings' output, then every layer's"),
    Mistake("18.parity-report", "mean-difference", _report(
        "    return [(a - b)[real].abs().mean().item() for a, b in zip(mine, ref)]\n"), "you averaged"),
    Mistake("18.parity-report", "token-types-not-passed-to-ours", _report(_MAX, run=_RUN.replace(
        "ours(batch['input_ids'], batch['token_type_ids'], batch['attention_mask'],",
        "ours(batch['input_ids'], attention_mask=batch['attention_mask'],")), "ran without the batch's token_type_ids"),
    Mistake("18.parity-report", "token-types-not-passed-to-theirs", _report(_MAX, run=_RUN.replace(
        "theirs(**batch, output_hidden_states=True)",
        "theirs(input_ids=batch['input_ids'], attention_mask=batch['attention_mask'], output_hidden_states=True)")),
        "ran without the batch's token_type_ids"),
    Mistake("18.parity-report", "last-layer-only", _report(
        "    return [(mine[-1] - ref[-1])[real].abs().max().item()]\n"), "the report"),
    Mistake("18.measured", "prediction-typed-in", {2: "measured_gap = dict(predicted_gap)\n"}, "is your prediction"),
    Mistake("18.measured", "last-layer-only", {2: "measured_gap = {change: parity_report(deviate(ours_minilm, change), "
            "reference, batch)[-1]\n                for change in " + _CHANGES + "}\n"}, "over all hidden states"),
    Mistake("18.measured", "undeviated-model", {2: "measured_gap = {change: max(parity_report(ours_minilm, reference, "
            "batch))\n                for change in " + _CHANGES + "}\n"}, "over every hidden state"),
]

HONEST = [
    Honest("float64-amax-and-a-loop", {
        0: "predicted_gap = {'gelu-tanh': 1e-4, 'layer-norm-eps': 1e-6, 'embeddings-layer-norm-eps': 1e-5,\n"
           "                 'query-key-swap': 10.0}\n",
        1: _DEF + "    ours.train(False)\n    theirs.train(False)\n"
           "    ids, types, mask = batch['input_ids'], batch['token_type_ids'], batch['attention_mask']\n"
           "    with torch.inference_mode():\n"
           "        a = ours(ids, types, mask, output_hidden_states=True).hidden_states\n"
           "        b = theirs(input_ids=ids, token_type_ids=types, attention_mask=mask,\n"
           "                   output_hidden_states=True).hidden_states\n"
           "    keep = mask.unsqueeze(-1).bool()                       # (B, T, 1)\n"
           "    report = []\n"
           "    for x, y in zip(a, b):\n"
           "        gap = (x.double() - y.double()).abs().masked_fill(~keep, 0.0)\n"
           "        report.append(float(gap.amax()))\n"
           "    return report\n",
        2: "measured_gap = {}\n"
           "for change in " + _CHANGES + ":\n"
           "    measured_gap[change] = max(parity_report(deviate(ours_minilm, change, layer=2), reference, batch))\n"}),
    Honest("stacked-per-sentence-maxima", {
        1: "import torch\n\n" + _DEF + _EVAL +
           "    with torch.no_grad():\n"
           "        ours_states = ours(batch['input_ids'], batch['token_type_ids'], batch['attention_mask'],\n"
           "                           output_hidden_states=True).hidden_states\n"
           "        their_states = theirs(**batch, output_hidden_states=True).hidden_states\n"
           "    lengths = batch['attention_mask'].sum(1).tolist()       # right padding: real tokens first\n"
           "    out = []\n"
           "    for x, y in zip(ours_states, their_states):\n"
           "        per_row = [(x[r, :n] - y[r, :n]).abs().max() for r, n in enumerate(lengths)]\n"
           "        out.append(torch.stack(per_row).max().item())\n"
           "    return out\n"}),
]
