"""Check yourself: a lesson's interview questions, checked against the course's own measurements.

Why one module: one implementation of the items and of their checking, shared by the lesson's Check yourself
cell, the website and the terminal: parsing a card, the accepted ranges, the check and the quiz's HTML change
together when an item kind is added, and every lesson imports `check_yourself` from here.

The items live with their lesson, in the notebook's metadata (`metadata.course.interview`, see
CONTRIBUTING's "Check yourself"), and the lesson's last cell shows them as a small quiz
(`check_yourself(NN)`): in JupyterLab, on the website, and in the terminal (`course interview`),
one implementation of the items and of their checking. An item is one of

- **numeric**: bound to one of the lesson's claims by its statement (`"claim"`). The accepted
  answers are that claim's range over the sweep (`docs/sweep/claims.csv`) multiplied by `scale`
  (100 when the question asks for a percentage of a fraction) and widened by `tolerance`
  (relative to the larger end, default 0.1): the answer stays true when the lesson changes and
  the sweep re-runs. A claim stated in log10 (a ratio whose order of magnitude is the claim) is
  asked for as the ratio itself with `"log10": true`: the range is 10 to the claim's ends;
- **numeric, derived**: a number the learner derives from the numbers the question gives (BERT-base's
  parameter count from L, H, V, ...): `"value"` instead of `"claim"` (the answer in the question's
  unit), `tolerance` relative to it (default 0.05), and `"derivation"` {"en": ..., "zh": ...}, the
  worked arithmetic shown after the answer. A numeric item has exactly one of `claim` and `value`;
- **choice**: options in both languages, `answer` the index of the right one, `folklore` the
  index of the usual answer the lesson corrects (one of the wrong options), when there is one;
- **explain**: free text, then the lesson's short answer beside it; the learner judges whether
  theirs said the same.

Every item has `question`, `why` (one line shown after the answer) and `cell` (the heading of the
lesson cell to reread); question, why and options are {"en": ..., "zh": ...}.

The quiz in a notebook or on the site is HTML with a small script (no server, no network): the
accepted ranges are computed here and written into the page, the script only compares, and it
keeps each item's Leitner box in the browser's `localStorage`. It is not an ipywidgets widget:
installing ipywidgets would turn every `tqdm.auto` progress bar of transformers and the hub into
a widget in every lesson, and the site could not reuse it.
"""
from __future__ import annotations

import html
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import ROOT
from .validation import require_choice, require_int

KINDS = ("numeric", "choice", "explain")
LANGS = ("en", "zh")
#: Days until an item in box k (1-5) is due again.
BOX_DAYS = {1: 0, 2: 1, 3: 3, 4: 7, 5: 16}
CHECK_YOURSELF = "## Check yourself"
CLAIMS_CSV = ROOT / "docs" / "sweep" / "claims.csv"


class InterviewError(ValueError):
    """A lesson's interview metadata is malformed (raised with the lesson and the item)."""


@dataclass
class Item:
    lesson: int
    id: str
    kind: str
    question: dict
    why: dict
    cell: str
    claim: str | None = None
    tolerance: float = 0.1
    scale: float = 1.0
    unit: str = ""
    log10: bool = False
    options: list = field(default_factory=list)
    answer: int | None = None
    folklore: int | None = None
    value: float | None = None          # a derived numeric item's answer (instead of `claim`)
    derivation: dict | None = None      # its worked arithmetic, {"en": ..., "zh": ...}

    def text(self, key: str, lang: str) -> str:
        value = getattr(self, key)
        return value.get(lang) or value.get("en", "")


@dataclass
class Card:
    """What a lesson says for interview practice: the cheat-sheet fields and the items."""
    lesson: int
    say_this: dict
    formula: str
    numbers: list          # [{"claim": statement, "en": label, "zh": label, "scale": 1, "unit": ""}]
    folklore: dict
    measured: dict
    items: list[Item]
    #: where the card's facts that are not measurements come from: [{"ref": citation as printed,
    #: "url": link (optional), "for": {"en": what it supports, "zh": ...}}]
    sources: list = field(default_factory=list)


