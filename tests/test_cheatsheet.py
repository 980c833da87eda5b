"""The cheat sheet and the site's staging helpers (no browser, no Jupyter Book needed)."""
from __future__ import annotations

import re

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


# --- sources (issue 33, item 6): every fact on the sheet that is not a measurement names its source -----
#
# Each card has `sources` ({"ref", "url", "for"}; `course_lib.quiz` validates them), printed under the
# lesson as one "Sources:" / "出处：" line. A card that names a paper, a model or a library must cite it:
# below, each name the cards use, the pattern that finds it in a card's text (the sheet's fields in both
# languages, and the items' explanations) and the words a `ref` that covers it contains (any one,
# case-insensitive; a paper is cited by its first author, a library by its file). Two generic rules catch
# what the list does not: an author cited in the text ("Xiong et al.", "Sun 等人", "Press & Wolf") must
# have a ref with that surname, and a file the text names (`run_squad.py`) a ref naming that file.
# Not names: the building blocks every textbook uses (softmax, LayerNorm, BatchNorm, GELU, Adam, RNN,
# LSTM, Pre-/Post-LN), and the folklore, which quotes the interview notes (the sheet's intro says so).

_EDGE = r"(?<![A-Za-z0-9_-])"      # an ASCII word edge: a Chinese character next to a name is an edge
_END = r"(?![A-Za-z0-9_])"
CITED_NAMES = {
    # models, and the papers that introduced them
    "BERT": (_EDGE + r"BERT(?![A-Za-z])", ("Devlin", "google-research/bert", "models/bert/")),
    "RoBERTa": (r"RoBERTa", ("RoBERTa",)),
    "ALBERT": (_EDGE + r"ALBERT", ("ALBERT", "models/albert/")),
    "ELECTRA": (r"ELECTRA", ("ELECTRA",)),
    "XLNet": (r"XLNet", ("XLNet", "models/xlnet/")),
    "T5": (_EDGE + r"T5" + _END, ("T5", "Raffel")),
    "GPT": (_EDGE + r"GPT(?![A-Za-z0-9_-])", ("Radford et al. 2018", "GPT,")),
    "GPT-2": (r"GPT-2", ("GPT-2",)),
    "GPT-3": (r"GPT-3", ("GPT-3",)),
    "LLaMA": (r"LLaMA", ("LLaMA",)),
    "ELMo": (r"ELMo", ("ELMo", "Peters")),
    "DistilBERT": (r"DistilBERT", ("DistilBERT", "Sanh", "distillation/")),
    "TinyBERT": (r"TinyBERT", ("TinyBERT",)),
    "PKD": (_EDGE + r"PKD" + _END + r"|Patient KD", ("PKD",)),
    "MiniLM": (r"MiniLM", ("MiniLM",)),
    "Megatron-BERT": (r"Megatron", ("Megatron",)),
    # XLNet's paper is where "XLNet builds on Transformer-XL" comes from
    "Transformer-XL": (r"Transformer-XL|" + _EDGE + r"XL" + _END, ("Transformer-XL", "XLNet")),
    "Longformer": (r"Longformer", ("Longformer",)),
    "BigBird": (r"BigBird", ("BigBird",)),
    "Sentence-BERT": (r"Sentence-BERT|SBERT", ("Sentence-BERT",)),
    "GloVe": (r"GloVe", ("GloVe", "Sentence-BERT")),     # Sentence-BERT's comparison is the one quoted
    "the Transformer (Vaswani et al.)": (_EDGE + r"(?<!vision )(?<!视觉 )(?<!视觉)Transformer(?![A-Za-z0-9_-])|Vaswani",
                                         ("Vaswani",)),
    "vision Transformers": (r"vision Transformers?|视觉 ?Transformer", ("LeViT", "levit")),
    "Elman RNN": (r"Elman", ("Elman",)),
    # methods named after the paper that introduced them
    "RAdam": (r"RAdam", ("RAdam",)),
    "RoPE": (r"RoPE", ("RoFormer", "RoPE")),
    "ALiBi": (r"ALiBi", ("ALiBi",)),
    "FlashAttention": (r"FlashAttention", ("FlashAttention",)),
    "QK-norm": (r"QK-?norm", ("QK-norm",)),
    "Annealing KD": (r"Annealing KD", ("Annealing KD",)),
    "Xavier initialisation": (r"Xavier", ("Glorot",)),
    "He initialisation": (_EDGE + r"He (?:init|初始化)", ("He init",)),
    "BPE": (_EDGE + r"BPE" + _END, ("BPE", "Vaswani", "RoBERTa", "GPT-2")),   # the papers that use it
    "byte-level BPE": (r"byte-level BPE|字节级 ?BPE", ("GPT-2", "RoBERTa")),
    "WordPiece": (r"WordPiece(?!Trainer)", ("WordPiece", "Devlin", "google-research/bert")),
    "the unigram LM (Kudo)": (r"Unigram|" + _EDGE + r"ULM" + _END + r"|subword regulari[sz]ation|子词正则化|SentencePiece",
                              ("Kudo",)),
    # benchmark results quoted from a paper
    "GLUE": (r"GLUE", ("DistilBERT", "Devlin")),
    "MNLI, QNLI": (r"[MQ]NLI", ("Devlin",)),
    "IMDb": (r"IMDb", ("Sun et al.",)),
    # libraries, cited by their files
    "Hugging Face": (r"Hugging ?Face|" + _EDGE + r"HF" + _END + r"|tokenizers'", ("transformers/", "huggingface/")),
    "transformers' BERT classes": (r"Bert[A-Z]\w+|next_sentence_label", ("models/bert/modeling_bert.py",)),
    "tokenizers' trainers": (r"WordPieceTrainer|BpeTrainer", ("tokenizers",)),
    "PyTorch": (r"PyTorch|" + _EDGE + r"nn\.[A-Z]\w*|quantize_dynamic", ("torch/",)),
    "ONNX Runtime": (r"ONNX|" + _EDGE + r"ORT" + _END, ("onnxruntime", "ONNX Runtime")),
    "Google's BERT code": (r"Google", ("google-research/bert", "Devlin")),
    "doc_stride": (r"doc_stride", ("run_squad.py",)),
    "type_vocab_size": (r"type_vocab_size", ("google-research/bert modeling.py",)),
}
#: "Xiong et al.", "Sun 等人", "Press & Wolf": a ref names the surname.
CITED_AUTHOR = re.compile(r"(?<![A-Za-z])([A-Z][a-z]+)(?= ?(?:et al\.|等)| & [A-Z])")
#: a file the text names: a ref names it.
CITED_FILE = re.compile(r"[\w-]+\.(?:py|rs)\b")
#: the packages whose files a ref may name from their root (`transformers/models/...`): they are installed.
INSTALLED = ("transformers", "torch", "onnxruntime")


