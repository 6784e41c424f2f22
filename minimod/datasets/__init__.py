"""Small real data sets shipped with the install, so examples run without network access."""
from __future__ import annotations

import collections
import gzip
import os
import re

import numpy as np

__all__ = ["load_digits", "load_text_corpus", "load_lm_corpus", "tokenize_sentences",
           "data_path", "BOOKS", "UNKNOWN_TOKEN"]

BOOKS = ("persuasion", "prideprejudice")
UNKNOWN_TOKEN = "<unk>"
_ABBREVIATION = re.compile(r"\b(Mr|Mrs|Dr|St|Esq)\.")
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)*|[0-9]+|[,;:!?.]")
_SENTENCE_END = frozenset(".!?")

_HERE = os.path.dirname(os.path.abspath(__file__))


def data_path(name: str) -> str:
    return os.path.join(_HERE, name)


def load_digits(test_fraction: float = 0.2, seed: int = 0):
    """((train_x, train_y), (test_x, test_y)) of the UCI handwritten digits (see README.md).

    Images are float32 in [0, 1] with shape (N, 1, 8, 8); labels are float32 class ids. The
    split is a fixed stratified shuffle, so every run sees the same test set.
    """
    with np.load(data_path("digits.npz")) as f:
        images, labels = f["images"], f["labels"]
    rng = np.random.RandomState(seed)
    test_idx = []
    for digit in range(10):
        members = np.flatnonzero(labels == digit)
        rng.shuffle(members)
        test_idx.extend(members[:int(round(len(members) * test_fraction))])
    test_mask = np.zeros(len(labels), dtype=bool)
    test_mask[test_idx] = True
    x = (images.astype(np.float32) / 16.0)[:, None, :, :]
    y = labels.astype(np.float32)
    train = np.flatnonzero(~test_mask)
    rng.shuffle(train)
    return (x[train], y[train]), (x[test_mask], y[test_mask])


def load_text_corpus(name: str = "persuasion") -> str:
    """The text of a shipped novel by Jane Austen as one string (see README.md): "persuasion"
    (*Persuasion*, 1818) or "prideprejudice" (*Pride and Prejudice*, 1813). The title page
    and the chapter headings are dropped; paragraphs stay separated by blank lines."""
    if name not in BOOKS:
        raise ValueError("no shipped text %r; there are %s" % (name, ", ".join(BOOKS)))
    with gzip.open(data_path("%s.txt.gz" % name), "rt", encoding="utf-8") as f:
        text = f.read()
    start = text.find("Chapter 1\n")
    if start >= 0:
        text = text[start:]
    lines = [line for line in text.split("\n")
             if not re.fullmatch(r"\s*(Chapter \d+|Finis|[* ]+)\s*", line)]
    return "\n".join(lines).strip() + "\n"


def tokenize_sentences(text: str) -> list:
    """Lowercased sentences as lists of tokens: words (with inner apostrophes, "anne's"),
    numbers and the marks , ; : ! ? . -- each sentence ends with its . ! or ?. Quotes,
    brackets, dashes and the underscores of italics are dropped, and so is the full stop of
    Mr. Mrs. Dr. St. Esq. (which does not end a sentence)."""
    text = _ABBREVIATION.sub(r"\1", text).lower()
    sentences, current = [], []
    for token in _TOKEN.findall(text):
        current.append(token)
        if token in _SENTENCE_END:
            sentences.append(current)
            current = []
    if current:
        sentences.append(current)
    return sentences


def load_lm_corpus(vocab_size: int = 3000, valid_fraction: float = 0.1, seed: int = 0,
                   books=BOOKS):
    """(train_sentences, valid_sentences) of the shipped novels, for language modelling.

    Each sentence is a list of lowercased tokens (`tokenize_sentences`). The sentences of all
    `books` are split into train and validation by a fixed shuffle (`seed`), so every run sees
    the same split. The vocabulary is the `vocab_size - 1` most frequent training tokens (ties
    broken alphabetically) plus `UNKNOWN_TOKEN`, which replaces every other token in both
    splits.
    """
    if vocab_size < 2:
        raise ValueError("vocab_size must be at least 2, got %d" % vocab_size)
    sentences = [s for book in books for s in tokenize_sentences(load_text_corpus(book))]
    order = np.random.RandomState(seed).permutation(len(sentences))
    n_valid = int(round(len(sentences) * valid_fraction))
    valid = [sentences[i] for i in sorted(order[:n_valid])]
    train = [sentences[i] for i in sorted(order[n_valid:])]
    counts = collections.Counter(token for sentence in train for token in sentence)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    keep = {token for token, _ in ranked[:vocab_size - 1]}

    def cap(split):
        return [[t if t in keep else UNKNOWN_TOKEN for t in sentence] for sentence in split]
    return cap(train), cap(valid)
