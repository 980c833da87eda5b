"""Text for Part III: a seeded synthetic story corpus, and real English from Python's docs.

The synthetic corpus is built so that the two things BERT's pretraining tasks look at are
controlled:

- topic: every topic has its own nouns, verbs and places, so any two sentences from one
  topic share vocabulary (that is what makes NSP easy for a bag of words);
- order: a topic's verbs form a script (a cook buys, washes, peels, chops ... food, in that
  order), and every episode of a document narrates a subset of the script in script order,
  so which of two sentences comes first is learnable (SOP) but invisible to a bag of words.

A document is a sequence of episodes: an agent does some of the script's steps to one object.
Long documents (for the long-text lessons) are simply many episodes.

Nothing is downloaded: `pydoc_texts()` returns the documentation topics shipped with Python.
"""
from __future__ import annotations

import numbers
import random
from dataclasses import dataclass, field

import torch

from ..tokenization import SPECIAL_TOKENS, WordPieceTokenizer
from ..validation import refuse_one_text


@dataclass(frozen=True)
class Topic:
    name: str
    objects: tuple[str, ...]
    places: tuple[str, ...]
    script: tuple[str, ...]  # past-tense verbs in the order the steps happen

    def __post_init__(self):
        for name in ("objects", "places", "script"):     # rng.choice("carrot") draws letters
            refuse_one_text(name, getattr(self, name))


TOPICS: tuple[Topic, ...] = (
    Topic("kitchen", ("carrot", "onion", "potato", "tomato", "cabbage", "pepper", "garlic",
                      "leek", "bean", "pumpkin"),
          ("kitchen", "pantry", "canteen", "scullery"),
          ("bought", "washed", "peeled", "chopped", "fried", "seasoned", "served", "ate")),
    Topic("garden", ("rose", "tulip", "fern", "lily", "orchid", "daisy", "ivy", "cactus",
                     "lilac", "poppy"),
          ("greenhouse", "yard", "orchard", "meadow"),
          ("dug", "planted", "watered", "fertilized", "pruned", "picked", "arranged",
           "displayed")),
    Topic("workshop", ("plank", "beam", "board", "chair", "table", "shelf", "stool", "drawer",
                       "cabinet", "crate"),
          ("workshop", "shed", "garage", "barn"),
          ("measured", "sawed", "sanded", "glued", "nailed", "painted", "varnished", "sold")),
    Topic("post", ("letter", "parcel", "postcard", "package", "envelope", "invoice", "telegram",
                   "notice", "bill", "card"),
          ("office", "depot", "lobby", "station"),
          ("wrote", "sealed", "stamped", "posted", "sorted", "delivered", "opened", "read")),
    Topic("laboratory", ("sample", "beaker", "solution", "crystal", "powder", "culture",
                         "reagent", "specimen", "mixture", "compound"),
          ("laboratory", "clinic", "cellar", "vault"),
          ("collected", "labeled", "weighed", "dissolved", "heated", "filtered", "analyzed",
           "recorded")),
    Topic("harbor", ("boat", "ship", "sail", "anchor", "rope", "mast", "raft", "canoe", "yacht",
                     "ferry"),
          ("harbor", "bay", "port", "dock"),
          ("inspected", "loaded", "launched", "steered", "anchored", "moored", "unloaded",
           "scrubbed")),
    Topic("music", ("song", "melody", "tune", "chorus", "anthem", "ballad", "hymn", "sonata",
                    "waltz", "carol"),
          ("studio", "hall", "theater", "chapel"),
          ("composed", "transcribed", "rehearsed", "performed", "taped", "released", "reviewed",
           "archived")),
    Topic("bakery", ("dough", "bread", "loaf", "bun", "cake", "pastry", "bagel", "muffin",
                     "roll", "pie"),
          ("bakery", "mill", "cafe", "oven"),
          ("milled", "kneaded", "proofed", "shaped", "baked", "cooled", "sliced", "wrapped")),
)

AGENTS = ("anna", "ben", "clara", "david", "emma", "felix", "grace", "henry", "iris", "jonas",
          "karen", "leo")
ADJECTIVES = ("red", "old", "small", "large", "heavy", "bright", "fresh", "green", "blue",
              "plain")
# Function words the templates use; they are shared by all topics.
FUNCTION_WORDS = ("the", "in", "was", "by", ".", ",")


