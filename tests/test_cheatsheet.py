"""The cheat sheet and the site's staging helpers (no browser, no Jupyter Book needed)."""
from __future__ import annotations

import pytest

from course_tools import cheatsheet, site
from course_tools.manifest import LESSONS

LESSONS_ON_SHEET = [lesson for lesson in LESSONS if lesson.number]


def test_every_lesson_but_the_welcome_is_on_both_sheets_in_its_language():
    english, chinese = cheatsheet.render(lang="en"), cheatsheet.render(lang="zh")
    for lesson in LESSONS_ON_SHEET:
        assert f"### {lesson.number:02d} · {lesson.question}" in english
        assert f"### {lesson.number:02d} · {lesson.question_zh}" in chinese
        assert f"(../notebooks/{lesson.stem}.ipynb)" in english and f"(../notebooks/{lesson.stem}.ipynb)" in chinese
    for sheet in (english, chinese):
        assert "00 · " not in sheet and "no interview card yet" not in sheet and "尚无面试卡片" not in sheet
    with pytest.raises(ValueError, match="lang: expected one of"):
        cheatsheet.render(lang="fr")


def test_the_numbers_come_from_the_committed_sweep_data_so_a_fresh_clone_has_them():
    sheet = cheatsheet.render()
    assert "not in the sweep data" not in sheet
    assert sheet.count("**Measured:** ") >= len(LESSONS_ON_SHEET) * 2   # the numbers and the correction


@pytest.mark.parametrize("lesson", LESSONS_ON_SHEET, ids=[l.stem for l in LESSONS_ON_SHEET])
def test_say_this_is_at_most_40_words_and_the_correction_is_stated(lesson):
    from course_lib.quiz import load_card
    card = load_card(lesson.number, lesson.notebook)
    assert card is not None, f"{lesson.stem}: no metadata.course.interview"
    words = cheatsheet.word_count(card.say_this["en"])
    assert words <= cheatsheet.SAY_THIS_WORDS, f"{lesson.stem}: 'say this' has {words} words"
    assert len(card.say_this["zh"]) <= 120, f"{lesson.stem}: the Chinese 'say this' is longer than 120 characters"
    for lang in ("en", "zh"):   # a correction that stops before correcting ("— not quite.") is no correction
        assert len(card.measured[lang].strip()) >= 15 and card.measured[lang] != card.folklore[lang]


def test_word_count_counts_math_and_code_as_one_word():
    assert cheatsheet.word_count("Divide by $\\sqrt{d_k}$ so `q·k` keeps variance 1.") == 8
    assert cheatsheet.word_count("word " * 41) == 41 > cheatsheet.SAY_THIS_WORDS


def test_readme_sections_and_links_for_the_site():
    readme = "# T\n\nIntro, see [C](CONTRIBUTING.md) and [web](https://x.org).\n\n## Set-up: two\n\nrun it\n\n## Next\n"
    assert site.readme_intro(readme) == "Intro, see C and [web](https://x.org)."
    assert site.readme_section(readme, "Set-up") == "run it"
    assert site.readme_section(readme, "Missing", required=False) == ""
    with pytest.raises(site.SiteError):
        site.readme_section(readme, "Missing")
    assert site._relink("[e](../exercises/01_a.ipynb)", markdown=True) == "{download}`e <exercises/01_a.ipynb>`"
    assert site._relink_output('<a href="01_scale_sqrt_dk.ipynb">', LESSONS) == '<a href="01_scale_sqrt_dk.html">'
    toc = site.toc(LESSONS)
    assert all(f"- file: {lesson.stem}" in toc for lesson in LESSONS)


def test_no_display_slips_on_the_sheets_or_in_the_quiz():
    """Issue 33's slips: a number run into a word unit ("2.95–3.07nats", "42heads"), a range that is one
    value twice ("42–42"), and a ratio (×) shown for a claim stated in log10."""
    import re

    from course_lib.quiz import claim_ranges, load_card, payload
    units = r"(nats|heads|steps|tokens|windows|layers|runs|bits|GFLOPs)"
    texts = [cheatsheet.render(lang="en"), cheatsheet.render(lang="zh")]
    ranges = claim_ranges()
    for lesson in LESSONS[1:]:
        card = load_card(lesson.number, lesson.notebook)
        for entry in payload(card, ranges, {"en": "", "zh": ""}):
            texts.append(entry.get("measured", ""))
        for item in card.items:
            if item.kind == "numeric" and item.claim and "log10" in item.claim:
                assert item.log10 or item.unit != "×", f"{item.id}: a log10 claim shown as a ratio"
    for text in texts:
        assert not re.search(rf"\d{units}\b", text), re.search(rf".{{30}}\d{units}\b", text)
        assert not re.search(r"(?<![\d.])(\d+(?:\.\d+)?)–\1(?![\d.])", text), \
            re.search(r".{20}(?<![\d.])(\d+(?:\.\d+)?)–\1(?![\d.]).{10}", text)


def test_the_mock_interview_page_knows_every_lesson_its_part_and_its_words_in_both_languages():
    """What site/_assets/course.js reads from the interview page: each lesson's page (for the round's
    "to reread" links) in exactly one part of the lesson filter, and every word in English and Chinese."""
    import json
    import re
    config = site.interview_config(LESSONS)
    assert sorted(config["lessons"]) == [f"{lesson.number:02d}" for lesson in LESSONS_ON_SHEET]
    assert all(entry["href"].endswith(".html") and entry["en"] and entry["zh"] for entry in config["lessons"].values())
    in_parts = [n for part in config["parts"] for n in part["lessons"]]
    assert sorted(in_parts) == sorted(config["lessons"]), "a lesson in no part or in two"
    english, chinese = config["words"]["en"], config["words"]["zh"]
    assert english.keys() == chinese.keys()
    for key in english:   # the same {placeholders} in both languages
        assert set(re.findall(r"\{\w+\}", english[key])) == set(re.findall(r"\{\w+\}", chinese[key])), key
    page = site.interview_page(LESSONS)
    found = re.search(r'<script type="application/json" id="course-interview-config">(.*?)</script>', page)
    assert found and json.loads(found.group(1).replace("<\\/", "</")) == config
    assert 'data-mode="interview"' in page
