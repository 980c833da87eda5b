"""Claims (course_lib.evidence), the sweep's tables, and two rules every lesson follows:
its evidence cell states claims with `claim(...)`, and no cell prints a notebook-vs-library
comparison without asserting it."""
import ast
import json
import math
import os
import re
import subprocess
import sys

import nbformat
import pandas as pd
import pytest
import torch

from course_lib import ROOT, evidence
from course_lib.evidence import ClaimFailed, claim, claim_close, margin_of
from course_tools.manifest import LESSONS
from course_tools.sweep.ledger import Run
from course_tools.sweep.statistics import robustness_table


def test_claim_holds_records_and_returns_relative_margin(tmp_path, monkeypatch):
    path = tmp_path / "claims.jsonl"
    monkeypatch.setenv("COURSE_CLAIMS_FILE", str(path))
    relative = claim("gap is large", torch.tensor(0.3), ">", 0.1)
    assert relative == pytest.approx(2.0)
    entry = json.loads(path.read_text().splitlines()[-1])
    assert entry["statement"] == "gap is large" and entry["held"] is True
    assert entry["value"] == pytest.approx(0.3) and entry["threshold"] == 0.1
    assert entry["margin"] == pytest.approx(0.2)


def test_claim_failure_names_the_numbers_and_is_recorded(tmp_path, monkeypatch):
    path = tmp_path / "claims.jsonl"
    monkeypatch.setenv("COURSE_CLAIMS_FILE", str(path))
    with pytest.raises(AssertionError, match=r"loss below 0.1: measured 0.5, claimed < 0.1"):
        claim("loss below 0.1", 0.5, "<", 0.1)
    entry = json.loads(path.read_text())
    assert entry["held"] is False and entry["margin"] == pytest.approx(-0.4)


def test_nan_never_satisfies_a_claim():
    with pytest.raises(AssertionError):
        claim("nan is not evidence", float("nan"), "<", 1.0)


@pytest.mark.parametrize("bad_op", ["==", "gt", ""])
def test_claim_rejects_unknown_operator(bad_op):
    with pytest.raises(ValueError, match="op: expected one of"):
        claim("x", 1.0, bad_op, 0.0)


def test_claim_rejects_non_scalar_tensor():
    with pytest.raises(RuntimeError, match=r"a Tensor with 2 elements cannot be converted to Scalar"):
        claim("x", torch.ones(2), ">", 0.0)


def test_margins_for_both_directions_and_zero_threshold():
    assert margin_of(3.0, ">", 2.0) == (1.0, 0.5)
    assert margin_of(1.0, "<", 2.0) == (1.0, 0.5)
    assert margin_of(0.5, ">", 0.0) == (0.5, 0.5)


def test_claim_close_asserts_equality_and_catches_a_difference():
    a = torch.randn(3, 4)
    claim_close("identical", a, a.clone(), atol=0.0)
    with pytest.raises(AssertionError, match="largest difference"):
        claim_close("off by 1e-3", a, a + 1e-3, atol=1e-5)
    with pytest.raises(AssertionError, match="shapes differ"):
        claim_close("wrong shape", a, a.T)
    assert evidence.RECORDED[-1]["held"] is False


def test_claim_failed_is_an_assertion_error_with_the_same_message():
    with pytest.raises(ClaimFailed, match=r"^loss below 0.1: measured 0.5, claimed < 0.1$") as caught:
        claim("loss below 0.1", 0.5, "<", 0.1)
    assert isinstance(caught.value, AssertionError)


# -- claims survive `python -O` (which strips every `assert` statement) ---------------------------

