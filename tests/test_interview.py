"""Interview practice (`course_tools.interview`): items parsed and validated, answers checked
against the sweep's ranges, the Leitner schedule, the history file, and `course interview` driven
through stdin; every lesson's items kept true (tests at the end)."""
import datetime as dt
import json
import os
import subprocess
import sys

import pytest

from course_tools import interview
from course_tools.manifest import LESSONS

LESSON = LESSONS[1]
EN_ZH = {"en": "x", "zh": "x"}


def _card(**overrides):
    data = {"say_this": {"en": "Scale by 1/√d_k.", "zh": "除以√d_k。"}, "formula": "softmax(QKᵀ/√d_k)V",
            "numbers": [], "folklore": EN_ZH, "measured": EN_ZH, "items": [
                {"id": "01-starved", "kind": "numeric", "claim": "starved share", "question": EN_ZH,
                 "why": {"en": "unscaled scores saturate the softmax", "zh": "x"}, "cell": "Experiment 2"},
                {"id": "01-why", "kind": "choice", "question": EN_ZH, "why": EN_ZH, "cell": "Build",
                 "options": [{"en": "keep variance 1", "zh": "x"}, {"en": "speed", "zh": "x"},
                             {"en": "prevent overflow", "zh": "x"}], "answer": 0, "folklore": 2},
                {"id": "01-explain", "kind": "explain", "question": EN_ZH, "why": EN_ZH, "cell": "Short answer"}]}
    data.update(overrides)
    return interview.parse_card(1, {"course": {"interview": data}})


RANGES = {("01", "starved share"): (0.42, 0.50, 11)}


def test_numeric_answers_are_checked_against_the_swept_range_widened():
    item = _card().items[0]
    assert interview.accepted_range(item, RANGES) == pytest.approx((0.37, 0.55))
    assert interview.check(item, "about 0.45", RANGES).correct is True
    assert interview.check(item, "0.3", RANGES).correct is False
    verdict = interview.check(item, "I don't know", RANGES)
    assert verdict.correct is False and "measured 0.42–0.5" in verdict.message


def test_a_claim_stated_in_log10_is_asked_for_as_the_ratio_itself():
    """09's claim is log10(Post-LN growth / Pre-LN growth) = 0.49-0.58: the learner answers 3.1-3.8x."""
    item = _card(items=[{"id": "01-ratio", "kind": "numeric", "claim": "growth: log10(a / b)", "log10": True,
                         "tolerance": 0.2, "unit": "×", "question": EN_ZH, "why": EN_ZH, "cell": "x"}]).items[0]
    ranges = {("01", "growth: log10(a / b)"): (0.4948, 0.5754, 11)}
    low, high = interview.accepted_range(item, ranges)
    assert (low, high) == pytest.approx((3.125 - 0.2 * 3.763, 3.763 * 1.2), rel=1e-3)
    assert interview.check(item, "about 3.5x", ranges).correct is True
    wrong = interview.check(item, "0.5", ranges)     # the log itself is not the ratio asked for
    assert wrong.correct is False and "measured 3.12–3.76×" in wrong.message


def test_choice_answers_name_the_folklore():
    item = _card().items[1]
    assert interview.check(item, "a", RANGES).correct is True
    wrong = interview.check(item, "c", RANGES)
    assert wrong.correct is False and "usual answer the lesson corrects" in wrong.message
    assert interview.check(item, "2", RANGES).correct is False   # numbers count from 1


