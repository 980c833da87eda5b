"""The timed whiteboard drill (`course interview --whiteboard`, course_tools/whiteboard.py and
course_tools/checks/whiteboard.py): graded end to end by the course's grader (the sandbox, the
static and the dynamic shortcut rules) - each reference and an honest variant score full marks, a
forbidden kernel is refused under another name, the time is recorded - and each plausible mistake
scores 0 on its item with its diagnosis (the same checks, run in-process: fast). Both languages."""
import json
import re

import pytest

from course_tools import whiteboard, whiteboard_zh
from course_tools.checks.whiteboard import DIAGNOSES, WHITEBOARD, said
from course_tools.grader.authoring import load_all
from course_tools.grading import run_check
from tests import whiteboard_answers as A

TASKS = sorted(whiteboard.TASKS)


def _in_process(task, source, seed=None):
    """{item: Result}: the drill's checks on `source` in this process, with the grader's static rules."""
    namespace = {"__name__": "whiteboard"}
    exec(compile(source, f"<{task}>", "exec"), namespace)
    return {i: run_check(i, *[namespace.get(n) for n in WHITEBOARD[i].uses], seed=seed, registry=WHITEBOARD,
                         learner_sources=[source]) for i in whiteboard.TASKS[task].items}


@pytest.fixture
def desk(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv(whiteboard.RECORD_ENV, str(tmp_path / "whiteboard.jsonl"))
    return tmp_path


# ---------------------------------------------------------------- end to end: the grader's sandbox

@pytest.mark.grader
@pytest.mark.parametrize("task", TASKS)
def test_the_reference_and_an_honest_variant_score_full_marks_in_the_grader(task):
    for source in (A.ANSWERS[task], A.HONEST[task][0]):
        result = whiteboard.grade_source(source, task)
        assert result["score"] == result["max_score"] > 0, result


@pytest.mark.grader
def test_a_forbidden_kernel_reached_under_a_name_the_static_check_cannot_see_is_refused_by_the_sandbox():
    result = whiteboard.grade_source(A.SDPA_SHORTCUT_HIDDEN, "sdpa")
    assert result["score"] == 0
    assert all("aten::scaled_dot_product_attention" in i["feedback"] for i in result["items"]), result


@pytest.mark.grader
def test_a_drill_is_timed_graded_with_its_diagnosis_and_recorded_then_regraded(desk, monkeypatch):
    """Start (the starter file, the clock); Enter on the untouched starter asks again; the learner writes a
    mistake and presses Enter: one item fails with its diagnosis, the minutes are shown and recorded; fixed
    and regraded with --grade: full marks, the clock stops."""
    clock = iter([1000.0, 1000.0 + 7 * 60, 1000.0 + 9 * 60])
    monkeypatch.setattr(whiteboard.time, "time", lambda: next(clock))
    path = desk / "work" / "whiteboard" / "sdpa.py"
    shown = []

    prompts = []

    def read(prompt):
        shown.append(prompt)
        prompts.append(prompt)
        if len(prompts) == 2:
            assert path.read_text(encoding="utf-8") == whiteboard.starter("sdpa")    # the starter, no answer
            path.write_text(A.SDPA_MISTAKES["mask_after"][0], encoding="utf-8")      # the learner writes
        return ""
    assert whiteboard.main("sdpa", read=read, write=shown.append) == 1
    text = "\n".join(shown)
    assert len(prompts) == 2 and "is still the starter" in text
    assert "PASS 2/2  wb.sdpa.unmasked" in text and "FAIL 0/3  wb.sdpa.padding" in text, text
    assert said("mask_after") in text and "score 2/5 in 7.0 minutes (budget 10 minutes)" in text, text
    entry, = whiteboard.history()
    assert (entry["task"], entry["points"], entry["max"], entry["seconds"], entry["attempt"]) == ("sdpa", 2, 5, 420.0, 1)
    assert entry["items"] == {"wb.sdpa.unmasked": 2, "wb.sdpa.padding": 0} and entry["when"]

    path.write_text(A.SDPA, encoding="utf-8")
    shown.clear()
    assert whiteboard.main(None, grade_only=True, write=shown.append) == 0      # the task started last
    assert "score 5/5 in 9.0 minutes" in "\n".join(shown) and "Full marks" in "\n".join(shown)
    last = whiteboard.history()[-1]
    assert (last["points"], last["max"], last["seconds"], last["attempt"]) == (5, 5, 540.0, 2)
    assert "sdpa" not in json.loads((path.parent / ".clock.json").read_text())       # stopped


# ---------------------------------------------------------------- every check, in-process

@pytest.mark.parametrize("task", TASKS)
def test_every_honest_variant_scores_full_marks(task):
    for source in [A.ANSWERS[task]] + A.HONEST[task]:
        results = _in_process(task, source)
        assert all(r.passed and r.points == r.max_points for r in results.values()), \
            {i: r.feedback for i, r in results.items()}


MISTAKES = [(task, key) for task in TASKS for key in A.MISTAKES[task]]


@pytest.mark.parametrize("task,key", MISTAKES, ids=[f"{t}-{k}" for t, k in MISTAKES])
def test_a_plausible_mistake_scores_zero_on_its_item_with_the_diagnosis(task, key):
    source, item = A.MISTAKES[task][key]
    results = _in_process(task, source)
    assert results[item].points == 0 and not results[item].passed
    assert whiteboard_zh._pattern(DIAGNOSES[key][0]).search(results[item].feedback), results[item].feedback


def test_at_least_three_mistakes_per_task_are_diagnosed():
    assert all(len(A.MISTAKES[task]) >= 3 for task in TASKS)


@pytest.mark.parametrize("task", TASKS)
def test_the_forbidden_shortcuts_are_refused_under_any_import_name(task):
    for source in A.SHORTCUTS[task]:
        result = whiteboard.grade_source(source, task)          # refused statically: no sandbox starts
        assert result["score"] == 0
        assert all(i["feedback"].startswith("not graded: your code uses") for i in result["items"]), result


def test_the_starter_is_the_statement_and_the_signature_never_the_answer():
    for task in TASKS:
        for lang in ("en", "zh"):
            text = whiteboard.starter(task, lang)
            assert whiteboard.TASKS[task].statement[lang] in text and f"--whiteboard {task} --grade" in text
            results = _in_process(task, text)
            assert all(r.points == 0 and "not implemented yet" in r.feedback for r in results.values())


def test_the_drill_checks_stay_out_of_the_lessons_registry():
    assert WHITEBOARD and not any(i.startswith("wb.") for i in load_all())
    assert set(WHITEBOARD) == {i for t in whiteboard.TASKS.values() for i in t.items}


# ---------------------------------------------------------------- Chinese

@pytest.mark.parametrize("key", sorted(DIAGNOSES))
def test_every_diagnosis_reads_in_chinese(key):
    en, zh = DIAGNOSES[key]
    values = {f: f"<{f}>" for f in re.findall(r"{(\w+)}", en)}
    assert whiteboard_zh.to_zh(f"[case] {en.format(**values)}") == f"[case] {zh.format(**values)}"


# Words a Chinese transcript may show in Latin letters: code and names (identifiers with `_`, `.`, `:` or
# `/` - paths, commands, item ids - are code anyway)
CODE_WORDS = {"attention", "softmax", "torch", "course", "interview", "whiteboard", "grade", "lang", "sdpa", "mha",
              "mlm", "True", "False", "None", "PyTorch", "token", "output", "weights", "inf", "MASK", "CLS", "SEP",
              "PAD", "Hugging", "Face", "DataCollatorForLanguageModeling", "MultiHeadAttention", "Linear", "view",
              "reshape", "transpose", "tril", "triu", "dim", "long", "Generator", "dropout", "BERT", "MLM", "labels"}
# and the names of the starters' code (parameters, `class`, `forward`, ...)
CODE_WORDS |= {w for t in whiteboard.TASKS.values() for w in re.findall(r"\w+", t.code)}


def _english(text):
    """The Latin-letter words of `text` that are not code: English left in a Chinese text."""
    tokens = re.findall(r"[A-Za-z_][\w.:/-]*", text)
    return {t for t in tokens if re.fullmatch(r"[A-Za-z]{3,}", t) and t not in CODE_WORDS}


@pytest.mark.grader
def test_a_chinese_drill_prints_no_english_frame_words(desk):
    path = desk / "work" / "whiteboard" / "sdpa.py"
    shown = []

    def read(prompt):
        shown.append(prompt)
        path.write_text(A.SDPA_MISTAKES["mask_after"][0], encoding="utf-8")
        return ""
    whiteboard.main("sdpa", "zh", read=read, write=shown.append)
    text = "\n".join(shown)
    assert "未通过" in text and DIAGNOSES["mask_after"][1] in text and "用时" in text, text
    assert not _english(text), (_english(text), text)


@pytest.mark.parametrize("task", TASKS)
def test_the_chinese_starter_and_feedback_have_no_english_sentences(task):
    starter = whiteboard.starter(task, "zh")
    docstring = starter.split('"""')[1]
    assert not _english(docstring), _english(docstring)
    for key, (source, item) in A.MISTAKES[task].items():
        feedback = whiteboard.say(_in_process(task, source)[item].feedback, "zh")
        assert not _english(feedback), (key, feedback)


def test_the_command_line_grades_the_last_drill_or_says_none_was_started(desk, capsys):
    from course_tools.cli import main
    assert main(["interview", "--grade"]) == 2
    assert "no whiteboard drill started yet" in capsys.readouterr().out
    assert main(["interview", "--whiteboard", "mlm", "--grade", "--lang", "zh"]) == 2
    assert "请先开始练习" in capsys.readouterr().out
    whiteboard.start("mlm")                                      # Enter not pressed yet: the file is the starter
    assert main(["interview", "--whiteboard", "mlm", "--grade"]) == 2
    assert "is still the starter" in capsys.readouterr().out and not whiteboard.history()
