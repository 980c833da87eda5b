"""`course site`: the course as a static website, built offline from the stored notebooks.

Jupyter Book 1.x (Sphinx + MyST-NB; the `site` extra pins it) renders the notebooks as they are
stored — executed, never re-run. The build is staged in `build/book/`:

- `site/` (book configuration, landing page, workflow page, static files) is copied in; a page's
  `<!-- include docs/setup.md ## Heading -->` line is replaced by that section of that repository
  page (`include-optional` where the section may be absent; `<!-- readme: Heading -->` takes one
  of the README's) and `<!-- readme-intro -->` by the README's opening paragraphs, so the set-up
  instructions are written once;
- `_toc.yml` and the lesson map on the landing page are generated from the manifest;
- each lesson notebook gets one extra cell under its title: the Chinese question (when the
  notebook does not show it), a download link to its exercise and how to grade it; its code is
  shown without nbval's `# NBVAL_...` marker lines, and its printed output as JupyterLab shows it
  (a tqdm bar's final state, not each update: `course_tools.nbtidy`);
- `site/_assets/course.css` and `course.js` (listed in `_config.yml`): wide tables scroll sideways
  instead of being squeezed, a figure enlarges on click (Escape or a click closes it), the quizzes
  take the theme's look (light and dark), and the mock interview (`interview.md`, from the lessons'
  Check yourself items) asks a round of 5, 10 or 20 questions at a time from the lessons chosen;
- `_assets/fonts/`: a subset of the system's Noto CJK font holding the Chinese characters the pages
  use (fontTools, a matplotlib dependency; `course_tools.site_fonts`), so Chinese renders on machines
  without a CJK font;
- `cheatsheet.md` comes from `course_tools.cheatsheet`;
- MathJax 3 is copied from the `sphinx-mathjax-offline` package into `_assets/mathjax/` (the site's
  `_static/mathjax/`), so pages typeset math with no network. The source folder must not be called
  `_static`: Jupyter Book would add every .js file under it to every page.

Sphinx runs with warnings as errors and nitpicky references: a broken link, a missing image or a
notebook warning fails the build. The website lands in `build/site/` (open `build/site/index.html`).
"""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from . import ROOT
from . import cheatsheet
from .manifest import Lesson, available
from .nbtidy import collapse_streams, strip_test_markers
from .site_fonts import embed_cjk_font

SITE_SRC = ROOT / "site"
BUILD = ROOT / "build"
STAGE = BUILD / "book"
OUT = BUILD / "site"
#: The parts of MathJax 3 that `tex-chtml.js` loads (components, TeX extensions, CHTML fonts, menu).
MATHJAX_PARTS = ["tex-chtml.js", "input", "output/chtml", "ui", "a11y", "adaptors"]


class SiteError(RuntimeError):
    """The site cannot be built (missing tool, missing README or docs/ section, Sphinx warnings)."""


def mathjax_source() -> Path:
    """The MathJax folder shipped by the PyPI package `sphinx-mathjax-offline`."""
    spec = importlib.util.find_spec("sphinx")
    if spec is None or spec.origin is None:
        raise SiteError("Sphinx is not installed: run `make site` (it installs the `site` extra: "
                        "pip install -e '.[site]')")
    folder = Path(spec.origin).parent.parent / "sphinx-mathjax-offline" / "static" / "mathjax"
    if not (folder / "tex-chtml.js").exists():
        raise SiteError(f"no local MathJax at {folder}: pip install -e '.[site]' "
                        "(the package sphinx-mathjax-offline ships it)")
    return folder


def readme_section(readme: str, heading: str, required: bool = True, source: str = "README.md") -> str:
    """The body of the section of `readme` (the text of `source`) whose `## ` heading starts with
    `heading` ("" when absent and not required)."""
    match = re.search(rf"^## {re.escape(heading)}[^\n]*\n(.*?)(?=^## |\Z)", readme, flags=re.M | re.S)
    if not match and not required:
        return ""
    if not match:
        raise SiteError(f"{source} has no section '## {heading}' (site/ pages include it)")
    return _site_links(match.group(1).strip())


def doc_section(path: str, heading: str, required: bool = True) -> str:
    """The body of the `## heading` section of the repository page `path` (docs/setup.md, ...)."""
    page = ROOT / path
    if not page.is_file():
        raise SiteError(f"{path} does not exist (site/ pages include its section '## {heading}')")
    return readme_section(page.read_text(encoding="utf-8"), heading, required, source=path)