def card_texts(card) -> list[str]:
    """What a card states in both languages: the sheet's fields (say this, formula, the numbers'
    labels, the correction) and each item's explanation."""
    texts = [card.formula] + [card.say_this[lang] for lang in ("en", "zh")] + [card.measured[lang] for lang in ("en", "zh")]
    texts += [entry[lang] for entry in card.numbers for lang in ("en", "zh") if entry.get(lang)]
    return texts + [item.why[lang] for item in card.items for lang in ("en", "zh")]


def unsourced_names(texts: list[str], refs: list[str]) -> list[str]:
    """The names in `texts` (CITED_NAMES, cited authors, files) that no ref in `refs` covers."""
    text, refs = "\n".join(texts), [ref.lower() for ref in refs]
    missing = [f"{name} ({found.group(0)!r})" for name, (pattern, covered_by) in CITED_NAMES.items()
               if (found := re.search(pattern, text))
               and not any(word.lower() in ref for ref in refs for word in covered_by)]
    missing += [f"{found.group(1)} (an author)" for found in CITED_AUTHOR.finditer(text)
                if not any(found.group(1).lower() in ref for ref in refs)]
    missing += [f"{found.group(0)} (a file)" for found in CITED_FILE.finditer(text)
                if not any(found.group(0).lower() in ref for ref in refs)]
    return sorted(set(missing))


def _cards():
    from course_lib.quiz import load_card
    return [(lesson, load_card(lesson.number, lesson.notebook)) for lesson in LESSONS_ON_SHEET]


def test_every_lesson_card_names_its_sources():
    assert [lesson.number for lesson in LESSONS_ON_SHEET] == list(range(1, 26))
    for lesson, card in _cards():
        assert card.sources, f"{lesson.stem}: metadata.course.interview.sources is empty"


