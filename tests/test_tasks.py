"""Synthetic sequence tasks: determinism, token conventions and the answers themselves."""
import pytest
import torch

from course_lib.data.tasks import BOS, EOS, N_SPECIAL, PAD, SEP, TASKS, as_lm_batch, make_batch


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("task", TASKS)
def test_seeded_and_shaped(task):
    a, b = make_batch(task, 16, 5, 20, _gen(3)), make_batch(task, 16, 5, 20, _gen(3))
    c = make_batch(task, 16, 5, 20, _gen(4))
    assert torch.equal(a.src, b.src) and torch.equal(a.target, b.target)
    assert not torch.equal(a.src, c.src)
    T = a.target.shape[1]
    assert a.tgt_in.shape == a.tgt_out.shape == (16, T + 1)
    assert (a.tgt_in[:, 0] == BOS).all() and torch.equal(a.tgt_in[:, 1:], a.target)
    assert (a.tgt_out[:, -1] == EOS).all() and torch.equal(a.tgt_out[:, :-1], a.target)
    assert all(t.dtype == torch.long for t in (a.src, a.target, a.tgt_in, a.tgt_out))
    assert (a.target >= N_SPECIAL).all() and (a.target < 20).all()
    content = a.src[a.src != SEP] if task == "recall" else a.src
    assert (content >= N_SPECIAL).all() and (content < 20).all()


def test_copy_reverse_sort_answers():
    for task, fn in (("copy", lambda r: r), ("reverse", lambda r: r[::-1]), ("sort", sorted)):
        batch = make_batch(task, 32, 6, 12, _gen(1))
        assert batch.src.shape == (32, 6)
        for src, tgt in zip(batch.src.tolist(), batch.target.tolist()):
            assert tgt == list(fn(src)), task


def test_recall_answer_is_the_value_after_the_matching_key():
    batch = make_batch("recall", 64, 4, 24, _gen(2))
    assert batch.src.shape == (64, 10) and batch.target.shape == (64, 1)
    n_keys = (24 - N_SPECIAL) // 2
    for row, (answer,) in zip(batch.src.tolist(), batch.target.tolist()):
        keys, values, sep, query = row[0:8:2], row[1:8:2], row[8], row[9]
        assert sep == SEP and len(set(keys)) == 4 and query in keys
        assert all(N_SPECIAL <= k < N_SPECIAL + n_keys <= v < 24 for k, v in zip(keys, values))
        assert answer == values[keys.index(query)]
    # the queried pair is spread over the positions
    which = [row[0:8:2].index(row[9]) for row in batch.src.tolist()]
    assert set(which) == {0, 1, 2, 3}


def test_lm_batch():
    batch = make_batch("reverse", 4, 3, 10, _gen(0))
    ids, labels = as_lm_batch(batch)
    assert ids.shape == labels.shape == (4, 3 + 1 + 3)
    full = torch.cat([batch.src, torch.full((4, 1), SEP), batch.target, torch.full((4, 1), EOS)], 1)
    assert torch.equal(ids, full[:, :-1])
    assert (labels[:, :3] == -100).all() and torch.equal(labels[:, 3:], batch.tgt_out)


def test_device_argument_and_errors():
    assert make_batch("copy", 2, 3, 8, _gen(), device="cpu").src.device.type == "cpu"
    assert PAD == 0
    with pytest.raises(ValueError, match=r"^task:"):
        make_batch("add", 2, 3, 8, _gen())
    with pytest.raises(ValueError, match=r"^vocab_size:"):
        make_batch("copy", 2, 3, 4, _gen())
    with pytest.raises(ValueError, match=r"^seq_len:"):
        make_batch("recall", 2, 5, 12, _gen())       # only 4 distinct keys available
    with pytest.raises(ValueError, match=r"^batch_size:"):
        make_batch("copy", 0, 3, 8, _gen())
