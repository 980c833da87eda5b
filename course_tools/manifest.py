"""The course manifest: every lesson id mapped to its notebook, exercise and solution, and the
learner's folder of exercise copies (`work_dir`).

Checks are keyed by the lesson id; file names follow `NN_some_id.ipynb`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from . import ROOT


@dataclass(frozen=True)
class Lesson:
    number: int
    id: str
    question: str
    question_zh: str
    has_exercise: bool = True

    @property
    def stem(self) -> str:
        return f"{self.number:02d}_{self.id.replace('-', '_')}"

    @property
    def notebook(self) -> Path:
        return ROOT / "notebooks" / f"{self.stem}.ipynb"

    @property
    def exercise(self) -> Path | None:
        return ROOT / "exercises" / f"{self.stem}.ipynb" if self.has_exercise else None

    @property
    def solution(self) -> Path | None:
        return ROOT / "solutions" / f"{self.stem}.ipynb" if self.has_exercise else None


LESSONS: list[Lesson] = [
    Lesson(0, "welcome", "How does this course work?", "这门课怎么学？"),
    Lesson(1, "scale-sqrt-dk", "Why divide QKᵀ by √d_k?",
           "Transformer的点积模型做缩放的原因是什么？"),
    Lesson(2, "qkv-projections", "What goes wrong without the Q/K/V projection matrices?",
           "self-attention中词向量不乘QKV参数矩阵，会有什么问题？"),
    Lesson(3, "multi-head", "Why multi-head attention?", "为什么要多头注意力？"),
    Lesson(4, "attention-complexity", "What is the time complexity of self-attention?",
           "Self-Attention 的时间复杂度是怎么计算的？"),
    Lesson(5, "positional-encoding",
           "Sinusoidal or learned positions, and why does BERT stop at 512 tokens?",
           "使用BERT预训练模型为什么最多只能输入512个词？"),
    Lesson(6, "embedding-scale", "Why multiply embeddings by √d_model?",
           "为何在获取输入词向量之后需要对矩阵乘以embedding size的开方？"),
    Lesson(7, "layernorm-vs-batchnorm", "Why LayerNorm and not BatchNorm?",
           "bert中为什么采用层归一化而不是批量归一化？"),
    Lesson(8, "residual", "What do residual connections buy us?", "残差结构有什么作用？"),
    Lesson(9, "warmup-pre-post-ln",
           "Why does BERT need warm-up, and why did later models move LayerNorm inside the residual branch?",
           "为什么BERT采用warm-up？BERT后期为何将残差放到内部？"),
    Lesson(10, "nonlinearity", "Where does BERT's non-linearity come from?", "BERT非线性的来源在哪里？"),
    Lesson(11, "encoder-decoder", "How do the encoder, decoder and masked attention fit together?",
           "Transformer的编码器、解码器和masked attention是怎么配合的？（本课程自拟，原始面试材料中没有这一问）"),
    Lesson(12, "weight-tying",
           "Where does the Transformer share weights, and why can Embedding and Linear share one matrix without a transpose?",
           "Transformer在哪里做了权重共享，为什么可以做权重共享？"),
    Lesson(13, "wordpiece-vs-bpe", "How do WordPiece and BPE differ?", "BPE、WordPiece、ULM有什么区别？"),
    Lesson(14, "bert-input", "What goes into BERT's input, and is it fine to add three embeddings?",
           "BERT的三个Embedding直接相加会对语义有影响吗？"),
    Lesson(15, "mlm-masking", "Why mask 15% of tokens, split 80/10/10?",
           "为什么BERT选择mask掉15%这个比例的词，可以是其他的比例吗？"),
    Lesson(16, "nsp-vs-sop", "What is NSP, and why did ALBERT replace it with SOP?",
           "什么是NSP，ALBERT为什么用SOP替换它？"),
    Lesson(17, "pretraining-loss", "What loss does BERT pretrain with?", "BERT训练过程中的损失函数"),
    Lesson(18, "pretrained-parity", "Is our BERT the real BERT?", "我们的BERT和真正的BERT一样吗？"),
    Lesson(19, "cls-vs-pooling",
           "Why does BERT put [CLS] first, and is its vector the best sentence representation?",
           "为什么BERT在第一句前会加一个[CLS]标志？"),
    Lesson(20, "bidirectional", "BERT vs GPT vs ELMo: what does \"bidirectional\" mean?",
           "GPT、ELMo、BERT有什么区别？"),
    Lesson(21, "long-text", "BERT takes at most 512 tokens: how do you handle longer documents?",
           "在BERT应用中，如何解决长文本问题？"),
    Lesson(22, "transformer-xl", "How does Transformer-XL see past the segment boundary?",
           "Transformer-XL的片段递归和相对位置编码是怎么做的？"),
    Lesson(23, "bert-family", "RoBERTa, ALBERT, T5, XLNet: what did each change?",
           "RoBERTa、ALBERT、T5、XLNet各自改了什么？"),
    Lesson(24, "distillation", "How does knowledge distillation work, and why the temperature?",
           "模型蒸馏如何进行？"),
    Lesson(25, "fast-inference", "How do you make BERT inference fast on a CPU?",
           "有哪些方法减小模型、加快预测？"),
]


def by_id(lesson_id: str) -> Lesson:
    for lesson in LESSONS:
        if lesson.id == lesson_id:
            return lesson
    raise ValueError(f"lesson_id: unknown lesson {lesson_id!r}; known: {[l.id for l in LESSONS]}")


def available() -> list[Lesson]:
    """Lessons whose notebook exists (all of them in a finished checkout)."""
    return [lesson for lesson in LESSONS if lesson.notebook.exists()]


WORK_ENV = "COURSE_WORK_DIR"


def work_dir() -> Path:
    """The learner's desk (`course_tools.workspace`): `work/` at the course's root unless
    COURSE_WORK_DIR names another. `course exercises --force` backs edited exercises up there."""
    return Path(os.environ.get(WORK_ENV) or ROOT / "work")