def readme_intro(readme: str) -> str:
    """The README's paragraphs between its title and its first `## ` section."""
    body = re.sub(r"\A# [^\n]*\n", "", readme)
    return _site_links(body.split("\n## ", 1)[0].strip())


def _site_links(text: str) -> str:
    """Repository-relative links point at files the website does not have: keep their text."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return re.sub(r"\[([^\]]+)\]\((?!https?:|#)[^)]+\)", r"\1", text)


def _download(match: re.Match) -> str:
    text = match.group(1).replace("`", "")
    return f"{{download}}`{text} <exercises/{match.group(2)}>`"


def _relink(text, markdown: bool = False):
    """Lessons sit side by side on the site and their exercises in its exercises/ folder: the
    repository's `../notebooks/...` and `../exercises/...` links lose their `../`. In markdown cells
    (parsed by MyST, which would take a link to a .ipynb for a page) an exercise link becomes a
    download link; in rendered outputs it points at the copy under exercises/ verbatim."""
    if isinstance(text, list):
        return [_relink(part, markdown) for part in text]
    if markdown:
        text = re.sub(r"\[([^\]]+)\]\(\.\./exercises/([^)\s]+)\)", _download, text)
    text = re.sub(r"(\]\(|href=[\"'])\.\./exercises/", r"\1exercises/", text)
    return re.sub(r"(\]\(|href=[\"'])\.\./notebooks/", r"\1", text)


def _relink_output(text, lessons: list[Lesson]):
    """In a rendered output a link is kept verbatim: a lesson's .ipynb becomes its page's .html."""
    if isinstance(text, list):
        return [_relink_output(part, lessons) for part in text]
    text = _relink(text)
    for lesson in lessons:
        text = re.sub(rf"(\]\(|href=[\"']){lesson.stem}\.ipynb", rf"\g<1>{lesson.stem}.html", text)
    return text


def lesson_map(lessons: list[Lesson]) -> str:
    rows = ["| # | Question | 中文 | Exercise |", "|---|---|---|---|"]
    for lesson in lessons:
        exercise = (f"{{download}}`{lesson.stem}.ipynb <exercises/{lesson.stem}.ipynb>`"
                    if lesson.exercise and lesson.exercise.exists() else "—")
        rows.append(f"| {lesson.number:02d} | [{lesson.question}]({lesson.stem}.ipynb) | "
                    f"{lesson.question_zh} | {exercise} |")
    return "\n".join(rows)


#: What the mock interview's rounds say (site/_assets/course.js reads them from the page, in the quiz's
#: language; here, so that the Chinese is in the staged page and in the embedded font's subset).
INTERVIEW_WORDS = {
    "en": {"perRound": "Questions per round", "lessons": "Lessons", "all": "All lessons",
           "allOf": "{part}: all {k} lessons", "next": "Next {n} questions",
           "progress": "Round {r}: {a} of {n} answered", "done": "Round {r} done: {right} right, {wrong} wrong",
           "reread": "To reread", "allRight": "All right: nothing to reread.",
           "lesson": "Lesson {n}", "again": "No number in your answer: type one (e.g. 0.25, 1/16 or 6.25%) "
           "and check again.", "pick": "Pick an option, then check.",
           "empty": "No questions in this selection.", "over": "Every question of this selection has been "
           "asked: the next round starts over, weakest first."},
    "zh": {"perRound": "每轮题数", "lessons": "课程", "all": "全部课程", "allOf": "{part}：全部 {k} 课",
           "next": "下一轮 {n} 题", "progress": "第 {r} 轮：已答 {a} / {n}",
           "done": "第 {r} 轮结束：答对 {right}，答错 {wrong}", "reread": "需要重读",
           "allRight": "全部答对，无需重读。", "lesson": "第 {n} 课",
           "again": "回答中没有数字：请输入一个数（如 0.25、1/16 或 6.25%）再检查。",
           "pick": "请先选择一个选项，再检查。", "empty": "这个范围内没有题目。",
           "over": "这个范围的题目都已问过：下一轮从头开始，薄弱的题优先。"},
}


def interview_config(lessons: list[Lesson]) -> dict:
    """What the mock interview's script needs besides the items: each lesson's page and question
    (both languages), the course's parts (the cheat sheet's), the words of the rounds."""
    numbers = {lesson.number for lesson in lessons if lesson.number}
    return {
        "lessons": {f"{lesson.number:02d}": {"href": f"{lesson.stem}.html", "en": lesson.question,
                                             "zh": lesson.question_zh}
                    for lesson in lessons if lesson.number},
        "parts": [{"id": f"part-{i}", "en": title, "zh": title_zh,
                   "lessons": [f"{n:02d}" for n in span if n in numbers]}
                  for i, (title, title_zh, span) in enumerate(cheatsheet.PARTS, 1)],
        "words": INTERVIEW_WORDS,
    }


def interview_page(lessons: list[Lesson]) -> str:
    """The mock interview: every lesson's Check yourself items, asked a round of n at a time (5, 10
    or 20; site/_assets/course.js), weakest first, from all lessons, a part or one lesson."""
    import json
    from course_lib.quiz import claim_ranges, load_card, payload, quiz_html, short_answers
    ranges, items = claim_ranges(), []
    for lesson in lessons:
        card = load_card(lesson.number, lesson.notebook) if lesson.number else None
        if card is not None:
            items += payload(card, ranges, short_answers(lesson.notebook))
    config = json.dumps(interview_config(lessons), ensure_ascii=False).replace("</", "<\\/")
    return ("# Mock interview · 模拟面试\n\n"
            "Every lesson's interview questions, asked a round at a time (5, 10 or 20 questions, mixed "
            "across lessons and kinds), the ones you have not answered or got wrong first (a Leitner "
            "schedule kept in this browser's `localStorage`; nothing is sent anywhere); after each round, "
            "what to reread. Choose all lessons, one part or one lesson. "
            "Numeric answers are checked against the range the course measured over its sweep runs. "
            "The same questions are at the end of each lesson page, and `course interview` asks them "
            "in a terminal.\n\n"
            "每课的面试题，每轮问 5、10 或 20 道（不同课程、不同题型穿插），未答或答错的题优先（进度只保存在本浏览器中）；"
            "每轮结束后列出需要重读的课。可选全部课程、某一部分或某一课。\n\n"
            "```{raw} html\n"
            f'<script type="application/json" id="course-interview-config">{config}</script>'
            + quiz_html(items, mode="interview") + "\n```\n")


def toc(lessons: list[Lesson]) -> str:
    lines = ["# Generated by course site from the manifest.", "format: jb-book", "root: index", "parts:",
             "  - caption: Start here", "    chapters:", "      - file: workflow",
             "      - file: cheatsheet", "      - file: cheatsheet-zh", "      - file: interview", "  - caption: Lessons", "    chapters:"]
    lines += [f"      - file: {lesson.stem}" for lesson in lessons]
    return "\n".join(lines) + "\n"


def lesson_box(lesson: Lesson, notebook) -> str:
    """The cell put under a lesson's title on its page."""
    title = notebook.cells[0].source if notebook.cells else ""
    lines = [":::{admonition} This lesson", ":class: tip", ""]
    if lesson.question_zh not in title:
        lines.append(f"- **中文：** {lesson.question_zh}")
    if lesson.exercise and lesson.exercise.exists():
        name, nn = f"exercises/{lesson.stem}.ipynb", f"{lesson.number:02d}"
        lines.append(f"- **Exercise:** `course start {nn}` copies {{download}}`{name} <{name}>` to "
                     f"`work/{lesson.stem}_exercise.ipynb`, yours to answer in JupyterLab (`make lab`); "
                     f"self-check with `course check {nn}`, grade with `course grade {nn}` "
                     f"([how](workflow.md)).")
    else:
        lines.append("- **Exercise:** none for this lesson.")
    lines.append(f"- **Run it yourself:** `notebooks/{lesson.stem}.ipynb`; the "
                 f"[cheat sheet](cheatsheet.md) has this lesson's numbers over all seeds.")
    lines.append(":::")
    return "\n".join(lines)


