"""A varied, deterministic set of test sentences for comparing tokenizers with Hugging Face."""
from __future__ import annotations

import random
import re

import pydoc_data.topics


def pydoc_sentences(n: int, seed: int = 0) -> list[str]:
    """Sentences of real English prose (and code) from the docs that ship with Python."""
    text = " ".join(pydoc_data.topics.topics.values())
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if 20 < len(s.strip()) < 400]
    return random.Random(seed).sample(sentences, n)


HANDWRITTEN = [
    "", " ", "\t\n", "Hello, world!", "Wait... what?!?", "!!!???...,,,;;;", "--==**&&^^%%$$##@@",
    "a+b=c; x<y>z | `code` ~tilde~", "(nested [brackets {here}])", "\"quoted\" and 'single'",
    "Café naïve résumé Ångström façade jalapeño", "ÉCOLE Noël Ürümqi İstanbul ĳssel",
    "Straße Œuvre Æsir Ørsted Łódź", "ΣΟΦΟΣ σοφός Ελληνικά", "Привет, мир! Ёлка",
    "我爱自然语言处理。", "BERT模型在中文上的表现", "日本語のテキストとカタカナ", "한국어 문장입니다",
    "mixed中文and English混合", "emoji 😀👍🏽🎉 and 🥰 faces", "flags 🇫🇷🇩🇪 and ZWJ 👩‍👩‍👧",
    "heart ❤️ with variation selector", "tab\tseparated\tvalues", "non\u00a0breaking\u00a0space",
    "zero\u200bwidth\u200bspace", "joiner\u200dand\u200cnon-joiner", "bom\ufeffinside",
    "line\u2028separator\u2029paragraph", "ideographic\u3000space", "em\u2003space thin\u2009space",
    "new\nline\r\ncarriage", "bell\x07char and null\x00char", "escape\x1b[31mred\x1b[0m",
    "del\x7fchar and \x85next line", "vertical\x0btab form\x0cfeed", "soft\u00adhyphen",
    "replacement \ufffd char", "private \ue000 use", "combining a\u0301 e\u0300 o\u0308",
    "Dr. Smith's U.S.A. trip cost $3,500.00 (approx.)", "e-mail: someone@example.com",
    "https://www.example.org/path?query=1&x=2#frag", "C++ and C# and F# are languages",
    "3.14159 is pi; 2.71828 is e; 1e-5 is small", "12:30pm on 2024-01-15", "50% off!!! #sale @shop",
    "unbelievably antidisestablishmentarianism", "Pneumonoultramicroscopicsilicovolcanoconiosis",
    "x" * 100, "y" * 101, "supercalifragilistic" * 6, ("a" * 50 + "é" * 51),
    "The [MASK] sat on the mat.", "[CLS] already [SEP] here", "lower [mask] is not special",
    "[UNK] and [PAD] tokens", "don't won't can't I'm you're it's", "§ ¶ † ‡ • … ‰ ′ ″",
    "« guillemets » „German“ ‘curly’ “double”", "math: ∑ ∫ √ ∞ ≠ ≤ ≥ ± × ÷", "→ ← ↑ ↓ ⇒",
    "fullwidth ＡＢＣ１２３！", "superscript x² and ½ fraction", "ligature ﬁ ﬂ ﬀ",
    "arabic مرحبا بالعالم", "hebrew שלום עולם", "hindi नमस्ते दुनिया", "thai สวัสดีครับ",
    "    leading and trailing spaces    ", "multiple     internal      spaces",
    "ALL CAPS SHOUTING SENTENCE", "MiXeD CaSe WoRdS", "snake_case_identifier and camelCaseName",
    "def f(x):\n    return x ** 2  # square", "print('hello')", "<html><body>tag</body></html>",
    "...", "a", "A.", "1", "$", "##", "##abc", "word##piece",
]


def _long_word_cases(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = []
    for length in (99, 100, 101, 150, 300):
        word = "".join(rng.choice(letters) for _ in range(length))
        out.append(f"short {word} short")
    return out


def _noisy_cases(rng: random.Random, n: int) -> list[str]:
    """Random mixes of letters, punctuation, whitespace oddities and control characters."""
    pool = (list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789") * 3
            + list(".,;:!?'\"()[]{}<>-_/\\@#$%^&*+=|~`")
            + [" ", " ", " ", "\t", "\n", "\u00a0", "\u200b", "\u200d", "\x01", "\x1f", "\u2028",
               "é", "ü", "ñ", "中", "文", "😀", "ß", "Ω", "\u0301", "ﬁ", "½"])
    return ["".join(rng.choice(pool) for _ in range(rng.randint(1, 60))) for _ in range(n)]


def varied_sentences(seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return (pydoc_sentences(120, seed) + HANDWRITTEN + _long_word_cases(rng)
            + _noisy_cases(rng, 60))


def sentence_pairs(seed: int = 0) -> list[tuple[str, str]]:
    sentences = pydoc_sentences(40, seed + 1)
    return list(zip(sentences[::2], sentences[1::2]))