def test_every_paper_model_or_library_a_card_names_is_among_its_sources():
    found = []
    for lesson, card in _cards():
        missing = unsourced_names(card_texts(card), [entry["ref"] for entry in card.sources])
        found += [f"{lesson.stem}: {name}" for name in missing]
    assert not found, ("a card names a paper, model or library none of its sources covers (add it to the card's "
                       "`sources`, or to CITED_NAMES' aliases if a cited ref does cover it):\n" + "\n".join(found))


def test_a_new_unsourced_name_fails_the_source_check():
    refs = ["Devlin et al. 2019, BERT, §3.1"]
    assert unsourced_names(["BERT masks 15%; BERT 的 NSP 头"], refs) == []
    assert unsourced_names(["RoBERTa dropped NSP."], refs) == ["RoBERTa ('RoBERTa')"]
    assert unsourced_names(["比RoBERTa更好"], refs) == ["RoBERTa ('RoBERTa')"]     # next to Chinese text too
    assert unsourced_names(["Smith et al. (2024) disagree; Zhang 等人也是"], refs) == ["Smith (an author)",
                                                                                    "Zhang (an author)"]
    assert unsourced_names(["see `run_glue.py`"], refs) == ["run_glue.py (a file)"]
    assert unsourced_names(["Megatron-BERT is Pre-LN"], refs) == ["Megatron-BERT ('Megatron')"]
    assert unsourced_names(["Megatron-BERT is Pre-LN"], refs + ["transformers/models/megatron_bert/x.py"]) == []


def test_cited_library_files_exist_and_other_files_link_their_source():
    import importlib.util
    from pathlib import Path
    for lesson, card in _cards():
        for entry in card.sources:
            ref, url = entry["ref"], entry.get("url", "")
            package = ref.split("/", 1)[0]
            if package in INSTALLED and " " not in ref:
                spec = importlib.util.find_spec(package)
                assert spec and spec.submodule_search_locations, f"{lesson.stem}: {package} is not installed"
                path = Path(spec.submodule_search_locations[0]).parent / ref
                assert path.is_file(), f"{lesson.stem}: cites {ref}, which the installed {package} does not have"
            elif re.search(r"\.(py|rs)\b", ref):
                assert url.startswith("https://github.com/"), f"{lesson.stem}: {ref} needs a link to the file"


def test_the_sources_are_printed_under_each_lesson_on_both_sheets():
    english, chinese = cheatsheet.render(lang="en"), cheatsheet.render(lang="zh")
    assert english.count("**Sources:** ") == chinese.count("**出处：** ") == len(LESSONS_ON_SHEET)
    for lesson, card in _cards():
        for sheet, marker, lang in ((english, "**Sources:** ", "en"), (chinese, "**出处：** ", "zh")):
            section = sheet.split(f"### {lesson.number:02d} · ", 1)[1].split("\n### ", 1)[0]
            line = next(line for line in section.splitlines() if line.startswith(marker))
            for entry in card.sources:
                assert entry["ref"] in line, f"{lesson.stem}: {entry['ref']!r} not printed"
                if entry.get("url"):   # what it supports: the link's title, shown on hover
                    assert f'({entry["url"]} "' in line and entry["for"][lang].split('"')[0] in line
            # compact: the printed refs of one lesson stay well inside its part's two pages
            # (browser_tests measure the real budget)
            printed = re.sub(r"\]\([^)]*\)", "", line).replace("[", "")
            assert len(printed) <= 450, f"{lesson.stem}: the sources line is {len(printed)} characters"


def test_a_malformed_source_is_refused():
    from course_lib.quiz import InterviewError, parse_card
    card = {"say_this": {"en": "x", "zh": "x"}, "folklore": {"en": "x", "zh": "x"}, "measured": {"en": "x", "zh": "x"}}
    good = {"ref": "Devlin et al. 2019", "url": "https://arxiv.org/abs/1810.04805", "for": {"en": "x", "zh": "x"}}
    assert parse_card(1, {"course": {"interview": {**card, "sources": [good]}}}).sources == [good]
    for bad in ({"ref": ""}, {**good, "url": "arxiv.org"}, {**good, "for": {"en": "x"}}, {**good, "page": 3}):
        with pytest.raises(InterviewError, match="sources"):
            parse_card(1, {"course": {"interview": {**card, "sources": [bad]}}})
