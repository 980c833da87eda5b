"""The built website (`make site`), opened from disk in headless Chromium with the network cut off.

Every page: loads without console errors or failed requests, asks for nothing but local files,
typesets all of its math with the local MathJax (no TeX errors), shows every image, and links only
to pages and files that exist. The landing page links every lesson of the manifest.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from course_tools.manifest import available

from .conftest import INSTALL_HINT, SITE

PAGES = sorted(p.name for p in SITE.glob("*.html")) if SITE.exists() else ["index.html"]
LESSON_PAGES = [f"{lesson.stem}.html" for lesson in available()]


class PageVisit:
    """One page in its own offline context, with what the browser complained about."""

    def __init__(self, browser, path: Path, offline: bool = False):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=offline)
        self.errors: list[str] = []
        self.remote: list[str] = []
        self.failed: list[str] = []

        def route(route):
            if route.request.url.startswith("file://"):
                route.continue_()
            else:  # no network: anything that is not a local file is refused and remembered
                self.remote.append(route.request.url)
                route.abort()

        self.context.route("**/*", route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", lambda r: self.failed.append(f"{r.url} ({r.failure})"))
        self.page.goto(path.as_uri(), wait_until="load")
        # MathJax typesets after load; wait for it when the page uses it.
        if self.page.evaluate("() => !!(window.MathJax && window.MathJax.startup)"):
            self.page.wait_for_function("() => !!(window.MathJax.startup.promise)")
            self.page.evaluate("() => window.MathJax.startup.promise")
        self.page.wait_for_function("() => [...document.images].every(img => img.complete)")
        self.page.evaluate("() => document.fonts.ready.then(() => true)")

    def close(self):
        self.context.close()


@pytest.fixture
def visit(browser):
    visits = []

    def open_page(name: str, offline: bool = False) -> PageVisit:
        v = PageVisit(browser, SITE / name, offline=offline)
        visits.append(v)
        return v

    yield open_page
    for v in visits:
        v.close()


def math_report(page) -> dict:
    return page.evaluate("""() => {
        const math = [...document.querySelectorAll('.math, span.math, div.math')];
        return {
            math: math.length,
            containers: document.querySelectorAll('mjx-container').length,
            untypeset: math.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 60)),
            texErrors: [...document.querySelectorAll('mjx-merror')].map(e => e.textContent.slice(0, 80)),
        };
    }""")


def image_report(page) -> list[dict]:
    return page.evaluate("""() => [...document.images].map(img => ({
        src: img.getAttribute('src'), complete: img.complete, width: img.naturalWidth}))""")


@pytest.mark.parametrize("name", PAGES)
def test_page_loads_offline_with_math_images_and_links(site, visit, name):
    v = visit(name)
    assert not v.errors, f"{name}: console errors {v.errors}"
    assert not v.failed, f"{name}: failed requests {v.failed}"
    assert not v.remote, f"{name}: asked the network for {v.remote}"

    source = (site / name).read_text(encoding="utf-8")
    math = math_report(v.page)
    if 'class="math' in source:
        assert math["containers"] > 0, f"{name}: math not typeset"
    assert not math["untypeset"], f"{name}: math left untypeset: {math['untypeset'][:5]}"
    assert not math["texErrors"], f"{name}: TeX errors: {math['texErrors'][:5]}"

    images = image_report(v.page)
    broken = [img for img in images if not (img["complete"] and img["width"] > 0)]
    if name in LESSON_PAGES and "<img" in source:
        assert images, f"{name}: no figure shown"
    assert not broken, f"{name}: images that did not load: {broken}"

    hrefs = v.page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)")
    missing = sorted({h for h in hrefs if h.startswith("file://")
                      and not Path(unquote(urlparse(h).path)).exists()})
    assert not missing, f"{name}: links to missing files: {missing}"


def test_landing_page_links_every_lesson_and_lessons_link_their_exercise(site, visit):
    v = visit("index.html")
    hrefs = v.page.evaluate(
        "() => [...document.querySelectorAll('article a[href]')].map(a => a.getAttribute('href'))")
    linked = {h.split("#")[0] for h in hrefs}
    assert set(LESSON_PAGES) <= linked, f"lessons not linked from the landing page: " \
                                        f"{sorted(set(LESSON_PAGES) - linked)}"
    assert {"cheatsheet.html", "workflow.html"} <= linked
    for lesson in available():
        page = (site / f"{lesson.stem}.html").read_text(encoding="utf-8")
        assert lesson.question_zh in page, f"{lesson.stem}: the Chinese question is not shown"
        if lesson.has_exercise:
            link = re.search(rf'href="(_downloads/[^"]*/{lesson.stem}\.ipynb)"', page)
            assert link, f"{lesson.stem}: no link to its exercise"
            assert (site / link.group(1)).exists()


def test_cheatsheet_lists_every_lesson(site):
    english = (site / "cheatsheet.html").read_text(encoding="utf-8")
    chinese = (site / "cheatsheet-zh.html").read_text(encoding="utf-8")
    for lesson in available():
        if lesson.number == 0:
            continue   # the welcome is not an interview question
        for page in (english, chinese):
            assert f'href="{lesson.stem}.html"' in page, f"cheat sheet: no link to {lesson.stem}"
        assert lesson.question_zh in chinese


def test_lesson_page_with_network_disabled_shows_math_figures_and_chinese(site, visit, screenshots):
    v = visit("01_scale_sqrt_dk.html", offline=True)
    assert not v.errors and not v.failed and not v.remote
    math = math_report(v.page)
    assert math["containers"] > 20 and not math["untypeset"] and not math["texErrors"], math
    images = image_report(v.page)
    assert images and all(img["width"] > 0 for img in images), images
    assert v.page.get_by_text("Transformer的点积模型做缩放的原因是什么？").first.is_visible()
    v.page.screenshot(path=str(screenshots / "site_lesson_01_offline.png"))
    v.page.locator("img[src^='_images']").first.scroll_into_view_if_needed()
    v.page.screenshot(path=str(screenshots / "site_lesson_01_figure.png"))


def test_a_cjk_font_is_installed():
    """Without one, Chinese renders as empty boxes in the screenshots (and for a learner)."""
    try:
        fonts = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        pytest.fail(f"fontconfig (fc-list) is missing: {INSTALL_HINT}", pytrace=False)
    assert fonts.strip(), f"no Chinese font: {INSTALL_HINT}"


# ------------------------------------------------------------------ how the pages look (issue 18)

BAR_LINE = re.compile(r"^(?P<label>.*?):\s+(?P<percent>\d+)%\|", re.M)
WIDE_TABLE_PAGE = "09_warmup_pre_post_ln.html"     # its results table is about 3 text columns wide
FIGURE_PAGE = "09_warmup_pre_post_ln.html"         # a 2 x 3 panel figure, unreadable at column width


def output_texts(page) -> list[str]:
    return page.evaluate("() => [...document.querySelectorAll('div.cell_output pre')].map(p => p.textContent)")


@pytest.mark.parametrize("name", LESSON_PAGES)
def test_lesson_page_shows_no_test_markers_and_no_partial_progress_bar(site, visit, name):
    """Code is shown without nbval's `# NBVAL_CHECK_OUTPUT` lines, and a progress bar only in its
    final state (one line per bar: no 0% / 68% / 100% sequence)."""
    html = (site / name).read_text(encoding="utf-8")
    assert "NBVAL" not in html, f"{name}: nbval markers are shown: {html[html.find('NBVAL') - 80:][:160]!r}"
    v = visit(name)
    assert "NBVAL" not in v.page.evaluate("() => document.body.innerText")
    for text in output_texts(v.page):
        assert "\r" not in text, f"{name}: an output keeps carriage-return updates: {text[:200]!r}"
        bars = [(m.group("label"), int(m.group("percent"))) for m in BAR_LINE.finditer(text)]
        # one bar in several states shows the same label at different percentages; two bars that
        # share a label (two models trained one after the other) are both at 100%
        unfinished = [label for label, percent in bars if percent < 100]
        repeated = sorted({label for label in unfinished if [l for l, _ in bars].count(label) > 1})
        assert not repeated, f"{name}: progress bars shown in several states: {repeated} in {text[:300]!r}"
        started_only = [label for label, percent in bars if percent == 0]
        assert not started_only, f"{name}: progress bars shown at 0%: {started_only}"


def test_a_lesson_with_training_still_shows_its_finished_bars(site):
    text = (site / "09_warmup_pre_post_ln.html").read_text(encoding="utf-8")
    assert re.search(r"Post-LN, no warm-up: 100%\|", text), "lesson 09's finished training bars are gone"


def test_a_wide_table_scrolls_sideways_instead_of_being_squeezed(visit, screenshots):
    v = visit(WIDE_TABLE_PAGE)
    tables = v.page.evaluate("""() => [...document.querySelectorAll('div.cell_output table.dataframe')].map(t => {
        const box = t.closest('.output');
        return {table: t.getBoundingClientRect().width, box: box.clientWidth, scroll: box.scrollWidth,
                overflow: getComputedStyle(box).overflowX,
                wrapped: [...t.querySelectorAll('th, td')].some(c => getComputedStyle(c).whiteSpace !== 'nowrap')};
    })""")
    widest = max(range(len(tables)), key=lambda i: tables[i]["table"])
    table = tables[widest]
    assert table["table"] > 1.5 * table["box"], f"the widest table is squeezed into the column: {table}"
    assert table["overflow"] in ("auto", "scroll") and table["scroll"] > table["box"], table
    assert not table["wrapped"], "table cells wrap their text"
    box = v.page.locator("div.cell_output table.dataframe").nth(widest).locator("xpath=ancestor::div[contains(@class, 'output')][1]")
    box.scroll_into_view_if_needed()
    box.evaluate("b => { b.scrollLeft = 400; }")
    assert box.evaluate("b => b.scrollLeft") > 0, "the table's box does not scroll"
    v.page.screenshot(path=str(screenshots / "site_wide_table.png"))


def test_a_figure_enlarges_on_click_and_closes_with_escape(visit, screenshots):
    v = visit(FIGURE_PAGE)
    figure = v.page.locator("div.cell_output img").first
    figure.scroll_into_view_if_needed()
    inline = figure.evaluate("img => ({shown: img.getBoundingClientRect().width, natural: img.naturalWidth})")
    assert inline["natural"] > 1.5 * inline["shown"], f"the figure is not shrunk on the page: {inline}"
    figure.click()
    big = v.page.locator(".course-zoom-overlay img")
    big.wait_for(state="visible", timeout=5000)
    shown = big.evaluate("img => img.getBoundingClientRect().width")
    assert shown >= inline["natural"] - 1, f"the enlarged figure is {shown} px wide, natural {inline['natural']}"
    v.page.screenshot(path=str(screenshots / "site_figure_enlarged.png"))
    v.page.keyboard.press("Escape")
    assert v.page.locator(".course-zoom-overlay").count() == 0
    figure.click()
    v.page.locator(".course-zoom-overlay").click()
    assert v.page.locator(".course-zoom-overlay").count() == 0
    assert not v.errors


@pytest.mark.parametrize("name", ["index.html", "01_scale_sqrt_dk.html"])
def test_one_search_box(visit, name):
    v = visit(name)
    boxes = v.page.evaluate("""() => [...document.querySelectorAll(
        '.search-button-field, form.bd-search input[type=search], input[type=search]')]
        .filter(e => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden').length""")
    assert boxes == 1, f"{name}: {boxes} search boxes visible"


def test_chinese_is_drawn_with_the_font_the_site_embeds(site, visit):
    """The site carries the Chinese glyphs it uses (a subset of Noto Sans CJK): Chinese renders on a
    machine without a CJK font too."""
    fonts = sorted((site / "_static" / "fonts").glob("cjk-*.woff"))
    assert fonts, f"no CJK font embedded in the site (build/site/_static/fonts/): {INSTALL_HINT}"
    v = visit("01_scale_sqrt_dk.html", offline=True)
    loaded = v.page.evaluate("""async () => {
        await document.fonts.ready;
        return [...document.fonts].filter(f => f.family.includes('Course CJK') && f.status === 'loaded').length;
    }""")
    assert loaded >= 1, "the embedded CJK font was not used for the page's Chinese"
    assert v.page.evaluate("() => document.fonts.check('16px \"Course CJK\"', '缩放的原因')")


# --- Check yourself and the mock interview ------------------------------------------------------

def _items(page) -> list[dict]:
    import json
    return json.loads(page.locator(".course-quiz .course-quiz-items").first.text_content())


def test_a_lesson_page_quiz_checks_one_answer_right_and_one_wrong_offline(site, visit, screenshots):
    from .quiz import answer_one_right_one_wrong
    page = visit("01_scale_sqrt_dk.html", offline=True).page
    quiz = page.locator(".course-quiz[data-ready]").first
    quiz.wait_for(state="attached", timeout=10_000)
    right, wrong = answer_one_right_one_wrong(quiz, _items(page))
    assert "measured" in right and "reread" in wrong
    quiz.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "site_check_yourself.png"))