@pytest.mark.parametrize("field,value,message", [
    ("say_this", {"en": "only english"}, "say_this: expected"),
    ("items", [{"id": "01-a", "kind": "essay", "question": EN_ZH, "why": EN_ZH}], "kind: expected one of"),
    ("items", [{"id": "02-a", "kind": "explain", "question": EN_ZH, "why": EN_ZH}], "id: expected to start with '01-'"),
    ("items", [{"id": "01-a", "kind": "numeric", "question": EN_ZH, "why": EN_ZH}], "names the claim"),
    ("items", [{"id": "01-a", "kind": "numeric", "claim": "starved share", "value": 0.45, "derivation": EN_ZH,
                "question": EN_ZH, "why": EN_ZH}], "claim/value: .* not both"),
    ("items", [{"id": "01-a", "kind": "numeric", "value": 110, "question": EN_ZH, "why": EN_ZH}], "derivation: expected"),
    ("items", [{"id": "01-a", "kind": "numeric", "value": 110, "derivation": {"en": "12·(4H²+…)"},
                "question": EN_ZH, "why": EN_ZH}], "derivation: expected"),
    ("items", [{"id": "01-a", "kind": "numeric", "value": "110M", "derivation": EN_ZH, "question": EN_ZH,
                "why": EN_ZH}], "value: expected a finite number"),
    ("items", [{"id": "01-a", "kind": "numeric", "claim": "starved share", "derivation": EN_ZH, "question": EN_ZH,
                "why": EN_ZH}], "derivation: only a derived item"),
    ("items", [{"id": "01-a", "kind": "choice", "question": EN_ZH, "why": EN_ZH, "options": [EN_ZH, EN_ZH],
                "answer": 2}], "answer in \\[0, 2\\)"),
    ("items", [{"id": "01-a", "kind": "choice", "question": EN_ZH, "why": EN_ZH, "options": [EN_ZH, EN_ZH],
                "answer": 1, "folklore": 1}], "folklore must be a wrong option"),
])
def test_malformed_items_are_refused_with_the_field(field, value, message):
    with pytest.raises(interview.InterviewError, match=message):
        _card(**{field: value})


DERIVED = {"id": "01-bert-base", "kind": "numeric", "value": 109.48224, "unit": "M", "cell": "Build",
           "question": {"en": "BERT-base's parameter count? Answer in millions.", "zh": "BERT-base 的参数量？以百万作答。"},
           "derivation": {"en": "23.8M embeddings + 12 × 7.09M + 0.59M pooler = 109.5M",
                          "zh": "嵌入 23.8M + 12 × 7.09M + pooler 0.59M = 109.5M"},
           "why": {"en": "it is arithmetic on the config", "zh": "只是对配置的算术"}}


def test_a_derived_numeric_item_is_accepted_within_its_value_and_shows_the_derivation():
    """A numeric item with "value" (no claim) is checked against value·(1 ± tolerance), default 0.05,
    without sweep data; the verdict gives the value and the derivation."""
    item = _card(items=[DERIVED]).items[0]
    assert item.claim is None and item.tolerance == 0.05
    assert interview.accepted_range(item, {}) == pytest.approx((109.48224 * 0.95, 109.48224 * 1.05))
    for answer in ("109.5", "110", "110M", "about 110 million"):
        assert interview.check(item, answer, {}).correct is True, answer
    wrong = interview.check(item, "340", {})
    assert wrong.correct is False and "derived ≈ 109.5 M" in wrong.message
    assert "23.8M embeddings" in wrong.message and "arithmetic on the config" in wrong.message
    zh = interview.check(item, "不知道", {}, lang="zh")
    assert zh.correct is False and "推导值" in zh.message and "嵌入 23.8M" in zh.message
    assert interview.check(_card(items=[{**DERIVED, "tolerance": 0.5}]).items[0], "160", {}).correct is True


def test_the_bert_base_parameter_count_of_lesson_18_is_derived():
    from course_lib.quiz import check, claim_ranges, load_card
    card = load_card(18, LESSONS[18].notebook)
    item = next(i for i in card.items if i.id == "18-bert-base-params")
    assert item.value == pytest.approx(109.48224) and item.claim is None
    ranges = claim_ranges()
    assert check(item, "109.5", ranges).correct is True
    assert check(item, "110", ranges).correct is True
    assert check(item, "340", ranges).correct is False     # BERT-large's count is not BERT-base's


