"""JupyterLab from the course environment, driven as a learner would in headless Chromium.

The server starts the way `make lab` starts it (`course_tools.lab`: the course's settings, kernel and
environment), on a free local port with a token, in a temporary folder holding a copy of lesson 01
with its outputs cleared (autosave must not touch the stored notebook, and every output must
come from this run). The test opens the notebook, runs every cell from
the Run menu, and checks on the page that every cell ran, nothing raised, the evidence cell ran
(and ends with its ✓ list of claims) and the figure is shown, and answers the Check yourself quiz
of the last cell (one item right, one wrong); then it saves from the page and checks the saved file too. No first-run pop-up (the Jupyter news question) may appear.

A second test opens the stored lesson 01 (as committed) next to the learner's copy of its exercise
(`course start 01`): two tabs with different titles, neither marked modified once its kernel is up.
A third test opens a Terminal from the File menu and types `course check 01`: the command is found
(the server puts the course environment's bin/ first on PATH) and prints the self-check's verdict.
Screenshots: build/screenshots/lab_*.png.
"""
from __future__ import annotations

import json
import re
import shutil
import time

import nbformat
import pytest

from course_tools import lab, workspace

from .conftest import ROOT

LESSON = "01_scale_sqrt_dk.ipynb"
NEWS = re.compile(r"Jupyter news|official Jupyter news", re.I)


