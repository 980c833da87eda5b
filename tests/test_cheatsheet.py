"""The cheat sheet and the site's staging helpers (no browser, no Jupyter Book needed)."""
from __future__ import annotations

import nbformat
import pytest

from course_tools import cheatsheet, site
from course_tools.manifest import LESSONS, Lesson, available

SWEEP = """lesson,id,run,statement,value,op,threshold,margin,relative_margin,held
01,scale-sqrt-dk,seed 0,gap,0.5,>,0.1,0.4,4.0,True
01,scale-sqrt-dk,seed 1,gap,0.25,>,0.1,0.15,1.5,True
01,scale-sqrt-dk,seed 1,ours == library (largest difference),0.0,<=,1e-06,1e-06,1.0,True
"""


def test_every_lesson_of_the_manifest_is_on_the_sheet_with_both_questions(tmp_path):
    sheet = cheatsheet.render(sweep_path=tmp_path / "absent.csv")
    for lesson in LESSONS:
        assert f"## {lesson.number:02d} · {lesson.question}" in sheet
        assert lesson.question_zh in sheet
        assert f"(../notebooks/{lesson.stem}.ipynb)" in sheet
    assert "sweep not run" in sheet


def test_short_answers_come_from_the_notebooks(tmp_path):
    sheet = cheatsheet.render(sweep_path=tmp_path / "absent.csv")
    for lesson in available():
        answer = cheatsheet.section(lesson, cheatsheet.SHORT_ANSWER)
        assert answer, f"{lesson.stem}: no '## The short answer' cell"
        assert answer.splitlines()[0] in sheet


def test_measured_ranges_are_min_to_max_over_runs_and_parity_checks_are_only_counted(tmp_path):
    path = tmp_path / "sweep.csv"
    path.write_text(SWEEP, encoding="utf-8")
    lines = cheatsheet.claim_lines(LESSONS[1], cheatsheet.load_sweep(path))
    assert lines[0] == "over 2 sweep runs:"
    assert "gap: **0.25–0.5** (claimed > 0.1; held in 2/2 runs)" in lines
    assert any(line.startswith("1 parity check") for line in lines)
    assert "not run for this lesson" in cheatsheet.claim_lines(LESSONS[2], cheatsheet.load_sweep(path))[0]
    empty = tmp_path / "empty.csv"
    empty.write_text("\n", encoding="utf-8")
    assert cheatsheet.load_sweep(empty) is None


def test_the_correction_line_prefers_a_marked_bullet(tmp_path, monkeypatch):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# 01 · Title"),
                      nbformat.v4.new_markdown_cell(
                          "## Pitfalls and follow-ups\n\n- **First.** Not this one at all, really not.\n"
                          "- **\"The usual answer.\"** It is wrong, and here is the measured reason why. "
                          "More. <!-- cheatsheet -->")]
    path = tmp_path / "01_x.ipynb"
    nbformat.write(notebook, path)
    lesson = Lesson(1, "x", "Q?", "问？")
    monkeypatch.setattr(Lesson, "notebook", property(lambda self: path))
    assert cheatsheet.common_answer_line(lesson) == \
        '**"The usual answer."** It is wrong, and here is the measured reason why.'


def test_shortened_lines_never_leave_math_open():
    text = "word " * 40 + "the value $x = 1, y = 2, z = 3$ " * 5
    short = cheatsheet._shorten(text, limit=230)
    assert short.endswith("…") and short.count("$") % 2 == 0


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
