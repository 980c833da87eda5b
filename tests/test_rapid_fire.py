"""The rapid-fire questions (`course_tools.rapid_fire`): the data kept true (one-line answers in both
languages, every lesson and cell heading real, a citation where the course measures nothing), the
cheat sheet's "Rapid fire" section in both languages, and `course interview --rapid` driven through
stdin."""
import os
import subprocess
import sys

import nbformat
import pytest

from course_tools import rapid_fire
from course_tools import cheatsheet, interview
from course_tools.manifest import LESSONS

ENTRIES = rapid_fire.load()
BY_NUMBER = {lesson.number: lesson for lesson in LESSONS}


def _headings(notebook) -> set[str]:
    nb = nbformat.read(notebook, as_version=4)
    return {line.lstrip("#").strip() for cell in nb.cells if cell.cell_type == "markdown"
            for line in cell.source.splitlines() if line.startswith("#")}


def test_there_are_enough_questions_each_asked_once():
    assert len(ENTRIES) >= 35
    for lang in ("en", "zh"):
        questions = [e["q"][lang] for e in ENTRIES]
        assert len(set(questions)) == len(questions), f"a {lang} question is asked twice"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["q"]["en"][:40] for e in ENTRIES])
def test_each_answer_is_one_line_in_both_languages(entry):
    for key in ("q", "a"):
        for lang in ("en", "zh"):
            text = entry[key][lang]
            assert text.strip() and "\n" not in text, f"{key}.{lang} empty or not one line"
    words = cheatsheet.word_count(entry["a"]["en"])
    assert words <= rapid_fire.ANSWER_WORDS, f"the English answer has {words} words"
    assert len(entry["a"]["zh"]) <= 90, "the Chinese answer is longer than one line (90 characters)"
    assert any("\u4e00" <= ch <= "\u9fff" for ch in entry["q"]["zh"] + entry["a"]["zh"]), "zh is not Chinese"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["q"]["en"][:40] for e in ENTRIES])
def test_each_entry_names_its_lesson_and_a_real_cell_or_else_a_source(entry):
    if entry["lesson"] is None:
        assert entry["source"] and entry["cell"] is None
        return
    assert entry["source"] is None
    lesson = BY_NUMBER.get(entry["lesson"])
    assert lesson is not None and lesson.number, f"no lesson {entry['lesson']}"
    assert entry["cell"] in _headings(lesson.notebook), \
        f"{lesson.stem}: no heading {entry['cell']!r} (renamed? update course_tools/rapid_fire.json)"


@pytest.mark.parametrize("bad,message", [
    ({"q": {"en": "q"}, "a": {"en": "a", "zh": "答"}, "lesson": 1, "cell": "x", "source": None}, "q: expected"),
    ({"q": {"en": "q", "zh": "问"}, "a": {"en": "a", "zh": ""}, "lesson": 1, "cell": "x", "source": None}, "a: expected"),
    ({"q": {"en": "q", "zh": "问"}, "a": {"en": "a", "zh": "答"}, "lesson": None, "cell": None, "source": None},
     "exactly one of lesson and source"),
    ({"q": {"en": "q", "zh": "问"}, "a": {"en": "a", "zh": "答"}, "lesson": 1, "cell": "x", "source": "paper"},
     "exactly one of lesson and source"),
    ({"q": {"en": "q", "zh": "问"}, "a": {"en": "a", "zh": "答"}, "lesson": 1, "cell": None, "source": None},
     "heading of the cell"),
])
def test_a_malformed_entry_is_refused_with_its_index(bad, message):
    with pytest.raises(ValueError, match=message):
        rapid_fire.validate([bad])


def test_both_cheat_sheets_have_every_question_with_its_lesson_link_or_source():
    for lang, title in (("en", "## Rapid fire"), ("zh", "## Rapid fire · 快问快答")):
        sheet = cheatsheet.render(lang=lang)
        assert title in sheet
        section = sheet[sheet.index(title):]
        for entry in ENTRIES:
            line = next((l for l in section.splitlines() if f"**{entry['q'][lang]}**" in l), None)
            assert line is not None, f"{lang}: {entry['q'][lang]!r} is not on the sheet"
            assert entry["a"][lang] in line
            if entry["lesson"] is not None:
                stem = BY_NUMBER[entry["lesson"]].stem
                assert f"(../notebooks/{stem}.ipynb)" in line and entry["cell"] in line
            else:
                assert entry["source"] in line
                assert ("not measured in this course" if lang == "en" else "本课程未实测") in line
    site_sheet = cheatsheet.render(link_base="", lang="en")     # the site's copy: links without ../notebooks/
    assert "(../notebooks/" not in site_sheet and f"({LESSONS[1].stem}.ipynb)" in site_sheet


def test_a_lesson_left_out_of_the_site_leaves_its_rapid_fire_lines_out():
    sheet = cheatsheet.render(lessons=[LESSONS[1]], lang="en")
    assert "Why divide QKᵀ by √d_k?" in sheet and "Why multi-head attention?" not in sheet
    assert "What is ELECTRA?" in sheet         # a cited entry needs no lesson page


def test_a_rapid_session_shows_each_answer_and_where_and_counts_the_self_judgements():
    entries = [ENTRIES[0], next(e for e in ENTRIES if e["source"])]
    answers = iter(["variance", "y", "no idea", "n"])
    shown = []
    judged = rapid_fire.rapid_session(entries, lang="en", read=lambda prompt: next(answers), write=shown.append)
    assert judged == [True, False]
    text = "\n".join(shown)
    assert entries[0]["a"]["en"] in text and "measured in lesson 01" in text
    assert "not measured in this course" in text and "1 of 2 the same" in text


ENGLISH_FRAME = ["rapid fire", "your answer", "one-line answer", "did yours", "measured in lesson",
                 "not measured", "the same (", "input ended", "not recorded"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_course_interview_rapid_through_stdin_asks_shows_answers_and_records_nothing(tmp_path, lang):
    history = tmp_path / "interview.jsonl"
    env = {**os.environ, interview.INTERVIEW_ENV: str(history)}
    stdin = "my answer\ny\nanother\nn\nthird\ny\n"
    result = subprocess.run([sys.executable, "-m", "course_tools.cli", "interview", "--rapid", "--n", "3",
                             "--lang", lang], input=stdin, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    asked = [e for e in ENTRIES if e["q"][lang] in out]
    assert len(asked) == 3, out
    assert all(e["a"][lang] in out for e in asked)
    assert not history.exists()                                  # nothing in the Leitner history
    if lang == "en":
        assert "[3/3] rapid fire" in out and "did yours say the same? [y/n]" in out and "2 of 3 the same" in out
    else:
        assert "[3/3] 快问快答" in out and "你的回答意思相同吗？" in out and "意思相同 2 / 3" in out
        frame = [word for word in ENGLISH_FRAME if word in out.lower()]
        assert not frame, f"English frame words in the Chinese session: {frame}"


def test_course_interview_rapid_for_one_lesson_asks_only_its_questions(tmp_path):
    env = {**os.environ, interview.INTERVIEW_ENV: str(tmp_path / "h.jsonl")}
    mine = [e for e in ENTRIES if e["lesson"] == 23]
    result = subprocess.run([sys.executable, "-m", "course_tools.cli", "interview", "--rapid", "--lesson", "23",
                             "--n", "50"], input="x\ny\n" * len(mine), capture_output=True, text=True, env=env,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"[{len(mine)}/{len(mine)}] rapid fire" in result.stdout
    assert all(e["q"]["en"] in result.stdout for e in mine)
