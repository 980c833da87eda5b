"""A labelled sentence-similarity set, built offline (lesson 19; lesson 25 reuses it).

Not to be confused with `course_lib.sentence_pairs`, the NSP/SOP sampler of lesson 16: the pairs
here are (sentence, sentence, similarity label) for judging sentence embeddings; the statistics
that score embeddings against these labels are in `course_lib.sentence_similarity`.

`similarity_pairs(seed, n_per_label)` returns `(sentence_a, sentence_b, label)` triples with

- 2 = paraphrase: the same content in other words,
- 1 = related: the same topic, different content,
- 0 = unrelated: different topics,

`n_per_label` of each label, half from each of two sources:

- templates: everyday scenes (a cook, a gardener, a pilot ...). A scene is (agent, action,
  object, place); every slot has synonyms ("the chef" / "the cook", "chopped" / "diced") and a
  sentence is written active, passive or place-first. A paraphrase pair is one scene written
  twice with other synonyms and another sentence form (so word overlap alone does not give it
  away); a related pair is two different scenes of one topic; an unrelated pair, two topics.
- pydoc: real English sentences of the documentation topics that ship with Python
  (`pydoc_data`). A paraphrase is a sentence and a rewrite of it (a table of synonyms and
  a few dropped adverbs: a *near* paraphrase); a related pair, two sentences of one
  documentation topic; an unrelated pair, sentences of two different topics (all of them are
  about Python, so "unrelated" here is the hard case).

Deterministic for a seed; nothing is downloaded.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache

PARAPHRASE, RELATED, UNRELATED = 2, 1, 0
LABELS = (PARAPHRASE, RELATED, UNRELATED)

Pair = tuple[str, str, int]
MAX_PER_LABEL = 1000  # the pydoc sentences allow about that many distinct pairs per label


@dataclass(frozen=True)
class Scene:
    """One topic's slots; every entry is a tuple of synonyms. Verbs are past forms that are
    also past participles ("chopped", "cut up"), so the passive reads correctly."""
    name: str
    agents: tuple[tuple[str, ...], ...]
    actions: tuple[tuple[str, ...], ...]
    objects: tuple[tuple[str, ...], ...]
    places: tuple[tuple[str, ...], ...]


SCENES: tuple[Scene, ...] = (
    Scene("cooking",
          (("the chef", "the cook"), ("my mother", "my mom"), ("the waiter", "the server")),
          (("chopped", "diced", "cut up"), ("cooked", "prepared", "made"),
           ("washed", "rinsed", "cleaned"), ("tasted", "sampled", "tried")),
          (("the onions", "the onion"), ("the soup", "the broth"), ("the fish", "the salmon"),
           ("the vegetables", "the veggies")),
          (("in the kitchen", "at the stove"), ("at the restaurant", "in the diner"))),
    Scene("gardening",
          (("the gardener", "the groundskeeper"), ("my neighbour", "the man next door"),
           ("the farmer", "the grower")),
          (("planted", "sowed", "put in"), ("watered", "sprinkled", "hosed"),
           ("pruned", "trimmed", "cut back"), ("picked", "harvested", "gathered")),
          (("the roses", "the rose bushes"), ("the tomatoes", "the tomato plants"),
           ("the hedge", "the shrubs"), ("the apples", "the apple crop")),
          (("in the garden", "in the yard"), ("in the greenhouse", "under the glass roof"))),
    Scene("football",
          (("the striker", "the forward"), ("the goalkeeper", "the keeper"),
           ("the coach", "the manager")),
          (("kicked", "struck", "booted"), ("passed", "played", "sent"),
           ("blocked", "stopped", "saved"), ("celebrated", "cheered", "applauded")),
          (("the ball", "the football"), ("the penalty", "the spot kick"),
           ("the free kick", "the set piece"), ("the late goal", "the last-minute goal")),
          (("at the stadium", "at the arena"), ("on the pitch", "on the field"))),
    Scene("weather",
          (("the forecaster", "the weatherman"), ("the pilot", "the captain"),
           ("the fisherman", "the sailor")),
          (("predicted", "forecast", "expected"), ("reported", "announced", "described"),
           ("feared", "dreaded", "worried about"), ("watched", "observed", "monitored")),
          (("the storm", "the gale"), ("the heavy rain", "the downpour"),
           ("the snowfall", "the snow"), ("the heat wave", "the hot spell")),
          (("over the coast", "along the shore"), ("in the mountains", "in the hills"))),
    Scene("finance",
          (("the banker", "the financier"), ("the investor", "the shareholder"),
           ("the accountant", "the bookkeeper")),
          (("bought", "purchased", "acquired"), ("sold", "traded", "sold off"),
           ("audited", "checked", "reviewed"), ("borrowed", "took out", "obtained")),
          (("the shares", "the stock"), ("the bonds", "the debt"), ("the loan", "the credit"),
           ("the accounts", "the books")),
          (("at the bank", "in the branch"), ("on the exchange", "on the market"))),
    Scene("medicine",
          (("the doctor", "the physician"), ("the nurse", "the carer"),
           ("the surgeon", "the specialist")),
          (("examined", "checked", "inspected"), ("treated", "cured", "healed"),
           ("bandaged", "dressed", "wrapped"), ("prescribed", "ordered", "recommended")),
          (("the patient", "the sick man"), ("the wound", "the injury"),
           ("the broken arm", "the fractured arm"), ("the child", "the young girl")),
          (("at the hospital", "in the clinic"), ("in the ward", "in the emergency room"))),
    Scene("music",
          (("the pianist", "the keyboard player"), ("the singer", "the vocalist"),
           ("the band", "the group")),
          (("performed", "played", "presented"), ("recorded", "taped", "captured"),
           ("composed", "wrote", "created"), ("rehearsed", "practised", "went over")),
          (("the song", "the tune"), ("the symphony", "the orchestral piece"),
           ("the album", "the record"), ("the ballad", "the love song")),
          (("in the studio", "in the recording room"), ("at the concert hall", "on stage"))),
    Scene("travel",
          (("the tourist", "the traveller"), ("the guide", "the tour leader"),
           ("the family", "the parents and kids")),
          (("booked", "reserved", "arranged"), ("visited", "toured", "explored"),
           ("photographed", "filmed", "snapped"), ("missed", "lost", "failed to catch")),
          (("the hotel", "the inn"), ("the museum", "the gallery"), ("the train", "the railway"),
           ("the castle", "the fortress")),
          (("in the city", "downtown"), ("on holiday", "on vacation"))),
)

# A table of synonyms for the pydoc rewrites (whole words, lower case).
DOC_SYNONYMS: dict[str, str] = {
    "returns": "gives back", "return": "give back", "function": "routine",
    "functions": "routines", "object": "value", "objects": "values", "called": "invoked",
    "call": "invoke", "used": "employed", "use": "employ", "defined": "specified",
    "define": "specify", "following": "next", "described": "explained", "evaluated": "computed",
    "evaluates": "computes", "value": "result", "values": "results", "first": "initial",
    "argument": "parameter", "arguments": "parameters", "example": "instance",
    "contains": "holds", "contain": "hold", "can": "may", "must": "has to",
    "result": "outcome", "raised": "thrown", "instance": "object", "method": "operation",
    "methods": "operations", "name": "identifier", "names": "identifiers",
    "expression": "formula", "expressions": "formulas", "statement": "instruction",
    "statements": "instructions", "string": "text", "strings": "texts", "same": "identical",
    "different": "distinct", "given": "supplied", "specified": "given", "implement": "realize",
    "implemented": "realized", "refers": "points", "allowed": "permitted", "begins": "starts",
    "begin": "start", "create": "make", "created": "made", "obtain": "get",
    "obtained": "got", "executed": "run", "execute": "run", "several": "many",
}
DOC_DROPPABLE = ("also", "generally", "usually", "always", "only", "simply", "normally",
                 "actually", "then", "just")


def _capitalize(text: str) -> str:
    return text[0].upper() + text[1:]


def _write(scene: Scene, slots: tuple[int, int, int, int], form: int, rng: random.Random) -> str:
    """Scene `slots` = (agent, action, object, place) indices, written in sentence `form`
    (0 active, 1 passive, 2 place first) with synonyms drawn from `rng`."""
    agent = rng.choice(scene.agents[slots[0]])
    action = rng.choice(scene.actions[slots[1]])
    obj = rng.choice(scene.objects[slots[2]])
    place = rng.choice(scene.places[slots[3]])
    if form == 0:
        text = f"{agent} {action} {obj} {place}."
    elif form == 1:
        be = "were" if obj.endswith("s") and not obj.endswith("ss") else "was"
        text = f"{obj} {be} {action} by {agent} {place}."
    else:
        text = f"{place}, {agent} {action} {obj}."
    return _capitalize(text)


def _random_slots(scene: Scene, rng: random.Random) -> tuple[int, int, int, int]:
    return (rng.randrange(len(scene.agents)), rng.randrange(len(scene.actions)),
            rng.randrange(len(scene.objects)), rng.randrange(len(scene.places)))


def _template_pair(label: int, rng: random.Random) -> Pair:
    scene = rng.choice(SCENES)
    slots = _random_slots(scene, rng)
    form_a = rng.randrange(3)
    if label == PARAPHRASE:
        form_b = rng.choice([f for f in range(3) if f != form_a])
        a, b = _write(scene, slots, form_a, rng), _write(scene, slots, form_b, rng)
        for _ in range(20):  # other synonyms, where the draw allows
            if b != a:
                break
            b = _write(scene, slots, form_b, rng)
        return a, b, label
    if label == RELATED:
        other = _random_slots(scene, rng)
        while other[1] == slots[1] or other[2] == slots[2]:  # another action on another object
            other = _random_slots(scene, rng)
        return _write(scene, slots, form_a, rng), _write(scene, other, rng.randrange(3), rng), label
    scene_b = rng.choice([s for s in SCENES if s.name != scene.name])
    return (_write(scene, slots, form_a, rng),
            _write(scene_b, _random_slots(scene_b, rng), rng.randrange(3), rng), label)


@lru_cache(maxsize=1)
def doc_sentences() -> dict[str, tuple[str, ...]]:
    """Plain prose sentences (8-24 words, letters and simple punctuation only) of the
    `pydoc_data` topics, by topic name in sorted order. Topics that share a sentence (pydoc
    repeats text: "naming" is a part of "execmodel", "function" of "compound") are merged
    into the first one's name, so that two topics never overlap; each sentence appears once."""
    from pydoc_data.topics import topics

    by_topic = {}
    for key in sorted(topics):
        sentences = []
        for paragraph in re.split(r"\n\s*\n", topics[key]):
            if paragraph.startswith(" "):  # indented: code or a grammar rule
                continue
            paragraph = " ".join(paragraph.split())
            for s in re.split(r"(?<=[.])\s+(?=[A-Z])", paragraph):
                if 8 <= len(s.split()) <= 24 and re.fullmatch(r"[A-Z][A-Za-z ,'-]+\.", s):
                    sentences.append(s)
        if sentences:
            by_topic[key] = list(dict.fromkeys(sentences))
    # union-find over topics that share a sentence; a group is named by its first topic
    parent = {k: k for k in by_topic}

    def root(k):
        while parent[k] != k:
            k = parent[k]
        return k

    first_topic: dict[str, str] = {}
    for key, sentences in by_topic.items():
        for s in sentences:
            other = first_topic.setdefault(s, key)
            a, b = sorted((root(other), root(key)))
            parent[b] = a
    out: dict[str, list[str]] = {}
    for key, sentences in by_topic.items():
        out.setdefault(root(key), []).extend(sentences)
    return {k: tuple(dict.fromkeys(v)) for k, v in sorted(out.items())}


