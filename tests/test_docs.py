"""The README is one screen that keeps its promise; the details live in docs/*.md, whose links resolve.

The README says what the course is, the two commands, the learning loop and where the rest is; the
generated tables (run times, robustness, speed) live in docs/results.md, and the website splices
its set-up and workflow text out of docs/setup.md and docs/learning.md.
"""
import inspect
import re

import pytest

from course_lib import ROOT
from course_tools import bench, runner, site
from course_tools.sweep import results as sweep_results

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, ROOT / "CONTRIBUTING.md", *DOCS]
MARKERS = [(runner.README_BEGIN, runner.README_END), (sweep_results.SWEEP_BEGIN, sweep_results.SWEEP_END),
           (bench.BENCH_BEGIN, bench.BENCH_END),
           (bench.BUSY_BEGIN, bench.BUSY_END)]


def _text(path):
    return path.read_text(encoding="utf-8")


def _section(text, heading):
    match = re.search(rf"^## {re.escape(heading)}[^\n]*\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    assert match, f"no section '## {heading}'"
    return match.group(1)


def test_the_readme_fits_one_screen():
    lines = _text(README).splitlines()
    assert len(lines) <= 100, f"README.md has {len(lines)} lines: move details to docs/*.md"


def test_the_readme_keeps_its_two_command_promise():
    """Set-up is `make course` and `make test` (the font aside); both are Makefile targets doing
    what the README says, and CI runs exactly `make test`."""
    setup = _section(_text(README), "Set-up: two commands")
    block = re.search(r"```bash\n(.*?)```", setup, flags=re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines()]
    commands = [c for c in commands if c and not c.startswith("sudo apt-get")]
    assert commands == ["make course", "make test"], commands
    assert "make lab" in setup
    makefile = _text(ROOT / "Makefile")
    for target, recipe in [("course", "course run"), ("test", "-m pytest"), ("lab", "course lab")]:
        rule = re.search(rf"^{target}:[^\n]*\n((?:\t[^\n]*\n)+)", makefile, flags=re.M)
        assert rule and recipe in rule.group(1), f"make {target} should run `{recipe}`"
    assert re.search(r"^make test$", _text(ROOT / ".ci" / "run"), flags=re.M)


def test_the_readme_names_the_learning_loop_and_links_every_docs_page():
    readme = _text(README)
    for command in ("course start", "course check", "course grade", "course progress"):
        assert command in readme, command
    for page in DOCS:
        assert f"](docs/{page.name})" in readme, f"README.md does not link docs/{page.name}"
    assert "## License" in readme


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _links(text: str) -> list[str]:
    text = re.sub(r"```.*?```", "", text, flags=re.S)   # code blocks and spans hold no links
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"!?\[[^\]\n]*\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page):
    broken = []
    for link in _links(_text(page)):
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(link)
        elif anchor and target.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", _text(target), flags=re.M)
            if anchor not in {_slug(h) for h in headings}:
                broken.append(link)
    assert not broken, f"{page.name}: links to nothing: {broken}"


def test_the_generated_tables_live_in_the_results_page():
    assert runner.RESULTS == ROOT / "docs" / "results.md"
    results = _text(runner.RESULTS)
    for begin, end in MARKERS:
        assert results.count(begin) == 1 and results.count(end) == 1, begin
        assert results.index(begin) < results.index(end)
        for page in PAGES:
            if page != runner.RESULTS:
                assert begin not in _text(page), f"{page.name} holds {begin}: a second copy goes stale"
    for generator in (runner.update_readme, sweep_results.update_readme, runner.replace_readme_block):
        assert inspect.signature(generator).parameters["readme"].default == runner.RESULTS


def test_the_site_includes_resolve():
    """Every `<!-- include docs/x.md ## Heading -->` of site/ names a section that exists."""
    found = 0
    for page in sorted((ROOT / "site").glob("*.md")):
        for _optional, path, heading in re.findall(r"<!-- include(-optional)? (\S+) ## (.+?) -->", _text(page)):
            assert site.doc_section(path, heading).strip(), (page.name, path, heading)
            found += 1
    assert found >= 3
    with pytest.raises(site.SiteError, match="docs/setup.md has no section"):
        site.doc_section("docs/setup.md", "No such heading")