def test_the_page_payload_of_a_derived_item_carries_its_accepted_range_value_and_derivation():
    from course_lib.quiz import payload, quiz_html
    card = _card()
    card.items[0] = _card(items=[DERIVED]).items[0]
    entries = payload(card, {}, {"en": "model", "zh": "参考"})    # no sweep data: the derived item stays
    entry = next(e for e in entries if e["id"] == "01-bert-base")
    assert entry["accepted"] == pytest.approx([109.48224 * 0.95, 109.48224 * 1.05])
    assert entry["measured"] == "≈ 109.5 M (derived)" and entry["unit"] == "M"
    assert entry["derivation"] == DERIVED["derivation"]
    for lang in ("en", "zh"):    # the page shows `why` after the answer: the derivation first
        assert entry["why"][lang].startswith(DERIVED["derivation"][lang])
        assert entry["why"][lang].endswith(DERIVED["why"][lang])
    assert "109.5 M (derived)" in quiz_html(entries)
    # `course interview` asks the items it can check: a derived one needs no sweep data
    from course_lib.quiz import checkable
    assert checkable(_card(items=[DERIVED]).items[0], {})


def test_a_wrong_answer_comes_back_sooner_than_a_right_one(tmp_path):
    path = tmp_path / "interview.jsonl"
    numeric, choice, _ = _card().items
    t0 = dt.datetime(2026, 12, 1, 12, 0)
    for item, answer in [(numeric, "0.45"), (choice, "c")]:
        interview.record(item, answer, interview.check(item, answer, RANGES), path, when=t0)
    state = interview.boxes(interview.history(path))
    assert state["01-starved"]["box"] == 2 and state["01-why"]["box"] == 1
    assert state["01-why"]["due"] < state["01-starved"]["due"]
    later = interview.schedule([numeric, choice], interview.history(path), now=t0 + dt.timedelta(hours=1))
    assert [i.id for i in later] == ["01-why", "01-starved"]   # the wrong one first; the right one not due


def test_scores_count_each_items_latest_answer(tmp_path):
    path = tmp_path / "interview.jsonl"
    numeric, choice, _ = _card().items
    for item, answer in [(numeric, "0.1"), (numeric, "0.45"), (choice, "c")]:
        interview.record(item, answer, interview.check(item, answer, RANGES), path)
    assert interview.scores(interview.history(path)) == {"01": "1/2"}


def test_a_session_stops_cleanly_when_input_ends(tmp_path, monkeypatch):
    monkeypatch.setenv(interview.INTERVIEW_ENV, str(tmp_path / "h.jsonl"))
    answers = iter(["0.45"])

    def read(prompt):
        try:
            return next(answers)
        except StopIteration:
            raise EOFError from None
    shown = []
    recorded = interview.run_session(_card().items, read=read, write=shown.append, ranges=RANGES)
    assert len(recorded) == 1 and any("input ended" in line for line in shown)


# --- every lesson's items, kept true -------------------------------------------------------------

LESSONS_WITH_ITEMS = [lesson for lesson in LESSONS if lesson.number]


def _lesson_text(lesson) -> str:
    import nbformat
    nb = nbformat.read(lesson.notebook, as_version=4)
    from course_lib.quiz import NUMBER_MARKER     # a number's source marker is not part of the sentence
    return NUMBER_MARKER.sub("", "\n".join(c.source for c in nb.cells if c.cell_type == "markdown"))


@pytest.mark.parametrize("lesson", LESSONS_WITH_ITEMS, ids=[l.stem for l in LESSONS_WITH_ITEMS])
def test_every_lesson_has_items_of_each_kind_bound_to_its_claims(lesson):
    from course_lib.quiz import claim_ranges, load_card, measured_range
    card = load_card(lesson.number, lesson.notebook)
    assert card is not None, f"{lesson.stem}: no metadata.course.interview"
    kinds = [item.kind for item in card.items]
    assert 4 <= len(kinds) <= 8 and {"numeric", "choice", "explain"} <= set(kinds), f"{lesson.stem}: {kinds}"
    ranges = claim_ranges()
    for item in card.items:
        if item.kind == "numeric" and item.value is not None:   # derived: the answer and its arithmetic
            assert item.value > 0, f"{item.id}: value {item.value!r}"
            assert all(item.derivation.get(lang, "").strip() for lang in ("en", "zh")), f"{item.id}: derivation"
            low, high = interview.accepted_range(item, ranges)
            assert low < item.value < high
        elif item.kind == "numeric":
            key = (f"{lesson.number:02d}", item.claim)
            assert key in ranges, f"{item.id}: no claim {item.claim!r} in docs/sweep/claims.csv"
            low, high = interview.accepted_range(item, ranges)
            swept_low, swept_high = measured_range(*ranges[key][:2], item.scale, item.log10)
            assert low <= swept_low and swept_high <= high
    for entry in card.numbers:
        assert (f"{lesson.number:02d}", entry["claim"]) in ranges, f"{lesson.stem}: number {entry['claim']!r}"