def rewrite(sentence: str, rng: random.Random) -> str:
    """A near paraphrase: words of `DOC_SYNONYMS` replaced, droppable adverbs dropped
    (each with probability 1/2, at least one change where the sentence allows one)."""
    if not isinstance(sentence, str) or not sentence.strip(" ."):
        raise ValueError(f"sentence: expected a sentence ending in '.', got {type(sentence).__name__} "
                         f"{sentence!r:.40}")
    if not isinstance(rng, random.Random):
        raise ValueError(f"rng: expected a random.Random, got {type(rng).__name__} {rng!r:.30} "
                         f"(make one: random.Random(seed))")
    words = sentence[:-1].split()
    changeable = [i for i, w in enumerate(words)
                  if w.lower().strip(",") in DOC_SYNONYMS or w.lower() in DOC_DROPPABLE]
    chosen = {i for i in changeable if rng.random() < 0.5}
    if changeable and not chosen:
        chosen = {rng.choice(changeable)}
    out = []
    for i, w in enumerate(words):
        if i not in chosen:
            out.append(w)
            continue
        core, comma = w.rstrip(","), "," if w.endswith(",") else ""
        if core.lower() in DOC_DROPPABLE:
            if comma and out:
                out[-1] += comma
            continue
        new = DOC_SYNONYMS[core.lower()]
        if out and out[-1].lower() in ("a", "an"):  # "a value" -> "an outcome"
            article = "an" if new[0] in "aeiou" else "a"
            out[-1] = article.capitalize() if out[-1][0].isupper() else article
        out.append((new.capitalize() if core[0].isupper() else new) + comma)
    text = " ".join(out)
    return _capitalize(text) + "."