def stage(lessons: list[Lesson], stage_dir: Path = STAGE) -> Path:
    """Write the book's source folder (see the module docstring) and return it."""
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    shutil.copytree(SITE_SRC, stage_dir, ignore=shutil.ignore_patterns("_build", "__pycache__"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in stage_dir.glob("*.md"):
        text = page.read_text(encoding="utf-8")
        text = re.sub(r"<!-- include(-optional)? (\S+) ## (.+?) -->",
                      lambda m: doc_section(m.group(2), m.group(3), required=not m.group(1)), text)
        text = re.sub(r"<!-- readme: (.+?) -->", lambda m: readme_section(readme, m.group(1)), text)
        text = re.sub(r"<!-- readme-optional: (.+?) -->",
                      lambda m: readme_section(readme, m.group(1), required=False), text)
        text = text.replace("<!-- readme-intro -->", readme_intro(readme))
        text = text.replace("<!-- lesson-map -->", lesson_map(lessons))
        page.write_text(text, encoding="utf-8")
    (stage_dir / "_toc.yml").write_text(toc(lessons), encoding="utf-8")
    for lang, name in cheatsheet.SHEET_FILES.items():
        (stage_dir / f"{name}.md").write_text(cheatsheet.render(link_base="", lessons=lessons, lang=lang),
                                              encoding="utf-8")
    (stage_dir / "interview.md").write_text(interview_page(lessons), encoding="utf-8")
    # Exercises in the source folder (markdown links to them become download links); `build` also
    # copies them to the site's exercises/, where links inside rendered outputs point verbatim.
    (stage_dir / "exercises").mkdir()
    for lesson in lessons:
        notebook = nbformat.read(lesson.notebook, as_version=4)
        for cell in notebook.cells:
            cell.source = _relink(cell.source, markdown=cell.cell_type == "markdown")
            if cell.cell_type == "code":   # as a reader sees it: no nbval markers, final bars only
                cell.source = strip_test_markers(cell.source)
                cell.outputs = collapse_streams(cell.outputs)
            for output in cell.get("outputs", []):
                for mime in ("text/markdown", "text/html"):
                    if mime in output.get("data", {}):
                        output["data"][mime] = _relink_output(output["data"][mime], lessons)
        box = nbformat.v4.new_markdown_cell(lesson_box(lesson, notebook))
        box.id = f"site-lesson-box-{lesson.number:02d}"
        notebook.cells.insert(1, box)
        nbformat.write(notebook, stage_dir / lesson.notebook.name)
        if lesson.exercise and lesson.exercise.exists():
            shutil.copy2(lesson.exercise, stage_dir / "exercises" / lesson.exercise.name)
    embed_cjk_font(stage_dir)
    mathjax = mathjax_source()
    for part in MATHJAX_PARTS:
        source, target = mathjax / part, stage_dir / "_assets" / "mathjax" / part
        if source.is_dir():
            shutil.copytree(source, target)
        elif source.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return stage_dir


def build(lessons: list[Lesson] | None = None, out: Path = OUT, quiet: bool = True) -> Path:
    """Stage and build the site into `out`; raise SiteError on any Sphinx warning."""
    lessons = available() if lessons is None else lessons
    source = stage(lessons)
    work = BUILD / "book_build"
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    if not jupyter_book.exists():
        raise SiteError("jupyter-book is not installed: run `make site` "
                        "(it installs the `site` extra: pip install -e '.[site]')")
    command = [str(jupyter_book), "build", str(source), "--path-output", str(work), "--builder", "html",
               "-W", "-n", "--keep-going", "--all"]
    if quiet:
        command.append("-q")
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    log = result.stdout + result.stderr
    (BUILD / "site-build.log").write_text(log, encoding="utf-8")
    if result.returncode != 0:
        warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
        raise SiteError("the site build failed (warnings are errors); see build/site-build.log\n"
                        + "\n".join(warnings[:40] or log.splitlines()[-40:]))
    html = work / "_build" / "html"
    if out.exists():
        shutil.rmtree(out)
    shutil.move(str(html), str(out))
    exercises = [lesson.exercise for lesson in lessons if lesson.exercise and lesson.exercise.exists()]
    (out / "exercises").mkdir()
    for exercise in exercises:
        shutil.copy2(exercise, out / "exercises" / exercise.name)
    return out


def main() -> int:
    start = time.perf_counter()
    try:
        out = build()
    except SiteError as error:
        print(f"course site: {error}", file=sys.stderr)
        return 1
    sheet = cheatsheet.write()
    pages = len(list(out.glob("*.html")))
    print(f"website: {out / 'index.html'} ({pages} pages, {time.perf_counter() - start:.0f} s); "
          f"cheat sheet: {sheet}")
    return 0