def _bilingual(where: str, name: str, value) -> dict:
    if not isinstance(value, dict) or not all(isinstance(value.get(k), str) and value[k].strip() for k in LANGS):
        raise InterviewError(f"{where}: {name}: expected {{'en': text, 'zh': text}}, both non-empty, got {value!r}")
    return value


def parse_card(lesson: int, meta: dict) -> Card:
    """The card of lesson number `lesson` from its notebook metadata's `course.interview` (validated)."""
    where = f"lesson {lesson:02d}"
    data = meta.get("course", {}).get("interview")
    if not isinstance(data, dict):
        raise InterviewError(f"{where}: no metadata.course.interview")
    items = []
    for raw in data.get("items", []):
        name = f"{where} item {raw.get('id', '?')}"
        kind = raw.get("kind")
        if kind not in KINDS:
            raise InterviewError(f"{name}: kind: expected one of {KINDS}, got {kind!r}")
        derived = kind == "numeric" and "value" in raw
        item = Item(lesson=lesson, id=str(raw.get("id", "")), kind=kind,
                    question=_bilingual(name, "question", raw.get("question")),
                    why=_bilingual(name, "why", raw.get("why")), cell=str(raw.get("cell", "")),
                    claim=raw.get("claim"), tolerance=float(raw.get("tolerance", 0.05 if derived else 0.1)),
                    scale=float(raw.get("scale", 1.0)), unit=str(raw.get("unit", "")),
                    log10=bool(raw.get("log10", False)),
                    options=[_bilingual(name, f"options[{i}]", o) for i, o in enumerate(raw.get("options", []))],
                    answer=raw.get("answer"), folklore=raw.get("folklore"))
        if not item.id.startswith(f"{lesson:02d}-"):
            raise InterviewError(f"{name}: id: expected to start with '{lesson:02d}-'")
        if kind == "numeric":
            _numeric_source(name, raw, item)
        elif "value" in raw or "derivation" in raw:
            raise InterviewError(f"{name}: value/derivation: only a numeric item has them, not a {kind} item")
        if kind == "choice":
            if len(item.options) < 2 or not isinstance(item.answer, int) or not 0 <= item.answer < len(item.options):
                raise InterviewError(f"{name}: a choice item needs >= 2 options and answer in "
                                     f"[0, {len(item.options)}), got {item.answer!r}")
            if item.folklore is not None and (item.folklore == item.answer
                                              or not 0 <= item.folklore < len(item.options)):
                raise InterviewError(f"{name}: folklore must be a wrong option's index, got {item.folklore!r}")
        items.append(item)
    return Card(lesson=lesson, say_this=_bilingual(where, "say_this", data.get("say_this")),
                formula=str(data.get("formula", "")), numbers=list(data.get("numbers", [])),
                folklore=_bilingual(where, "folklore", data.get("folklore")),
                measured=_bilingual(where, "measured", data.get("measured")), items=items,
                sources=_sources(where, data.get("sources", [])))


def _sources(where: str, raw) -> list[dict]:
    """Validate a card's `sources`: each {"ref": non-empty text, "url": "https://..." (optional),
    "for": {"en": ..., "zh": ...}}."""
    if not isinstance(raw, list):
        raise InterviewError(f"{where}: sources: expected a list, got {type(raw).__name__}")
    for index, entry in enumerate(raw):
        name = f"{where} sources[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("ref"), str) or not entry["ref"].strip():
            raise InterviewError(f"{name}: expected {{'ref': citation, 'url': link, 'for': {{'en', 'zh'}}}}, "
                                 f"got {entry!r}")
        if "url" in entry and not (isinstance(entry["url"], str) and entry["url"].startswith("https://")):
            raise InterviewError(f"{name}: url: expected an https:// link, got {entry['url']!r}")
        _bilingual(name, "for", entry.get("for"))
        unknown = set(entry) - {"ref", "url", "for"}
        if unknown:
            raise InterviewError(f"{name}: unknown keys {sorted(unknown)}")
    return raw