def _shown(page) -> list[str]:
    """The ids of the mock interview's questions on screen (this round's), in their order."""
    return page.evaluate("() => [...document.querySelectorAll('.course-quiz-item')]"
                         ".filter(e => e.offsetParent !== null).map(e => e.dataset.item)")


def test_the_mock_interview_asks_n_at_a_time_from_the_lessons_chosen_and_remembers_them(site, visit, screenshots):
    """A round of 10 (5 and 20 on request) from several lessons; one lesson's questions only when it
    is chosen, still after a reload (and in Chinese once chosen); the site's buttons, not the
    browser's; nothing wider than a phone."""
    page = visit("interview.html", offline=True).page
    quiz = page.locator(".course-quiz.course-interview")
    items = {item["id"]: item for item in _items(page)}
    shown = _shown(page)
    assert len(shown) == 10 and quiz.get_attribute("data-per-round") == "10", shown
    assert len({items[i]["lesson"] for i in shown}) >= 5 and len({items[i]["kind"] for i in shown}) >= 2, \
        f"a round of one lesson or one kind: {shown}"
    page.locator(".course-interview-controls").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "site_mock_interview_round.png"))
    for n in ("5", "20"):
        page.select_option(".course-interview-size", n)
        assert len(_shown(page)) == int(n)
    style = page.evaluate("""() => {
        const plain = document.body.appendChild(document.createElement('button'));
        const look = (e) => { const s = getComputedStyle(e);
            return {background: s.backgroundColor, color: s.color, border: s.borderTopColor,
                    radius: s.borderTopLeftRadius, font: s.fontFamily}; };
        const result = {plain: look(plain), next: look(document.querySelector('.course-interview-next')),
            check: look(document.querySelector('.course-quiz-item:not([hidden]) > button')),
            select: look(document.querySelector('.course-interview-lessons'))};
        plain.style.color = 'var(--pst-color-primary)';
        result.primary = getComputedStyle(plain).color;   // the theme's colour, light or dark
        plain.remove();
        return result; }""")
    assert style["next"] != style["plain"] and style["check"] != style["plain"], style
    assert style["next"]["background"] == style["check"]["background"] == style["primary"], style
    assert style["next"]["radius"] != "0px" and style["select"]["radius"] != "0px", style
    page.select_option(".course-interview-lessons", "03")
    lesson03 = [i for i in items if items[i]["lesson"] == "03"]
    assert sorted(_shown(page)) == sorted(lesson03), _shown(page)
    page.locator(".course-quiz-lang").click()              # Chinese: remembered with the lesson and n
    page.reload(wait_until="load")
    assert page.locator(".course-interview-lessons").input_value() == "03"
    assert page.locator(".course-interview-size").input_value() == "20"
    assert sorted(_shown(page)) == sorted(lesson03)
    assert "下一轮 20 题" in page.locator(".course-interview-next").first.inner_text()
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390, "the page scrolls sideways on a phone"
    page.locator(".course-interview-controls").scroll_into_view_if_needed()
    page.wait_for_timeout(500)                               # the theme's sidebar slides away
    page.screenshot(path=str(screenshots / "site_mock_interview_phone_zh.png"))