@pytest.mark.parametrize("lesson", LESSONS_WITH_ITEMS, ids=[l.stem for l in LESSONS_WITH_ITEMS])
def test_every_choice_answer_is_stated_in_its_lesson_and_folklore_is_a_distractor(lesson):
    import json
    nb = json.loads(lesson.notebook.read_text(encoding="utf-8"))
    raw_items = nb["metadata"]["course"]["interview"]["items"]
    text = " ".join(_lesson_text(lesson).split())
    choices = [item for item in raw_items if item["kind"] == "choice"]
    for item in choices:
        source = item.get("source", "")
        assert source and " ".join(source.split()) in text, \
            f"{item['id']}: its 'source' (the lesson's sentence stating the right option) is not in the lesson: {source!r}"
    assert any(item.get("folklore") is not None for item in choices), \
        f"{lesson.stem}: no choice item offers the usual answer the lesson corrects as a distractor"


@pytest.mark.parametrize("lesson", LESSONS_WITH_ITEMS, ids=[l.stem for l in LESSONS_WITH_ITEMS])
def test_the_stored_check_yourself_cells_are_current(lesson):
    import nbformat
    nb = nbformat.read(lesson.notebook, as_version=4)
    ids = [cell.get("id") for cell in nb.cells]
    assert ids[-2:] == [interview.QUIZ_HEADING_ID, interview.QUIZ_CELL_ID], \
        f"{lesson.stem}: the last two cells are not Check yourself (`course interview --store-cells`)"
    assert nb.cells[-1].execution_count is not None, \
        f"{lesson.stem}: the quiz cell has outputs but no execution count (nbval: 'Unrun reference cell has outputs')"
    _, fresh = interview.quiz_cells(lesson.number, lesson.notebook)
    stored = nb.cells[-1].outputs[0]["data"] if nb.cells[-1].outputs else {}
    assert stored.get("text/html") == fresh.outputs[0]["data"]["text/html"], \
        f"{lesson.stem}: stored quiz out of date (`course interview --store-cells --lesson {lesson.number:02d}`)"