@pytest.fixture
def lab_server(tmp_path):
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    # The stored notebook without its outputs: every prompt, output and figure on the page must then
    # come from this run.
    notebook = nbformat.read(ROOT / "notebooks" / LESSON, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(notebook, root / "notebooks" / LESSON)
    # A fresh learner: empty user settings and workspaces (nothing from this machine's home), except
    # that every cell stays in the page (JupyterLab 4 otherwise renders only the visible ones).
    settings = tmp_path / "user-settings"
    tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text(json.dumps({"windowingMode": "none"}), encoding="utf-8")
    env = {"JUPYTERLAB_SETTINGS_DIR": str(settings),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "OMP_NUM_THREADS": "1",
           "TQDM_MININTERVAL": "3600"}
    lab.configure()  # what `make lab` does first (idempotent)
    # `make lab`'s server, with its folder and start page replaced by ours
    try:
        with lab.serve(root, tmp_path / "lab.log", env=env,
                       extra=[f"--ServerApp.root_dir={root}", "--LabApp.default_url=/lab"]) as (base, token):
            yield {"base": base, "token": token, "root": root, "log": tmp_path / "lab.log"}
    except RuntimeError as error:
        pytest.fail(str(error))


def code_prompts(page) -> list[str]:
    return page.evaluate("""() => [...document.querySelectorAll(
        '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')].map(p => p.textContent.trim())""")


def test_lesson_01_runs_all_cells_in_jupyterlab(browser, lab_server, screenshots):
    stored = nbformat.read(ROOT / "notebooks" / LESSON, as_version=4)
    n_code = sum(cell.cell_type == "code" for cell in stored.cells)
    evidence = next(i for i, cell in enumerate(stored.cells) if "evidence" in cell.metadata.get("tags", []))

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page_errors: list[str] = []
    page.on("pageerror", lambda e: page_errors.append(str(e)))
    try:
        url = f"{lab_server['base']}/lab/tree/notebooks/{LESSON}?token={lab_server['token']}"
        page.goto(url, wait_until="domcontentloaded")
        panel = page.locator(".jp-NotebookPanel").first
        panel.wait_for(state="visible", timeout=120_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=120_000)
        page.wait_for_timeout(2000)  # the news question, when enabled, shows up right after start
        page.screenshot(path=str(screenshots / "lab_01_opened.png"))
        assert page.get_by_text(NEWS).count() == 0, "JupyterLab asks about Jupyter news on first start"
        assert page.locator(".jp-Dialog").count() == 0, "a dialog is open on first start"

        # Run > Run All Cells, through the menu.
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        page.wait_for_function(
            """(n) => {
                const prompts = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) '
                                                            + '.jp-CodeCell .jp-InputPrompt')];
                return prompts.length === n && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
            }""", arg=n_code, timeout=300_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)

        prompts = code_prompts(page)
        numbers = [int(re.search(r"\d+", p).group()) for p in prompts]
        assert numbers == sorted(numbers) and len(set(numbers)) == n_code, f"cells ran out of order: {prompts}"
        cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")
        assert cells.count() == len(stored.cells)
        tracebacks = page.locator(".jp-OutputArea-output", has_text="Traceback (most recent call last)")
        assert tracebacks.count() == 0, "a cell raised: " + tracebacks.first.inner_text()[:2000]
        evidence_cell = cells.nth(evidence)
        evidence_prompt = re.search(r"\[(\d+)\]", evidence_cell.locator(".jp-InputPrompt").inner_text())
        assert evidence_prompt, "the evidence cell did not run"
        assert evidence_cell.locator("[data-mime-type='application/vnd.jupyter.stderr']").count() == 0
        # The evidence cell ends with the list of its claims, not with a bare number.
        evidence_text = evidence_cell.locator(".jp-OutputArea").inner_text()
        assert re.search(r"\d+ of \d+ claims held", evidence_text) and "✓" in evidence_text, evidence_text[:500]
        assert "✗" not in evidence_text
        assert not re.fullmatch(r"\s*(Out\[\d+\]:)?\s*[-\d.e]+\s*", evidence_text), evidence_text

        figures = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-RenderedImage img")
        assert figures.count() >= 1, "no figure appeared"
        figures.first.scroll_into_view_if_needed()
        assert figures.first.evaluate("img => img.complete && img.naturalWidth > 0")
        page.screenshot(path=str(screenshots / "lab_01_figure.png"))
        evidence_cell.scroll_into_view_if_needed()
        page.screenshot(path=str(screenshots / "lab_01_evidence.png"))

        # The last cell: Check yourself, answered in the page (one item right, one wrong).
        from .quiz import answer_one_right_one_wrong
        quiz = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .course-quiz[data-ready]").first
        quiz.wait_for(state="attached", timeout=30_000)
        quiz.scroll_into_view_if_needed()
        answer_one_right_one_wrong(quiz, json.loads(quiz.locator(".course-quiz-items").text_content()))
        page.screenshot(path=str(screenshots / "lab_01_check_yourself.png"))

        # Save from the page and check the file the learner would have.
        page.keyboard.press("Control+s")
        saved_path = lab_server["root"] / "notebooks" / LESSON
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the save is asynchronous
            if nbformat.read(saved_path, as_version=4).cells[evidence].get("execution_count") \
                    == int(evidence_prompt.group(1)):
                break
            time.sleep(0.5)
        saved = nbformat.read(saved_path, as_version=4)
        evidence_saved = saved.cells[evidence]
        assert evidence_saved.execution_count == int(evidence_prompt.group(1)), "not saved"
        assert not [o for o in evidence_saved.outputs if o.output_type == "error"]
        assert not [o for c in saved.cells if c.cell_type == "code" for o in c.outputs
                    if o.output_type == "error"]
        assert any("image/png" in o.get("data", {}) for c in saved.cells if c.cell_type == "code"
                   for o in c.outputs), "the saved notebook has no figure"

        assert page.get_by_text(NEWS).count() == 0, "the Jupyter news question appeared"
        assert not page_errors, f"JavaScript errors in JupyterLab: {page_errors}"
    finally:
        context.close()


# ------------------------------------------------------------------ opening lesson and exercise side by side

@pytest.fixture
def desk_server(tmp_path, monkeypatch):
    """JupyterLab on a learner's folder: the stored lesson 01 as it is in the repository (a byte copy)
    and the learner's copy of its exercise, made by `course start 01`."""
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    shutil.copyfile(ROOT / "notebooks" / LESSON, root / "notebooks" / LESSON)
    monkeypatch.setenv(workspace.WORK_ENV, str(root / "work"))
    copy, created = workspace.start("01")
    assert created
    env = {"JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "user-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "OMP_NUM_THREADS": "1"}
    lab.configure()
    try:
        with lab.serve(root, tmp_path / "lab.log", env=env,
                       extra=[f"--ServerApp.root_dir={root}", "--LabApp.default_url=/lab",
                              "--LabApp.expose_app_in_browser=True"]) as (base, token):
            yield {"base": base, "token": token, "root": root,
                   "lesson": f"notebooks/{LESSON}", "exercise": copy.relative_to(root).as_posix()}
    except RuntimeError as error:
        pytest.fail(str(error))


def test_lesson_and_exercise_open_as_two_tabs_with_their_own_titles_and_unmodified(browser, desk_server,
                                                                                   screenshots):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{desk_server['base']}/lab/tree/{desk_server['lesson']}?token={desk_server['token']}",
                  wait_until="domcontentloaded")
        page.locator(".jp-NotebookPanel").first.wait_for(state="visible", timeout=120_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=120_000)
        page.wait_for_function("() => !!window.jupyterapp", timeout=30_000)
        page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path})",
                      desk_server["exercise"])
        page.wait_for_function("() => document.querySelectorAll('.jp-NotebookPanel').length === 2", timeout=60_000)
        # Both kernels are up: JupyterLab has written its kernelspec and language_info by now.
        page.wait_for_function("""() => [...window.jupyterapp.shell.widgets('main')].every(w =>
            !w.sessionContext || (w.sessionContext.session && w.sessionContext.session.kernel
                                  && w.sessionContext.session.kernel.status === 'idle'))""", timeout=120_000)
        page.wait_for_timeout(3000)
        page.screenshot(path=str(screenshots / "lab_lesson_and_exercise_tabs.png"))

        titles = page.evaluate("""() => [...document.querySelectorAll(
            '.lm-DockPanel-tabBar .lm-TabBar-tab .lm-TabBar-tabLabel')].map(t => t.textContent.trim())""")
        assert len(titles) == 2, titles
        assert len(set(titles)) == 2, f"two tabs with the same title: {titles}"
        assert LESSON in titles and "01_scale_sqrt_dk_exercise.ipynb" in titles, titles

        dirty = page.evaluate("""() => [...document.querySelectorAll('.lm-DockPanel-tabBar .lm-TabBar-tab')]
            .filter(t => t.classList.contains('jp-mod-dirty')).map(t => t.textContent.trim())""")
        models = page.evaluate("""() => [...window.jupyterapp.shell.widgets('main')]
            .filter(w => w.context).map(w => [w.context.path, w.context.model.dirty])""")
        assert not dirty and not any(d for _, d in models), \
            f"marked modified right after opening: {dirty} {models} (lessons are stored with the metadata " \
            "JupyterLab writes by `course store`; `course start` writes it into the copy)"
    finally:
        context.close()


