"""Batches for pretraining a tiny BERT (lessons 16 and 17): sentence pairs `[CLS] A [SEP] B [SEP]`
drawn by `course_lib.sentence_pairs.sample_pair` (the course's one NSP/SOP sampler) from the
documents of `course_lib.data.corpus`, tokenized once up front, padded, and masked as BERT does
(`course_lib.masking.mask_tokens`).

    batcher = PairBatcher(make_documents(200, seed=0), corpus_tokenizer(), task="sop")
    batch = batcher.masked_batch(64, random.Random(1), torch.Generator().manual_seed(2))

It sits beside `course_lib.pretraining`, not under `course_lib.data`: `course_lib.data` holds the
synthetic-data generators, which know nothing of models, while a batcher is the lessons' own
machinery on top of them (the tokenizer of lesson 13, the masking of lesson 15, the pair sampler
of lesson 16), and its output shapes are what the model's forward pass reads. Part of the
pretraining cache key (`course_lib.pretraining.source_modules`) through pretraining's import.
"""
from __future__ import annotations

import random

import torch

from .data.corpus import Document
from .masking import mask_tokens
from .sentence_pairs import TASKS, as_documents, consecutive_pairs, sample_pair
from .tokenization import WordPieceTokenizer
from .validation import require_choice


class PairBatcher:
    """Draws batches of tokenized pairs; every sentence is tokenized once, up front."""

    def __init__(self, docs: list[Document], tokenizer: WordPieceTokenizer, task: str = "nsp"):
        # Documents, or lists of sentence strings (one episode each), as `make_pairs` takes them
        docs = as_documents(docs)
        require_choice("task", task, TASKS)
        self.docs, self.tokenizer, self.task = docs, tokenizer, task
        self.ids = [[tokenizer.convert_tokens_to_ids(tokenizer.tokenize(s)) for s in doc.sentences]
                    for doc in docs]
        self.candidates = consecutive_pairs(docs)
        if not self.candidates:
            raise ValueError("docs: no two consecutive sentences in one episode")

    def batch(self, batch_size: int, rng: random.Random) -> dict[str, torch.Tensor]:
        """input_ids, token_type_ids, attention_mask, special_tokens_mask: (B, T), padded to
        the longest pair; next_sentence_label: (B,)."""
        tok = self.tokenizer
        rows, labels = [], []
        for _ in range(batch_size):
            (da, ia), (db, ib), label = sample_pair(self.docs, self.candidates, self.task, rng)
            a, b = self.ids[da][ia], self.ids[db][ib]
            ids = [tok.cls_token_id] + a + [tok.sep_token_id] + b + [tok.sep_token_id]
            types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
            rows.append((ids, types))
            labels.append(label)
        T = max(len(ids) for ids, _ in rows)
        input_ids = torch.full((batch_size, T), tok.pad_token_id, dtype=torch.long)
        token_type_ids = torch.zeros((batch_size, T), dtype=torch.long)
        attention_mask = torch.zeros((batch_size, T), dtype=torch.long)
        for r, (ids, types) in enumerate(rows):
            input_ids[r, :len(ids)] = torch.tensor(ids)
            token_type_ids[r, :len(ids)] = torch.tensor(types)
            attention_mask[r, :len(ids)] = 1
        special = torch.isin(input_ids, torch.tensor(tok.special_ids)) | (attention_mask == 0)
        return {"input_ids": input_ids, "token_type_ids": token_type_ids,
                "attention_mask": attention_mask, "special_tokens_mask": special,
                "next_sentence_label": torch.tensor(labels, dtype=torch.long)}

    def masked_batch(self, batch_size: int, rng: random.Random, mask_generator: torch.Generator,
                     ratio: float = 0.15,
                     mask_prob_split: tuple[float, float, float] = (0.8, 0.1, 0.1)):
        """`batch` with BERT's masking applied: input_ids masked, plus labels (B, T) holding the
        original id at selected positions and -100 elsewhere."""
        batch = self.batch(batch_size, rng)
        batch["input_ids"], batch["labels"] = mask_tokens(
            batch["input_ids"], mask_token_id=self.tokenizer.mask_token_id,
            vocab_size=len(self.tokenizer), special_tokens_mask=batch["special_tokens_mask"],
            ratio=ratio, generator=mask_generator, mask_prob_split=mask_prob_split,
            special_ids=self.tokenizer.special_ids)
        return batch