def test_the_mock_interview_sums_up_a_round_and_asks_the_wrong_items_first_after_a_reload(site, visit, screenshots):
    from .quiz import answer_one_right_one_wrong, answers
    page = visit("interview.html", offline=True).page
    quiz = page.locator(".course-quiz[data-ready]").first
    items = _items(page)
    assert {item["lesson"] for item in items} >= {"01", "25"}, "the mock interview lacks lessons"
    page.select_option(".course-interview-size", "20")
    page.select_option(".course-interview-lessons", "01")
    mine = [item for item in items if item["lesson"] == "01"]
    assert sorted(_shown(page)) == sorted(item["id"] for item in mine) and len(mine) <= 20
    # a non-answer is asked again, neither judged nor recorded
    right, wrong = answers(mine)
    numeric = quiz.locator(f"[data-item='{right['item']['id']}']")
    numeric.locator("input.course-quiz-answer").fill("no idea")
    numeric.locator("button").first.click()
    assert numeric.locator(".course-interview-again").is_visible()
    assert numeric.locator(".course-quiz-verdict").get_attribute("data-correct") is None
    assert page.evaluate("() => localStorage.getItem('course-interview-v1')") is None
    answer_one_right_one_wrong(quiz, mine)
    assert "1 of 2" in quiz.locator(".course-quiz-score").inner_text()
    assert not numeric.locator(".course-interview-again").count()
    summary = quiz.locator(".course-interview-summary")
    assert summary.is_hidden(), "a summary before the round is over"
    rights, wrongs = {right["item"]["id"]}, {wrong["item"]["id"]}
    for item in mine:                                       # the rest of the round: explain items missed,
        if item["id"] in rights | wrongs:                   # the others right
            continue
        box = quiz.locator(f"[data-item='{item['id']}']")
        if item["kind"] == "numeric":
            box.locator("input.course-quiz-answer").fill(f"{sum(item['accepted']) / 2:.6g}")
            box.locator("input.course-quiz-answer").press("Enter")
            rights.add(item["id"])
        elif item["kind"] == "choice":
            box.locator("input[type=radio]").nth(item["answer"]).check()
            box.locator("button").first.click()
            rights.add(item["id"])
        else:
            box.locator("button").first.click()
            box.locator("button", has_text="I missed something").click()
            wrongs.add(item["id"])
    assert summary.is_visible()
    text = summary.inner_text()
    assert f"Round 1 done: {len(rights)} right, {len(wrongs)} wrong" in text and "To reread" in text, text
    assert summary.locator("a").first.get_attribute("href") == "01_scale_sqrt_dk.html"
    summary.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "site_mock_interview.png"), full_page=False)
    page.reload(wait_until="load")
    order = _shown(page)
    # the ones answered wrong (box 1, due) come first, the right ones (box 2, due tomorrow) after
    assert set(order) == rights | wrongs and set(order[:len(wrongs)]) == wrongs, order
    stored = page.evaluate("() => JSON.parse(localStorage.getItem('course-interview-v1'))")
    assert stored[right["item"]["id"]]["box"] == 2 and stored[wrong["item"]["id"]]["box"] == 1
    page.locator(".course-interview-next").first.click()
    assert quiz.get_attribute("data-round") == "2"


@pytest.mark.parametrize("name", ["cheatsheet.html", "cheatsheet-zh.html"])
def test_the_cheat_sheet_prints_each_part_in_at_most_two_pages(site, visit, name):
    page = visit(name).page
    page.emulate_media(media="print")
    page.set_viewport_size({"width": 794, "height": 1123})   # A4 at 96 dpi
    heights = page.evaluate("() => [...document.querySelectorAll('section[id^=\"part-\"]')].map(e => e.getBoundingClientRect().height)")
    assert len(heights) == 4, heights
    # and the rapid-fire list after the parts, on pages of its own
    heights.append(page.evaluate("() => document.querySelector('section#rapid-fire').getBoundingClientRect().height"))
    # A4 less the 11 mm margins: 275 mm = 1039 px a page
    assert max(heights) <= 2 * 1039, f"a part of the cheat sheet needs more than two printed pages: {heights}"
    pdf = page.pdf(format="A4", print_background=False)
    assert pdf[:4] == b"%PDF" and pdf.count(b"/Type /Page") - pdf.count(b"/Type /Pages") <= 2 * len(heights)