def _run_optimised(code: str, cwd=ROOT) -> subprocess.CompletedProcess:
    """Run `code` under `python -O`; it first checks that asserts really are stripped there."""
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_CLAIMS_FILE", "PYTHONOPTIMIZE")}
    env.update(MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    prelude = "assert False, 'asserts are not stripped: not running under -O'\n"
    return subprocess.run([sys.executable, "-O", "-c", prelude + code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.notebooks   # a Python subprocess: seconds, not milliseconds
def test_claims_fail_under_python_O():
    result = _run_optimised(
        "import torch\n"
        "from course_lib.evidence import claim, claim_close\n"
        "claim('a true claim', 0.3, '>', 0.1)\n"
        "try:\n"
        "    claim('loss below 0.1', torch.tensor(0.5), '<', 0.1)\n"
        "except AssertionError as failure:  # callers that catch AssertionError still catch it\n"
        "    print('caught', type(failure).__name__, failure)\n"
        "claim_close('off by 1e-3', torch.zeros(3), torch.full((3,), 1e-3), atol=1e-5)\n"
        "print('NOT REACHED')\n")
    assert "caught ClaimFailed loss below 0.1: measured 0.5, claimed < 0.1" in result.stdout, \
        result.stdout + result.stderr
    assert result.returncode != 0 and "NOT REACHED" not in result.stdout, result.stdout + result.stderr
    assert "ClaimFailed: off by 1e-3 (largest difference): measured 0.001, claimed <= 1e-05" in result.stderr, \
        result.stderr


@pytest.mark.notebooks   # runs lesson 01's cells in a subprocess
def test_a_lessons_evidence_cell_fails_under_python_O_when_its_claim_is_false():
    """Lesson 01's code cells up to its evidence cell, run as a script under `python -O`, with the
    first claim of the evidence cell given a threshold nothing can meet: the script must fail there,
    with the claim's message (under plain `assert`, -O would have let it pass silently)."""
    lesson = next(l for l in LESSONS if l.number == 1)
    nb = nbformat.read(lesson.notebook, as_version=4)
    sources = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = "\n".join(line for line in cell.source.splitlines()
                           if not line.lstrip().startswith(("%", "!")))
        if "evidence" in cell.metadata.get("tags", []):
            tree = ast.parse(source)
            first = next(node for node in ast.walk(tree) if isinstance(node, ast.Call)
                         and getattr(node.func, "id", None) == "claim")
            statement = ast.literal_eval(first.args[0]) if isinstance(first.args[0], ast.Constant) else None
            op = ast.literal_eval(first.args[2])
            first.args[3] = ast.Constant(math.inf if op in (">", ">=") else -math.inf)  # never met
            sources.append(ast.unparse(tree))
            break
        sources.append(source)
    script = "display = print\n" + "\n\n".join(sources) + "\nprint('NOT REACHED')\n"
    result = _run_optimised(script, cwd=lesson.notebook.parent)
    assert result.returncode != 0 and "NOT REACHED" not in result.stdout, result.stdout + result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("course_lib.evidence.ClaimFailed: ") and "measured" in last, result.stderr[-2000:]
    if statement:
        assert statement in last, last


def test_robustness_table_ranks_evidence_by_seed_ranges_and_counts_identities_apart():
    runs = pd.DataFrame([
        {"lesson": "01", "id": "a", "run": f"seed {s}", "seconds": 1.0, "claims held": held,
         "claims recorded": 3, "error": ""} for s, held in enumerate(["yes", "no"])])
    rows = []
    # 'wide': relative margin small (0.5 / 10) but far in seed ranges (0.5 / 0.01 = 50);
    # 'noisy': relative margin large (4 / 1) but only 2 seed ranges (worst margin 4, range 2);
    # 'count': constant, declared an identity: counted apart, never ranked.
    for s, (wide, noisy) in enumerate([(10.5, 5.0), (10.51, 7.0)]):
        rows += [
            {"statement": "wide", "value": wide, "threshold": 10.0, "kind": "evidence"},
            {"statement": "noisy", "value": noisy, "threshold": 1.0, "kind": "evidence"},
            {"statement": "count", "value": 2.0, "threshold": 2.0, "kind": "identity", "why": "config"}]
        for row in rows[-3:]:
            row.update({"lesson": "01", "id": "a", "run": f"seed {s}", "op": ">=" if row["kind"] == "identity" else ">",
                        "margin": row["value"] - row["threshold"], "held": True,
                        "relative_margin": (row["value"] - row["threshold"]) / row["threshold"]})
    table = robustness_table(runs, pd.DataFrame(rows))
    row = table.iloc[0]
    assert row["runs held"] == "1/2" and row["thinnest evidence claim"] == "noisy"
    assert row["seed ranges to threshold"] == "2.0" and row["measured (all runs)"] == "5 – 7"
    assert (row["evidence"], row["identities"]) == (2, 1)


def test_claim_spread_measures_margin_in_seed_ranges():
    from course_tools.sweep.statistics import claim_spread
    claims = pd.DataFrame([
        {"lesson": "01", "run": f"seed {s}", "statement": "gap", "value": v, "op": ">", "threshold": 1.0,
         "margin": v - 1.0, "relative_margin": v - 1.0, "held": True}
        for s, v in enumerate([2.0, 2.5, 3.0])])
    row = claim_spread(claims).iloc[0]
    assert row["min"] == 2.0 and row["max"] == 3.0 and row["worst run"] == "seed 0"
    assert row["seed ranges"] == pytest.approx(1.0)  # worst margin 1.0, range 1.0
    assert row["kind"] == "evidence"  # runs recorded before kinds existed count as evidence
    # a statement made twice in one run (a loop) counts that run once: 3 runs, not 4
    twice = pd.concat([claims, claims.iloc[[0]]], ignore_index=True)
    assert claim_spread(twice).iloc[0][["runs", "held"]].tolist() == [3, 3]


def test_constant_evidence_and_thin_evidence_are_caught_identities_are_not():
    from course_tools.sweep.statistics import claim_spread, thin_claims, undeclared_constants
    rows = []
    for s in range(3):
        for statement, value, kind in [("arithmetic", 4.0, "evidence"), ("count", 4.0, "identity"),
                                        ("thin", 1.8 + 0.5 * s, "evidence"), ("far", 10.0 + 0.1 * s, "evidence")]:
            rows.append({"lesson": "01", "run": f"seed {s}", "statement": statement, "value": value,
                         "op": ">", "threshold": 1.0, "margin": value - 1.0,
                         "relative_margin": value - 1.0, "held": True, "kind": kind})
    spread = claim_spread(pd.DataFrame(rows))
    assert list(undeclared_constants(spread)["statement"]) == ["arithmetic"]
    assert list(thin_claims(spread)["statement"]) == ["thin"]  # 0.8 / 1.0 = 0.8 range; 'far': 9 / 0.2 = 45


def test_identity_needs_a_reason_and_is_shown_as_by_construction():
    from course_lib.evidence import claims_summary, identity
    with pytest.raises(ValueError, match="why: a claim of kind 'identity' needs a one-line reason"):
        claim("count", 2, ">=", 2, kind="identity")
    with pytest.raises(ValueError, match="kind: expected one of"):
        claim("count", 2, ">=", 2, kind="fact", why="x")
    identity("layers removed", 2, ">=", 2, why="set by the configuration")
    entry = evidence.RECORDED[-1]
    assert entry["kind"] == "identity" and entry["why"] == "set by the configuration"
    text = repr(claims_summary([entry]))
    assert "[by construction] layers removed" in text and "set by the configuration" in text


def test_a_reported_number_asserts_nothing_keeps_its_range_and_is_never_ranked(tmp_path, monkeypatch):
    from course_lib.evidence import claims_summary, report
    from course_tools.sweep.statistics import claim_spread, thin_claims, undeclared_constants
    with pytest.raises(ValueError, match="why: a reported number needs a one-line reason"):
        report("gap", 0.2, why=" ")
    monkeypatch.setenv("COURSE_CLAIMS_FILE", str(tmp_path / "claims.jsonl"))
    assert report("distilled minus hard labels", -0.5, why="moves with the data draw") == -0.5  # no assert
    entry = json.loads((tmp_path / "claims.jsonl").read_text().splitlines()[-1])
    assert entry["kind"] == "reported" and entry["held"] and math.isnan(entry["threshold"])
    text = repr(claims_summary([entry]))
    assert "[reported, not claimed] distilled minus hard labels: measured -0.5 — moves with the data draw" in text
    # over three runs: its range is kept; no threshold, so it is neither thin nor an undeclared constant
    rows = [{**entry, "lesson": "24", "run": f"seed {s}", "value": v} for s, v in enumerate([0.18, 0.27, 0.2])]
    rows += [{**entry, "lesson": "24", "run": f"seed {s}", "statement": "flat", "value": 1.0} for s in range(3)]
    spread = claim_spread(pd.DataFrame(rows)).set_index("statement")
    assert spread.loc["distilled minus hard labels", ["min", "max"]].tolist() == [0.18, 0.27]
    assert math.isnan(spread.loc["distilled minus hard labels", "seed ranges"])
    assert thin_claims(spread.reset_index()).empty and undeclared_constants(spread.reset_index()).empty
    summary = claims_summary([{**entry, "kind": "evidence", "op": ">", "threshold": 0.0, "held": True}, entry])
    assert repr(summary).startswith("1 of 1 claim held, 1 reported:")


# --- rules every lesson follows -------------------------------------------------------------

def _code_cells(lesson):
    return [c for c in nbformat.read(lesson.notebook, as_version=4).cells if c.cell_type == "code"]


LESSONS_WITH_CLAIMS = [l for l in LESSONS if l.number != 0]


@pytest.mark.parametrize("lesson", LESSONS_WITH_CLAIMS, ids=[l.stem for l in LESSONS_WITH_CLAIMS])
def test_evidence_cells_state_claims_with_claim(lesson):
    evidence_cells = [c for c in _code_cells(lesson) if "evidence" in c.metadata.get("tags", [])]
    assert evidence_cells, f"{lesson.stem}: no cell tagged 'evidence'"
    source = "\n".join(c.source for c in evidence_cells)
    assert re.search(r"\bclaim(_close)?\(", source), \
        f"{lesson.stem}: the evidence cell makes no claim(...) - the sweep cannot read its margins"


# A printed comparison with the library: a print whose text names course_lib / the library and
# compares (ours, equal, ==, a max |difference|). Such a cell must also assert it.
_PRINTED_COMPARISON = re.compile(
    r"print\((?:(?!\n\S).)*?(course_lib|library)(?:(?!\n\S).)*?", re.S | re.I)
_COMPARES = re.compile(r"ours|equal|==|\|[^|]*-[^|]*\||differ|same", re.I)
_ASSERTS = re.compile(r"\bclaim(_close)?\(|\bassert\b")


@pytest.mark.parametrize("lesson", LESSONS, ids=[l.stem for l in LESSONS])
def test_no_printed_library_comparison_without_assert(lesson):
    offenders = []
    for index, cell in enumerate(_code_cells(lesson)):
        for match in _PRINTED_COMPARISON.finditer(cell.source):
            if _COMPARES.search(match.group(0)) and not _ASSERTS.search(cell.source):
                offenders.append(f"cell {index}: {match.group(0).strip()[:90]}")
    assert not offenders, (f"{lesson.stem} prints a notebook-vs-library comparison without asserting "
                           f"it (use claim_close): " + "; ".join(offenders))


def test_claim_returns_a_float_that_computes_as_before():
    relative = claim("gap is large", 0.3, ">", 0.1)
    assert isinstance(relative, float) and relative == pytest.approx(2.0)
    assert type(relative * 2 + 1) is float and relative * 2 + 1 == pytest.approx(5.0)
    assert f"{relative:.1f}" == "2.0" and str(relative) == str(float(relative))
    assert json.loads(json.dumps({"m": relative}))["m"] == pytest.approx(2.0)
    margin = claim_close("same", torch.ones(2), torch.ones(2), atol=1e-6)
    assert margin == 1.0 and margin + 0 == 1.0


def test_claims_summary_lists_statement_measured_and_threshold():
    entries = [{"statement": "ratio <falls> & more", "value": 16.234, "op": ">", "threshold": 8.0, "held": True},
               {"statement": "gap", "value": 3e-7, "op": "<=", "threshold": 1e-6, "held": True},
               {"statement": "loss", "value": 0.5, "op": "<", "threshold": 0.1, "held": False}]
    text = repr(evidence.claims_summary(entries))
    assert text.splitlines() == ["2 of 3 claims held:",
                                 "✓ ratio <falls> & more: measured 16.23, claimed > 8",
                                 "✓ gap: measured 3e-07, claimed ≤ 1e-06",
                                 "✗ loss: measured 0.5, claimed < 0.1"]
    page = evidence.claims_summary(entries)._repr_html_()
    assert "ratio &lt;falls&gt; &amp; more" in page and page.count("<li>") == 3 and "✗" in page


def test_a_notebook_cell_that_makes_claims_ends_with_their_list_not_a_number():
    """In IPython (a kernel), each cell's claims are shown as a ✓ list when it ends; the last
    claim's value shows nothing more (no bare 1.0254478514340768)."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    try:
        assert evidence.install_notebook_display(shell)
        shell.user_ns["claim"] = claim
        with capture_output() as cell:
            shell.run_cell("claim('gap is large', 0.3, '>', 0.1)\nclaim('loss is small', 0.01, '<', 0.1)")
        assert "2.0" not in cell.stdout and "1.0" not in cell.stdout   # (a kernel sends no Out[] at all)
        assert len(cell.outputs) == 1
        shown = cell.outputs[0].data["text/plain"]
        assert shown.splitlines() == ["2 of 2 claims held:", "✓ gap is large: measured 0.3, claimed > 0.1",
                                      "✓ loss is small: measured 0.01, claimed < 0.1"]
        assert "text/html" in cell.outputs[0].data
        with capture_output() as plain:                      # a cell without claims: as before
            shell.run_cell("1 + 1")
        assert not plain.outputs and "Out[" in plain.stdout
        with capture_output() as failing:                    # a failed claim is listed with ✗
            shell.run_cell("claim('held', 1, '<', 2)\nclaim('fails', 5, '<', 2)")
        assert "ClaimFailed" in failing.stdout + failing.stderr
        assert failing.outputs[-1].data["text/plain"].splitlines()[-1] == "✗ fails: measured 5, claimed < 2"
    finally:
        for event, function in getattr(shell, "_course_claims_hooks", []):
            shell.events.unregister(event, function)
        evidence._hook_state["shell"] = None
        InteractiveShell.clear_instance()


def test_a_run_of_older_code_is_stale_but_prose_and_quiz_edits_are_not(tmp_path, monkeypatch):
    from course_tools.manifest import Lesson
    from course_tools.sweep.ledger import code_digest, is_current, record_run
    path = tmp_path / "01_x.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# prose"), nbformat.v4.new_code_cell("x = 1")]
    nbformat.write(nb, path)
    monkeypatch.setattr(Lesson, "notebook", property(lambda self: path))
    lesson, run, out = Lesson(1, "x", "?", "?"), Run("seed 0", 0), tmp_path / "runs"
    assert not is_current(lesson, run, out)      # no ledger yet
    record_run(lesson, run, code_digest(lesson), {"claims held": "yes", "claims": []}, out)
    assert is_current(lesson, run, out)
    assert not is_current(lesson, Run("seed 1", 1), out)
    nb.cells[0].source = "# other prose"
    quiz = nbformat.v4.new_code_cell("check_yourself(1)")
    quiz.id = "check-yourself-quiz"
    nb.cells.append(quiz)
    nbformat.write(nb, path)
    assert is_current(lesson, run, out)          # prose and the quiz cell: the run still stands
    nb.cells[1].source = "x = 2"
    nbformat.write(nb, path)
    assert not is_current(lesson, run, out)      # the code changed: the run is stale