def test_course_interview_through_stdin_right_wrong_history_and_schedule(tmp_path):
    """`course interview --lesson 01 --n 3` driven by a script: the first item answered right, the
    second wrong; the history records both and the wrong one is due first."""
    from course_lib.quiz import claim_ranges, load_card
    card = load_card(1, LESSONS[1].notebook)
    ranges = claim_ranges()
    items = [i for i in card.items if i.kind != "numeric" or ("01", i.claim) in ranges]
    first, second = interview.schedule(items, [])[:2]

    def right(item):
        if item.kind == "numeric":
            low, high, _ = ranges[("01", item.claim)]
            return [str((low + high) / 2 * item.scale)]
        if item.kind == "choice":
            return ["abcdefgh"[item.answer]]
        return ["my answer", "y"]

    def wrong(item):
        if item.kind == "numeric":
            return ["-12345"]
        if item.kind == "choice":
            return ["abcdefgh"[(item.answer + 1) % len(item.options)]]
        return ["no idea", "n"]
    history = tmp_path / "interview.jsonl"
    pushed_back = ["n"] if interview.push_back(first, items) else []   # the interviewer's follow-up, once
    stdin = "\n".join(right(first) + pushed_back + wrong(second)) + "\n"
    env = {**os.environ, interview.INTERVIEW_ENV: str(history)}
    result = subprocess.run([sys.executable, "-m", "course_tools.cli", "interview", "--lesson", "01", "--n", "3",
                             "--in-order"],
                            input=stdin, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "right" in result.stdout and ("wrong" in result.stdout or "to review" in result.stdout)
    entries = [json.loads(line) for line in history.read_text().splitlines()]
    assert [(e["item"], e["correct"]) for e in entries] == [(first.id, True), (second.id, False)]
    assert entries[1]["due"] < entries[0]["due"]
    order = [i.id for i in interview.schedule(items, entries)]
    # never-asked items first, then the one answered wrong (due now); the right one last (not due)
    assert order.index(second.id) < order.index(first.id) == len(order) - 1


@pytest.mark.parametrize("typed,unit,value", [("1/16", "", 0.0625), ("6.25%", "", 0.0625), ("0.0625", "", 0.0625),
                                              ("about 1 / 16", "", 0.0625), ("12%", "%", 12.0), ("1,024", "", 1024.0),
                                              ("about 3x", "×", 3.0), ("no idea", "", None), ("1/0", "", None)])
def test_a_fraction_and_a_percentage_are_read_as_the_number_they_mean(typed, unit, value):
    from course_lib.quiz import parse_number
    assert parse_number(typed, unit) == (pytest.approx(value) if value is not None else None)


def test_a_practice_run_shuffles_options_asks_again_for_a_non_answer_and_speaks_the_learners_language(
        tmp_path, monkeypatch):
    import random
    monkeypatch.setenv(interview.INTERVIEW_ENV, str(tmp_path / "h.jsonl"))
    choice = next(i for i in _card().items if i.kind == "choice")
    order = random.Random(7).sample(range(len(choice.options)), len(choice.options))
    right_letter = "abcdefgh"[order.index(choice.answer)]
    answers = iter(["I think it is the scale", right_letter])     # not a letter first: asked again
    shown = []
    recorded = interview.run_session([choice], lang="zh", read=lambda prompt: next(answers),
                                     write=shown.append, ranges=RANGES, rng=random.Random(7))
    assert recorded[0]["correct"] is True
    assert any(line.startswith("重读") for line in shown) and any("答对 1 / 1" in line for line in shown)
    assert not any("reread:" in line for line in shown)
    assert not any(choice.cell in line for line in shown)         # the cell to reread, named in Chinese


def test_a_chinese_session_prints_no_english_frame_words(tmp_path, monkeypatch, capsys):
    """`course interview --lang zh` over every lesson's items, the push-backs and the rapid-fire questions:
    once the items' own Chinese texts are taken out, no English word is left - the cells to reread (a
    lesson's "## Experiment 2: ..." heading), the units, the prompts, the verdicts (issue 33)."""
    import random
    import re
    from course_lib.quiz import claim_ranges, plain_text
    from course_tools import rapid_fire
    monkeypatch.setenv(interview.INTERVIEW_ENV, str(tmp_path / "h.jsonl"))
    cards = interview.all_cards()
    ranges = claim_ranges()
    items = [i for c in cards for i in c.items if interview.checkable(i, ranges)]
    entries = rapid_fire.load()
    content = {plain_text(t) for i in items for t in [i.question["zh"], i.why["zh"], *(o["zh"] for o in i.options),
                                                      *([i.derivation["zh"]] if i.derivation else [])]}
    content |= {plain_text(c.say_this["zh"]) for c in cards}
    content |= {plain_text(e[k]["zh"]) for e in entries for k in ("q", "a")}
    content |= {e["source"].replace("`", "") for e in entries if e["source"]}       # a paper's citation
    shown = []

    def read(prompt):
        shown.append(prompt)
        return "y" if "[y/n]" in prompt else "1" if "数字" in prompt else "a"
    interview.run_session(items, lang="zh", read=read, write=shown.append, ranges=ranges, follow_ups=items,
                          model_answers={(c.lesson, "zh"): c.say_this["zh"] for c in cards}, rng=random.Random(0))
    rapid_fire.rapid_session(entries, lang="zh", read=read, write=shown.append)
    assert interview.main(0, False, "zh", 1) == 2                  # lesson 00 has no items: said in Chinese
    shown.append(capsys.readouterr().out)
    left = {}
    for line in shown:
        frame = line
        for text in sorted(content, key=len, reverse=True):
            frame = frame.replace(text, " ")
        # code and paths (`_`, `.`, `:`, `/` in them) may stay; an English word may not
        for token in re.findall(r"[A-Za-z_][\w.:/-]*", frame):
            if re.fullmatch(r"[A-Za-z]{3,}", token) and token not in ("GFLOPs",):
                left.setdefault(token, line)
    assert not left, left


def test_latex_is_plain_text_in_the_terminal():
    from course_lib.quiz import plain_text
    assert plain_text(r"why $\sqrt{d_\text{model}}$, not $\frac{1}{\sqrt{d_k}}$?") == "why √d_model, not (1)/(√d_k)?"


def test_a_mock_interview_interleaves_pushes_back_with_the_folklore_and_shows_the_short_say_this(
        tmp_path, monkeypatch):
    """Items of several lessons and kinds are mixed (not sorted by id); after a lesson's first item the
    interviewer pushes back once with that lesson's folklore; an explain item's model answer is the
    card's "say this", with where the long answer is."""
    import random
    from course_lib.quiz import load_card
    monkeypatch.setenv(interview.INTERVIEW_ENV, str(tmp_path / "h.jsonl"))
    cards = [load_card(n, LESSONS[n].notebook) for n in (1, 2, 3)]
    items = [i for c in cards for i in c.items]
    orders = {tuple(i.id for i in interview.schedule(items, [], rng=random.Random(seed))) for seed in range(5)}
    assert len(orders) > 1                                       # shuffled ties
    ordered = interview.schedule(items, [], rng=random.Random(0))
    assert [i.id for i in ordered] != sorted(i.id for i in items)
    assert len({i.kind for i in ordered[:4]}) > 1 or len({i.lesson for i in ordered[:4]}) > 1
    explain = next(i for i in cards[0].items if i.kind == "explain")
    folklore = interview.push_back(explain, items)
    assert folklore is not None and folklore.lesson == 1 and folklore.folklore is not None
    say = {(1, "en"): cards[0].say_this["en"], (1, "zh"): cards[0].say_this["zh"]}
    for lang, frame in (("en", "pushes back"), ("zh", "面试官追问")):
        answers = iter(["because of variance", "y", "y"])
        prompts, shown = [], []

        def read(prompt):
            prompts.append(prompt)
            return next(answers)
        interview.run_session([explain], lang=lang, read=read, write=shown.append, ranges=RANGES,
                              model_answers=say, follow_ups=items, rng=random.Random(1))
        assert any(frame in p for p in prompts), prompts
        assert any(cards[0].say_this[lang] in line for line in shown)
        assert len(cards[0].say_this["en"].split()) <= 60
        if lang == "zh":
            assert not any(w in line for line in shown for w in ("model answer", "pushes back", "folklore", "right", "wrong"))


def _choice_items():
    from course_lib.quiz import load_card
    return [item for lesson in LESSONS_WITH_ITEMS for item in load_card(lesson.number, lesson.notebook).items
            if item.kind == "choice"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_quiz_cannot_be_gamed_by_length_or_position(lang):
    """Always picking the longest option, or always the first as stored, scores at most chance + 10%
    over all choice items (issue 33); the options are also shuffled per session."""
    items = _choice_items()
    chance = sum(1 / len(item.options) for item in items) / len(items)

    def length(option):
        return len(option.get(lang) or option["en"])
    longest = sum(max(range(len(i.options)), key=lambda k: length(i.options[k])) == i.answer for i in items)
    first = sum(i.answer == 0 for i in items)
    assert longest / len(items) <= chance + 0.10, f"longest option right in {longest} of {len(items)} ({lang})"
    assert first / len(items) <= chance + 0.10, f"first option right in {first} of {len(items)}"
