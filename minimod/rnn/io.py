"""Sentence encoding and the bucketing iterator of MXNet's `mx.rnn.io`.

`BucketSentenceIter` groups sentences into buckets by length (each padded with `invalid_label`
to its bucket's length), and serves batches of one bucket at a time, each tagged with its
`bucket_key` so that BucketingModule picks the graph unrolled to that length. The label of a
sentence is the sentence shifted one step left, with `invalid_label` in the last place.
Shuffling uses Python's `random` for the batch order and `np.random` within each bucket, as
MXNet does, so seeding both reproduces MXNet's epochs.
"""
from __future__ import annotations

import bisect
import random
from typing import Optional, Sequence

import numpy as np

from .. import ndarray
from ..io import DataBatch, DataDesc, DataIter

__all__ = ["encode_sentences", "BucketSentenceIter"]


def encode_sentences(sentences: Sequence[Sequence[str]], vocab: Optional[dict] = None,
                     invalid_label: int = -1, invalid_key: str = "\n", start_label: int = 0,
                     unknown_token: Optional[str] = None) -> tuple:
    """Turn token lists into integer lists: returns (encoded sentences, vocab).

    Without `vocab` a new one is built ({invalid_key: invalid_label} plus every token, numbered
    from `start_label`, skipping `invalid_label`). With a given `vocab`, an unseen token is an
    error unless `unknown_token` is set, in which case unseen tokens map to it (added to the
    vocabulary on first use).
    """
    next_index = start_label
    new_vocab = vocab is None
    if new_vocab:
        vocab = {invalid_key: invalid_label}
    encoded = []
    for sentence in sentences:
        codes = []
        for word in sentence:
            if word not in vocab:
                if not (new_vocab or unknown_token):
                    raise KeyError("Unknown token %s" % word)
                if next_index == invalid_label:
                    next_index += 1
                if unknown_token:
                    word = unknown_token
                vocab[word] = next_index
                next_index += 1
            codes.append(vocab[word])
        encoded.append(codes)
    return encoded, vocab


def _fill_buckets(sentences, buckets: list, invalid_label: int, dtype: str) -> tuple:
    """(the buckets that got sentences, one (rows, length) array per such bucket, how many
    sentences were too long for every bucket). Each sentence goes to the smallest bucket that
    holds it, padded with `invalid_label`."""
    per_bucket: list = [[] for _ in buckets]
    used = [False] * len(buckets)
    ndiscard = 0
    for sentence in sentences:
        b = bisect.bisect_left(buckets, len(sentence))
        if b == len(buckets):
            ndiscard += 1
            continue
        used[b] = True
        row = np.full((buckets[b],), invalid_label, dtype=dtype)
        row[:len(sentence)] = sentence
        per_bucket[b].append(row)
    kept = [length for length, u in zip(buckets, used) if u]
    return kept, [np.asarray(rows, dtype=dtype) for rows in per_bucket if rows], ndiscard


class BucketSentenceIter(DataIter):
    """Batches of equal-length (padded) sentences, one bucket per batch.

    `buckets` defaults to every sentence length that occurs at least `batch_size` times;
    sentences longer than the largest bucket are dropped (with a printed warning, as MXNet).
    `layout` 'NT' gives (batch, length) arrays, 'TN' (length, batch).
    `provide_data`/`provide_label` describe the largest bucket (`default_bucket_key`); every
    batch carries its own.
    """

    def __init__(self, sentences: Sequence[Sequence[int]], batch_size: int,
                 buckets: Optional[list] = None, invalid_label: int = -1,
                 data_name: str = "data", label_name: str = "softmax_label",
                 dtype: str = "float32", layout: str = "NT"):
        super().__init__(batch_size)
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [length for length, n in enumerate(counts) if n >= batch_size]
        buckets, self.data, ndiscard = _fill_buckets(sentences, sorted(buckets), invalid_label,
                                                     dtype)
        print("WARNING: discarded %d sentences longer than the largest bucket." % ndiscard)
        if layout not in ("NT", "TN"):
            raise ValueError("Invalid layout %s: Must by NT (batch major) or TN (time major)"
                             % layout)
        self.batch_size = batch_size
        self.buckets = buckets
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.major_axis = layout.find("N")
        self.layout = layout
        self.default_bucket_key = max(buckets)
        shape = (batch_size, self.default_bucket_key) if self.major_axis == 0 \
            else (self.default_bucket_key, batch_size)
        self.provide_data = [DataDesc(name=data_name, shape=shape, layout=layout)]
        self.provide_label = [DataDesc(name=label_name, shape=shape, layout=layout)]
        self.idx = [(b, start) for b, rows in enumerate(self.data)
                    for start in range(0, len(rows) - batch_size + 1, batch_size)]
        self.curr_idx = 0
        self.nddata: list = []
        self.ndlabel: list = []
        self.reset()

    def reset(self) -> None:
        """Start an epoch: shuffle the batch order and the sentences within each bucket."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for rows in self.data:
            np.random.shuffle(rows)
        self.nddata = []
        self.ndlabel = []
        for rows in self.data:
            label = np.empty_like(rows)
            label[:, :-1] = rows[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(rows.copy())
            self.ndlabel.append(label)

    def next(self) -> DataBatch:
        """The next batch; raises StopIteration at the end of the epoch."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        b, start = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[b][start:start + self.batch_size]
        label = self.ndlabel[b][start:start + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        data = ndarray.array(data, dtype=self.dtype)
        label = ndarray.array(label, dtype=self.dtype)
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[b],
                         provide_data=[DataDesc(name=self.data_name, shape=data.shape,
                                                layout=self.layout)],
                         provide_label=[DataDesc(name=self.label_name, shape=label.shape,
                                                 layout=self.layout)])