def _sentence(rng: random.Random, agent: str, verb: str, adjective: str, obj: str,
              place: str) -> str:
    agent = agent.capitalize()
    template = rng.randrange(3)
    if template == 0:
        text = f"{agent} {verb} the {adjective} {obj} in the {place}."
    elif template == 1:
        text = f"in the {place}, {agent} {verb} the {obj}."
    else:
        text = f"the {adjective} {obj} was {verb} by {agent}."
    return text[0].upper() + text[1:]


@dataclass
class Document:
    """One synthetic document. `steps[i]` is the script position of sentence i's verb and
    `episodes[i]` the episode it belongs to (the script restarts in every episode)."""
    topic: str
    sentences: list[str]
    steps: list[int] = field(default_factory=list)
    episodes: list[int] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


def _as_random(seed) -> random.Random:
    if isinstance(seed, random.Random):
        return seed
    if isinstance(seed, torch.Generator):
        return random.Random(int(torch.randint(2**62, (1,), generator=seed)))
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        # random.Random(1.5) or random.Random("0") would seed silently from the float or the text
        raise ValueError(f"seed: expected an int, a random.Random or a torch.Generator, got "
                         f"{type(seed).__name__} {seed!r:.30}")
    return random.Random(int(seed))


def make_document(rng: random.Random, topic: Topic, n_sentences: int,
                  min_steps: int = 3) -> Document:
    """Episodes of `topic` until the document has `n_sentences` sentences."""
    doc = Document(topic.name, [])
    episode = 0
    while len(doc.sentences) < n_sentences:
        agent, obj = rng.choice(AGENTS), rng.choice(topic.objects)
        adjective = rng.choice(ADJECTIVES)
        k = rng.randint(min(min_steps, len(topic.script)), len(topic.script))
        steps = sorted(rng.sample(range(len(topic.script)), k))  # script order
        for step in steps[:n_sentences - len(doc.sentences)]:
            place = rng.choice(topic.places)
            doc.sentences.append(_sentence(rng, agent, topic.script[step], adjective, obj, place))
            doc.steps.append(step)
            doc.episodes.append(episode)
        episode += 1
    return doc


def make_documents(n_docs: int, seed: int | random.Random | torch.Generator = 0,
                   min_sentences: int = 4, max_sentences: int = 8,
                   topics: tuple[Topic, ...] = TOPICS) -> list[Document]:
    """`n_docs` documents, each of one topic (uniformly drawn) with a number of sentences
    drawn uniformly from [min_sentences, max_sentences]. Deterministic given `seed` (an int,
    a `random.Random` or a `torch.Generator`).

    For long documents ask for many sentences (about 10 tokens each): e.g.
    `make_documents(8, seed, min_sentences=80, max_sentences=120)`.
    """
    if not 1 <= min_sentences <= max_sentences:
        raise ValueError(f"min_sentences, max_sentences: expected 1 <= min_sentences <= "
                         f"max_sentences, got {min_sentences}, {max_sentences}")
    rng = _as_random(seed)
    return [make_document(rng, rng.choice(topics), rng.randint(min_sentences, max_sentences))
            for _ in range(n_docs)]


def corpus_words(topics: tuple[Topic, ...] = TOPICS) -> list[str]:
    """Every word the generator can write (lower-cased), sorted."""
    words = set(AGENTS) | set(ADJECTIVES) | set(FUNCTION_WORDS)
    for t in topics:
        words |= set(t.objects) | set(t.places) | set(t.script)
    return sorted(words)


def corpus_vocab(topics: tuple[Topic, ...] = TOPICS) -> list[str]:
    """A whole-word vocabulary for the synthetic corpus: the specials, then every word."""
    return list(SPECIAL_TOKENS) + corpus_words(topics)


def corpus_tokenizer(max_position_embeddings: int | None = None) -> WordPieceTokenizer:
    """A BERT tokenizer whose vocabulary holds every corpus word (so it never emits [UNK])."""
    return WordPieceTokenizer(corpus_vocab(), max_position_embeddings=max_position_embeddings)


def pydoc_texts() -> list[str]:
    """Real English: the documentation topics that ship with Python (`pydoc_data`), in a
    fixed order. About 79 texts, 460k characters, 65k words."""
    from pydoc_data.topics import topics

    return [topics[key] for key in sorted(topics)]