def _doc_pair(label: int, rng: random.Random) -> Pair:
    docs = doc_sentences()
    if label == PARAPHRASE:
        candidates = [k for k in docs]
        key = rng.choice(candidates)
        for _ in range(50):
            a = rng.choice(docs[key])
            b = rewrite(a, rng)
            if b != a:
                return a, b, label
            key = rng.choice(candidates)
        raise RuntimeError("no rewritable pydoc sentence found")  # not reached in practice
    if label == RELATED:
        key = rng.choice([k for k in docs if len(docs[k]) >= 2])
        a, b = rng.sample(docs[key], 2)
        return a, b, label
    key_a, key_b = rng.sample(list(docs), 2)
    return rng.choice(docs[key_a]), rng.choice(docs[key_b]), label


def similarity_pairs(seed: int = 0, n_per_label: int = 120) -> list[Pair]:
    """`3 * n_per_label` labelled pairs (a, b, label), label 2 paraphrase / 1 related /
    0 unrelated, `n_per_label` of each: the first half of each label from the templates,
    the rest from pydoc text. Order: shuffled; the same list for the same `seed`.
    Each pair's sentences are distinct; no pair appears twice."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed: expected an int, got {type(seed).__name__}")
    if (isinstance(n_per_label, bool) or not isinstance(n_per_label, int)
            or not 2 <= n_per_label <= MAX_PER_LABEL):
        raise ValueError(f"n_per_label: expected an int in [2, {MAX_PER_LABEL}], got {n_per_label!r}")
    rng = random.Random(seed)
    pairs: list[Pair] = []
    seen: set[tuple[str, str]] = set()
    for label in LABELS:
        n_template = n_per_label // 2
        for source, n in ((_template_pair, n_template), (_doc_pair, n_per_label - n_template)):
            made, tries = 0, 0
            while made < n:
                tries += 1
                if tries > 50 * n + 500:
                    raise ValueError(f"n_per_label: {n_per_label} distinct pairs of label "
                                     f"{label} could not be drawn; ask for fewer")
                a, b, lab = source(label, rng)
                if a == b or (a, b) in seen or (b, a) in seen:
                    continue
                seen.add((a, b))
                pairs.append((a, b, lab))
                made += 1
    rng.shuffle(pairs)
    return pairs
