"""Every lesson's short answer is also written in Chinese, with the same numbers.

Each notebook has a markdown cell starting `## The short answer` and, immediately after it, one
starting `## 中文简答`. The numbers of the two cells must be the same set (this test is what keeps
the two languages from disagreeing: change a measured number in one and the other must follow).

How numbers are read (`numbers()`):
- Text is NFKC-normalised first (full-width digits and ％, superscripts such as ⁻⁵ → -5), after
  the Chinese commas ，、 have become separators (so "64，128" is two numbers, not 64128).
- A number is digits with an optional decimal part, `1,000`-style thousands groups, an optional
  exponent (`1e-5`) and an optional `%` (`15%` and `15 %` are the same; `15%` is not `0.15`).
  Values are compared as decimals: `0.50` = `0.5`, `1,000` = `1000`, `09` = `9`.
- A minus sign counts when it is not between a word and the number ("-0.3" yes, "GPT-2" no).
- Digits glued to an ASCII name are part of the name and skipped (`fp16`, `W1`, `d_k2`, `L2`),
  as are URLs and markdown link targets. Chinese characters next to digits do not hide them
  ("3个头" has the number 3).
- Sets, not multisets: a number repeated in one language need not be repeated in the other; what
  must not happen is a number that appears in one language only.
Write numbers as digits in both languages (not 百分之十五 or "fifteen percent").
"""
from __future__ import annotations

import re
import unicodedata
from decimal import Decimal

import nbformat
import pytest

from course_tools.manifest import LESSONS

EN_HEADING = "## The short answer"
ZH_HEADING = "## 中文简答"

URL = re.compile(r"https?://\S+|\]\([^)]*\)")
NUMBER = re.compile(
    r"(?<![A-Za-z_0-9.])(?<![A-Za-z_]-)"  # not glued to a name ("fp16", "GPT-2") or another number
    r"(?:(?:(?<=[\s(\[=:<>≈~±,/+*;])|^)-)?"  # a leading minus only after a separator
    r"(?:\d{1,3}(?:,\d{3})+|\d+)"      # integer part, optionally with thousands groups
    r"(?:\.\d+)?"                      # decimal part
    r"(?:[eE][-+]?\d+)?"               # exponent
    r"(?:\s?%)?",                      # percent
    re.M)


def _clean(text: str) -> str:
    text = text.replace("，", "; ").replace("、", "; ").replace("−", "-")
    text = unicodedata.normalize("NFKC", text)
    return URL.sub(" ", text)


def numbers(text: str) -> set[str]:
    """The normalised numbers of a markdown text (see the module docstring)."""
    found = set()
    for match in NUMBER.finditer(_clean(text)):
        token = match.group(0)
        percent = token.rstrip().endswith("%")
        value = Decimal(token.replace("%", "").replace(",", "").strip()).normalize()
        text_value = format(value, "f") if value == value.to_integral_value() else str(value)
        found.add(text_value + ("%" if percent else ""))
    return found


def short_answers(path) -> tuple[str | None, str | None, str]:
    """(English short answer, the Chinese cell right after it, a note on what is missing)."""
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells]
    for i, cell in enumerate(cells):
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith(EN_HEADING):
            nxt = cells[i + 1] if i + 1 < len(cells) else None
            if nxt is not None and nxt.cell_type == "markdown" and nxt.source.lstrip().startswith(ZH_HEADING):
                return cell.source, nxt.source, ""
            elsewhere = any(c.cell_type == "markdown" and c.source.lstrip().startswith(ZH_HEADING)
                            for c in cells)
            return cell.source, None, ("a '## 中文简答' cell exists but not right after the short answer"
                                       if elsewhere else "no '## 中文简答' cell after the short answer")
    return None, None, "no '## The short answer' cell"


def test_number_reading():
    assert numbers("15% of tokens, split 80/10/10; 0.50 vs 0.5; 1,000 steps; lesson 09") == \
        {"15%", "80", "10", "0.5", "1000", "9"}
    assert numbers("掩码15％的词，按80/10/10划分；1,000步；0.5；第9课") == {"15%", "80", "10", "0.5", "1000", "9"}
    assert numbers("维度64，128") == {"64", "128"}
    assert numbers("fp16, W1, d_k, GPT-2 and L2 are names; 3个头; a loss of -0.3; 1e-5; 15 %") == \
        {"3", "-0.3", "0.00001", "15%"}
    assert numbers("see [the paper](https://arxiv.org/abs/1706.03762)") == set()
    assert numbers("差距为 −0.25，误差 10⁻⁵") == {"-0.25", "10", "5"}


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda l: f"{l.number:02d}")
def test_short_answer_in_both_languages_with_the_same_numbers(lesson):
    english, chinese, missing = short_answers(lesson.notebook)
    assert not missing, f"{lesson.notebook.name}: {missing}"
    assert re.search(r"[\u4e00-\u9fff]", chinese), f"{lesson.notebook.name}: the 中文简答 cell has no Chinese"
    en, zh = numbers(english), numbers(chinese)
    assert en == zh, (f"{lesson.notebook.name}: numbers differ between the two short answers - "
                      f"only in English: {sorted(en - zh)}, only in 中文: {sorted(zh - en)}")
