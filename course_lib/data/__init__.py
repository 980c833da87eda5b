"""Synthetic data for the lessons: seeded generators, made on the spot, nothing downloaded.

Each module makes one kind of data from a seed, so a lesson's data are fixed by its SEED and cost
nothing to make; none of them builds or trains a model (the lessons' own machinery on top of the
data, such as masking, NSP/SOP pair sampling or pretraining batches, stays in the flat modules of
`course_lib`, one per lesson).

- `toy`: small numeric sets (lesson 08's two spirals);
- `tasks`: sequence tasks (copy, reverse, sort, keyed recall) with the token conventions the
  early Transformer lessons share (lessons 02, 03, 05, 06, 09, 11, 12);
- `markov`: a synthetic Markov language whose masked tokens are predictable (lessons 15, 23);
- `corpus`: a synthetic story corpus with controlled topic and order, its tokenizer, and real
  English from Python's documentation (`pydoc_texts`) (Part III: lessons 07, 13, 16, 17, 19, 21,
  25);
- `similarity_pairs`: labelled sentence pairs (paraphrase / related / unrelated) for judging
  sentence embeddings (lessons 19, 25); not `course_lib.sentence_pairs`, lesson 16's NSP/SOP
  sampler.

Import the module you need: `from course_lib.data.tasks import make_batch`.
"""