# ------------------------------------------------------------------ `course check` in JupyterLab's own terminal

@pytest.fixture
def terminal_server(tmp_path):
    """JupyterLab as `make lab` starts it (its environment: the course's bin/ first on PATH, a
    non-login shell in its terminals), on an empty learner folder, with the app exposed to the page
    so that the test can read the terminal's buffer whatever renderer xterm.js picked."""
    root = tmp_path / "course"
    root.mkdir()
    env = {"JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "user-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "OMP_NUM_THREADS": "1"}
    lab.configure()
    try:
        with lab.serve(root, tmp_path / "lab.log", env=env,
                       extra=[f"--ServerApp.root_dir={root}", "--LabApp.default_url=/lab",
                              "--LabApp.expose_app_in_browser=True"]) as (base, token):
            yield {"base": base, "token": token, "root": root, "log": tmp_path / "lab.log"}
    except RuntimeError as error:
        pytest.fail(str(error))


#: The text of the current terminal: xterm.js's own buffer (the same whether it draws with the DOM,
#: a canvas or WebGL), else the DOM renderer's rows.
TERMINAL_TEXT = """() => {
    const widget = window.jupyterapp.shell.currentWidget;
    const term = widget && widget.content && widget.content._term;
    if (term && term.buffer) {
        const buffer = term.buffer.active, lines = [];
        for (let i = 0; i < buffer.length; i++) {
            const line = buffer.getLine(i);
            lines.push(line ? line.translateToString(true) : '');
        }
        return lines.join('\\n').replace(/\\s+$/, '');
    }
    const rows = document.querySelector('.jp-Terminal:not(.lm-mod-hidden) .xterm-rows');
    return rows ? rows.innerText : '';
}"""


#: What a shell says for a command it cannot find (bash: "course: command not found"; dash: "course: not found").
NOT_FOUND = re.compile(r"course: (command )?not found|command not found", re.I)


def test_course_check_runs_in_jupyterlab_terminal(browser, terminal_server, screenshots):
    """File > New > Terminal, then `course check 01` as a learner types it: the command is found
    (the server put the course's bin/ first on PATH) and prints the self-check's verdict."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{terminal_server['base']}/lab?token={terminal_server['token']}",
                  wait_until="domcontentloaded")
        page.wait_for_function("() => !!window.jupyterapp", timeout=120_000)
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^File$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^New$")).hover()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Terminal$")).click()
        page.locator(".jp-Terminal").first.wait_for(state="visible", timeout=60_000)
        # The shell's prompt is there: the terminal is connected and ready for input.
        page.wait_for_function(f"() => ({TERMINAL_TEXT})().trim().length > 0", timeout=60_000)
        page.locator(".jp-Terminal .xterm").first.click()
        page.keyboard.type("course check 01")
        page.keyboard.press("Enter")

        verdict = re.compile(r"checks passed: \d+ / \d+")
        deadline = time.monotonic() + 120
        text = ""
        while time.monotonic() < deadline:
            text = page.evaluate(TERMINAL_TEXT)
            if verdict.search(text) or NOT_FOUND.search(text):
                break
            page.wait_for_timeout(1000)
        page.screenshot(path=str(screenshots / "lab_terminal_course_check.png"))
        assert not NOT_FOUND.search(text), f"`course` is not on the terminal's PATH:\n{text[-2000:]}"
        assert "running: pytest --nbval-lax exercises/01_scale_sqrt_dk.ipynb" in text, text[-2000:]
        assert verdict.search(text), f"no verdict from `course check 01` within 120 s:\n{text[-2000:]}"
        # One PASS/FAIL line for each of lesson 01's checks.
        assert re.search(r"^\s*(PASS|FAIL)\s+01\.", text, re.M), text[-2000:]
    finally:
        context.close()