def _numeric_source(name: str, raw: dict, item: Item) -> None:
    """Validate where a numeric item's answer comes from: exactly one of `claim` (a measured
    number of the sweep) and `value` (a derived one, with its `derivation`); sets item.value and
    item.derivation."""
    has_claim, has_value = raw.get("claim") is not None, "value" in raw
    if has_claim and has_value:
        raise InterviewError(f"{name}: claim/value: a numeric item gives either 'claim' (a measured number) "
                             "or 'value' (a derived one), not both")
    if not has_value:
        if not isinstance(item.claim, str):
            raise InterviewError(f"{name}: a numeric item names the claim it is bound to ('claim') "
                                 "or gives the derived answer ('value' with its 'derivation')")
        if "derivation" in raw:
            raise InterviewError(f"{name}: derivation: only a derived item ('value') has one")
        return
    value = raw["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InterviewError(f"{name}: value: expected a finite number (the answer in the question's unit), "
                             f"got {value!r}")
    for key in ("scale", "log10"):
        if key in raw:
            raise InterviewError(f"{name}: {key}: a derived item's value is the answer as asked (no {key!r})")
    if not 0 < item.tolerance < 1:
        raise InterviewError(f"{name}: tolerance: expected a relative tolerance in (0, 1), got {item.tolerance!r}")
    item.value = float(value)
    item.derivation = _bilingual(name, "derivation", raw.get("derivation"))


def notebook_of(lesson: int) -> Path:
    """The lesson notebook `notebooks/NN_*.ipynb` (ValueError naming the lesson when absent)."""
    require_int("lesson", lesson, minimum=0)
    found = sorted((ROOT / "notebooks").glob(f"{lesson:02d}_*.ipynb"))
    if not found:
        raise ValueError(f"lesson: no notebooks/{lesson:02d}_*.ipynb")
    return found[0]


def load_card(lesson: int, notebook: Path | None = None) -> Card | None:
    """The lesson's card, or None when its notebook has no interview metadata yet."""
    meta = json.loads(Path(notebook or notebook_of(lesson)).read_text(encoding="utf-8")).get("metadata", {})
    if "interview" not in meta.get("course", {}):
        return None
    return parse_card(lesson, meta)


# --- the measured values ----------------------------------------------------------------------

def claim_ranges(path: Path | None = None) -> dict[tuple[str, str], tuple[float, float, int]]:
    """{(lesson "NN", statement): (lowest, highest, runs)} from the committed sweep data."""
    import csv
    path = CLAIMS_CSV if path is None else Path(path)
    if not path.exists():
        return {}
    with open(path, encoding="utf-8", newline="") as handle:
        return {(row["lesson"].zfill(2), row["statement"]): (float(row["min"]), float(row["max"]), int(row["runs"]))
                for row in csv.DictReader(handle)}


def checkable(item: Item, ranges: dict) -> bool:
    """Whether `item` can be checked: any item but a numeric one bound to a claim missing from the
    sweep data (`ranges`); a derived item needs none."""
    return item.kind != "numeric" or item.value is not None or (f"{item.lesson:02d}", item.claim) in ranges


def measured_range(low: float, high: float, scale: float = 1.0, log10: bool = False) -> tuple[float, float]:
    """A claim's swept range as a learner reads it: 10 to the ends when the claim is stated in
    log10 (`log10`), times `scale`. The one conversion the quiz and the cheat sheet use."""
    if log10:
        low, high = 10.0 ** low, 10.0 ** high
    return low * scale, high * scale


def accepted_range(item: Item, ranges: dict) -> tuple[float, float]:
    """The numeric answers accepted for `item`: its claim's swept range, as the learner reads it
    (`measured_range`), widened by `tolerance` of the larger end (KeyError when the claim is not
    in the sweep data); for a derived item, its value times 1 ± `tolerance`."""
    if item.value is not None:
        widen = item.tolerance * abs(item.value)
        return item.value - widen, item.value + widen
    low, high, _ = ranges[(f"{item.lesson:02d}", item.claim)]
    low, high = measured_range(low, high, item.scale, item.log10)
    widen = item.tolerance * max(abs(low), abs(high))
    return low - widen, high + widen


def with_unit(shown: str, unit: str) -> str:
    """'3.07 nats', '42 heads', but '12%', '2.4×': a word is spaced from its number, a symbol is not."""
    return shown + (f" {unit}" if unit[:1].isalpha() else unit)


def _derived(item: Item) -> str:
    """A derived item's value as the learner reads it: '≈ 109.5 M' (4 significant digits), '12%'."""
    x = item.value
    shown = f"{x:.4g}" if abs(x) < 1000 else f"{x:,.0f}"
    return ("" if float(shown.replace(",", "")) == x else "≈ ") + with_unit(shown, item.unit)


def _measured(item: Item, ranges: dict) -> tuple[str, int]:
    """The claim's swept range as the learner reads it, formatted with its unit, and the run count."""
    low, high, runs = ranges[(f"{item.lesson:02d}", item.claim)]
    low, high = measured_range(low, high, item.scale, item.log10)
    shown = _fmt(low) if _fmt(low) == _fmt(high) else f"{_fmt(low)}–{_fmt(high)}"   # "42 heads", not "42–42heads"
    return with_unit(shown, item.unit), runs


def parse_number(text: str, unit: str = "") -> float | None:
    """The number in a typed answer ('0.45', '45%', 'about 3x', '1,024', '1/16'); None if there is
    none. A fraction is divided out; a percentage answers an item asked as a fraction (`unit` not
    "%") divided by 100, so '6.25%' and '1/16' and '0.0625' are one answer."""
    number = r"-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?|-?\.\d+"
    match = re.search(rf"({number})(?:\s*/\s*({number}))?\s*(%)?", text.replace("−", "-"), re.I)
    if not match:
        return None
    try:
        value = float(match.group(1).replace(",", ""))
        if match.group(2) is not None:
            denominator = float(match.group(2).replace(",", ""))
            if denominator == 0:
                return None
            value /= denominator
    except ValueError:
        return None
    if match.group(3) and unit.strip() != "%":
        value /= 100
    return value


def _stop(text: str) -> str:
    """`text` ending with one full stop (an option or a reason that already ends a sentence keeps its own)."""
    text = text.strip()
    return text if text[-1:] in ".!?。！？)" else text + "."


def _fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


@dataclass
class Verdict:
    correct: bool | None     # None: an explain item the learner has not judged
    message: str


#: The words of a verdict in each language (the page's script has the same, `quiz.js`).
WORDS = {
    "en": {"right": "right", "wrong": "wrong", "measured": "measured", "derived": "derived",
           "over": "over {runs} runs", "accepted": "accepted", "no_number": "no number in {answer!r}", "letter": "answer with a letter",
           "the_right_one": "the right one", "folklore": "wrong — that is the usual answer the lesson corrects",
           "reread": "reread: lesson {lesson}, “{cell}”", "review": "to review"},
    "zh": {"right": "正确", "wrong": "错误", "measured": "实测", "derived": "推导值",
           "over": "（{runs} 次运行）", "accepted": "可接受", "no_number": "回答 {answer!r} 中没有数字", "letter": "请用字母作答",
           "the_right_one": "正确选项", "folklore": "错误——这正是本课纠正的常见说法",
           "reread": "重读：第 {lesson} 课，“{cell}”", "review": "需复习"},
}


def choice_index(answer: str, n_options: int) -> int | None:
    """The option a typed answer names: a letter ('b', 'B)') or a number ('2'); None otherwise."""
    text = answer.strip().lower().rstrip(").")
    if len(text) == 1 and text in "abcdefgh"[:n_options]:
        return "abcdefgh".index(text)
    return int(text) - 1 if text.isdigit() and 1 <= int(text) <= n_options else None


def check(item: Item, answer: str, ranges: dict, lang: str = "en", self_judged: bool | None = None,
          order: list[int] | None = None) -> Verdict:
    """Whether `answer` is right, and what to show: the measured value or the right option, and why.
    `order`: the options as shown (order[k] is the item's option shown as the k-th letter)."""
    why = item.text("why", lang)
    w = WORDS.get(lang, WORDS["en"])
    if item.kind == "numeric":
        low, high = accepted_range(item, ranges)
        got = parse_number(answer, item.unit)
        if item.value is not None:    # derived: the value, then how it is derived
            measured = f"{w['derived']} {_derived(item)}"
            why = f"{_stop(item.text('derivation', lang))} {why}"
        else:
            shown, runs = _measured(item, ranges)
            measured = f"{w['measured']} {shown} {w['over'].format(runs=runs)}"
        if got is None:
            return Verdict(False, f"{w['no_number'].format(answer=answer)}; {measured}. {_stop(why)}")
        ok = low <= got <= high
        return Verdict(ok, f"{w['right'] if ok else w['wrong']}: {measured} "
                           f"({w['accepted']} {_fmt(low)}–{_fmt(high)}). {_stop(why)}")
    if item.kind == "choice":
        letters = "abcdefgh"
        order = list(range(len(item.options))) if order is None else list(order)
        shown_at = order.index(item.answer)
        option = item.options[item.answer]
        right = f"{letters[shown_at]}) {option.get(lang) or option['en']}"
        index = choice_index(answer, len(item.options))
        if index is None:
            return Verdict(False, f"{w['letter']}; {w['the_right_one']}: {_stop(right)} {_stop(why)}")
        picked = order[index]
        ok = picked == item.answer
        lead = w["right"] if ok else (w["folklore"] if picked == item.folklore else w["wrong"])
        return Verdict(ok, f"{lead}: {_stop(right)} {_stop(why)}")
    return Verdict(self_judged, why)


_LATEX = [(re.compile(r"\\(?:text|mathrm|operatorname|mathbf|mathit)\{([^{}]*)\}"), r"\1"),
          (re.compile(r"\\frac\{([^{}]*)\}\{([^{}]*)\}"), r"(\1)/(\2)"),
          (re.compile(r"\\sqrt\{([^{}]*)\}"), r"√\1"), (re.compile(r"\\sqrt\s*"), "√"),
          (re.compile(r"([_^])\{([^{}]*)\}"), r"\1\2")]
_SYMBOLS = {r"\cdot": "·", r"\times": "×", r"\approx": "≈", r"\le": "≤", r"\ge": "≥", r"\to": "→",
            r"\ln": "ln", r"\log": "log", r"\exp": "exp", r"\sum": "Σ", r"\odot": "⊙", r"\top": "ᵀ",
            r"\infty": "∞", r"\alpha": "α", r"\sigma": "σ", r"\mu": "μ", r"\epsilon": "ε", r"\in": "∈",
            r"\ne": "≠", r"\,": " ", r"\;": " ", r"\!": "", r"\left": "", r"\right": ""}


def plain_text(text: str) -> str:
    """`text` for a terminal: inline LaTeX ($d_\\text{model}$, $\\sqrt{d_k}$) as plain characters."""
    def convert(match):
        body = match.group(1)
        for _ in range(4):   # innermost first: \frac{1}{\sqrt{d_k}}
            for pattern, repl in _LATEX:
                body = pattern.sub(repl, body)
        for name in sorted(_SYMBOLS, key=len, reverse=True):
            body = body.replace(name, _SYMBOLS[name])
        return body.replace("{", "").replace("}", "")
    return re.sub(r"\$\$?([^$]+)\$?\$", convert, text)




# --- the quiz as a page: the same items in JupyterLab and on the website ------------------------

SHORT_ANSWER_HEADINGS = {"en": "## The short answer", "zh": "## 中文简答"}
QUIZ_SCRIPT = Path(__file__).with_name("quiz.js")
QUIZ_STYLE = (".course-quiz{border:1px solid #d0d7de;border-radius:6px;padding:.5em 1em;margin:.5em 0}"
              ".course-quiz-item{margin:.9em 0}.course-quiz-question{font-weight:600;margin:.2em 0}"
              ".course-quiz button{margin:.2em .4em .2em 0}.course-quiz-verdict{margin-top:.3em}"
              ".course-quiz-verdict.right{color:#1a7f37}.course-quiz-verdict.wrong{color:#cf222e}"
              ".course-quiz-model{border-left:3px solid #d0d7de;padding-left:.6em;color:#57606a}"
              ".course-quiz-score{color:#57606a;font-size:.9em}"
              ".course-quiz-lesson{color:#57606a;font-size:.8em;text-transform:uppercase}")


def short_answers(notebook: Path) -> dict:
    """{"en": ..., "zh": ...}: the lesson's short answers, the model answer of its explain items.
    Read from the notebook's JSON: course_lib does not depend on nbformat's reader."""
    return short_answers_in(json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"])


# A number's source, written after it in the prose (`<!--n: ledger ...-->`; course_tools.answer_numbers)
NUMBER_MARKER = re.compile(r"<!--\s*n:.*?-->", re.S)


def short_answers_in(cells, markers: bool = False) -> dict:
    """The short answers of a notebook's cells (the JSON's dicts or nbformat's cells): the text
    under each heading of SHORT_ANSWER_HEADINGS, the heading removed, without the numbers' source
    markers unless `markers`. The one reader of these cells: the cheat sheet, `course interview`
    and the number check use it too."""
    found = {}
    for cell in cells:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for lang, heading in SHORT_ANSWER_HEADINGS.items():
            if cell["cell_type"] == "markdown" and source.lstrip().startswith(heading):
                text = source.lstrip()[len(heading):].strip()
                found[lang] = text if markers else NUMBER_MARKER.sub("", text)
    return found


def payload(card: Card, ranges: dict, model_answers: dict) -> list[dict]:
    """The card's items as the page's script reads them: texts in both languages, the accepted
    range of each numeric item (computed here, so the script only compares), the model answer;
    a derived item's value as `measured` ('≈ 109.5 M (derived)'), its `derivation`, and `why`
    preceded by the derivation (what the page shows after the answer)."""
    items = []
    for item in card.items:
        if not checkable(item, ranges):
            continue   # its claim is not in the sweep data (yet): tests/test_interview.py says so
        entry = {"id": item.id, "lesson": f"{item.lesson:02d}", "kind": item.kind, "question": item.question,
                 "why": item.why, "cell": item.cell}
        if item.kind == "numeric" and item.value is not None:
            # the script shows `why` after the verdict: the derivation goes first (quiz.js unchanged)
            entry.update(accepted=list(accepted_range(item, ranges)), unit=item.unit,
                         measured=f"{_derived(item)} (derived)", derivation=item.derivation,
                         why={lang: f"{_stop(item.derivation[lang])} {item.why[lang]}" for lang in LANGS})
        elif item.kind == "numeric":
            low, high = accepted_range(item, ranges)
            shown, runs = _measured(item, ranges)
            entry.update(accepted=[low, high], unit=item.unit, measured=f"{shown} ({runs} runs)")
        elif item.kind == "choice":
            entry.update(options=item.options, answer=item.answer, folklore=item.folklore)
        else:
            entry.update(model=model_answers)
        items.append(entry)
    return items


def quiz_html(items: list[dict], mode: str = "lesson", lang: str = "en") -> str:
    """A self-contained quiz: the items as JSON and the script that asks them (see quiz.js).
    `mode` "lesson" asks them in order; "interview" asks the weakest first (Leitner boxes kept in
    the browser's localStorage) and shows a score."""
    require_choice("mode", mode, ("lesson", "interview"))
    require_choice("lang", lang, LANGS)
    data = json.dumps(items, ensure_ascii=False).replace("</", "<\\/")
    return (f"<style>{QUIZ_STYLE}</style>"
            f'<div class="course-quiz" data-mode="{html.escape(mode)}" data-lang="{html.escape(lang)}">'
            f'<script type="application/json" class="course-quiz-items">{data}</script>'
            f'<noscript>This quiz needs JavaScript; `course interview` asks the same questions in a terminal.'
            f'</noscript></div><script>{QUIZ_SCRIPT.read_text(encoding="utf-8")}</script>')


class CheckYourself:
    """What `check_yourself` returns: the quiz in JupyterLab (HTML), its questions as text elsewhere."""

    def __init__(self, card: Card, items: list[dict]):
        self.card, self.items = card, items

    def __repr__(self) -> str:
        lines = [f"Check yourself: {len(self.items)} questions (answer them in JupyterLab, on the site, "
                 f"or with `course interview --lesson {self.card.lesson:02d}`)"]
        for number, item in enumerate(self.card.items, 1):
            lines.append(f"{number}. [{item.kind}] {item.text('question', 'en')}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return quiz_html(self.items)


def check_yourself(lesson: int) -> CheckYourself:
    """The lesson's interview questions as a quiz (the last cell of every lesson)."""
    notebook = notebook_of(lesson)
    card = load_card(lesson, notebook)
    if card is None:
        raise ValueError(f"lesson: notebooks/{notebook.name} has no metadata.course.interview")
    return CheckYourself(card, payload(card, claim_ranges(), short_answers(notebook)))
