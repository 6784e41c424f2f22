"""`mx.contrib.text.embedding`: pre-trained token vectors, indexed like a Vocabulary.

A token embedding file has one token a line followed by its vector, separated by
`elem_delim`. Loading keeps the first vector of a repeated token (warning about the others),
skips a line with a one-number vector (a header, such as fastText's "count dimension"), and
takes a line of the unknown token as the unknown vector; otherwise the unknown vector is
`init_unknown_vec(shape=vec_len)`. With a `vocabulary`, the embedding is re-indexed to it: its
tokens in the vocabulary's order, each with its loaded vector (or the unknown one).

GloVe and FastText read `embedding_root/glove/<file>` and `embedding_root/fasttext/<file>`.
minimod downloads nothing: a missing file is an error naming the path, and any file loads with
CustomEmbedding. The known file names (`get_pretrained_file_names`) are MXNet 1.9.1's, kept
in pretrained_names.json.
"""
from __future__ import annotations

import json
import logging
import os
import warnings
from typing import Optional

import numpy as np

from ... import ndarray as nd
from ...base import MXNetError
from . import vocab as _vocab

__all__ = ["register", "create", "get_pretrained_file_names", "GloVe", "FastText",
           "CustomEmbedding", "CompositeEmbedding"]

_REGISTRY: dict = {}
_DEFAULT_ROOT = os.path.join("~", ".mxnet", "embeddings")


def register(embedding_cls):
    """Register a token-embedding class under its lower-case name (a class decorator)."""
    _REGISTRY[embedding_cls.__name__.lower()] = embedding_cls
    return embedding_cls


def create(embedding_name: str, **kwargs):
    """An instance of the registered embedding `embedding_name` ('glove', 'fasttext' ...)."""
    cls = _REGISTRY.get(embedding_name.lower())
    if cls is None:
        raise KeyError("Cannot find `embedding_name` %s. Use `get_pretrained_file_names()` to "
                       "get all the valid embedding names." % embedding_name)
    return cls(**kwargs)


def get_pretrained_file_names(embedding_name: Optional[str] = None):
    """{embedding name: its pre-trained file names}, or one embedding's list."""
    with open(os.path.join(os.path.dirname(__file__), "pretrained_names.json")) as f:
        names = json.load(f)
    if embedding_name is None:
        return names
    if embedding_name.lower() not in names:
        raise KeyError("Cannot find `embedding_name` %s." % embedding_name)
    return names[embedding_name.lower()]


def _read_vectors(path: str, elem_delim: str, encoding: str, unknown_token: str) -> tuple:
    """(tokens, their vectors, the unknown token's vector or None) of an embedding file."""
    tokens, rows, unknown, seen = [], [], None, set()
    with open(path, "r", encoding=encoding) as f:
        for number, line in enumerate(f, 1):
            elems = line.rstrip().split(elem_delim)
            if len(elems) < 2:
                raise _vocab.TextError("line %d of the token embedding file %s has no vector"
                                 % (number, path))
            token, vector = elems[0], [float(v) for v in elems[1:]]
            if token == unknown_token and unknown is None:
                unknown = vector
                seen.add(token)
            elif token in seen:
                warnings.warn("line %d of %s repeats token %r; its first vector is kept"
                              % (number, path, token))
            elif len(vector) == 1:
                warnings.warn("line %d of %s has a one-number vector (a header?); skipped"
                              % (number, path))
            else:
                if rows and len(vector) != len(rows[0]):
                    raise _vocab.TextError("line %d of %s: token %r has %d numbers, the tokens "
                                     "before it %d" % (number, path, token, len(vector),
                                                       len(rows[0])))
                tokens.append(token)
                rows.append(vector)
                seen.add(token)
    if not rows:
        raise MXNetError("the token embedding file %s holds no vector" % path)
    return tokens, rows, unknown


class _TokenEmbedding(_vocab.Vocabulary):
    """A Vocabulary whose tokens carry vectors (`idx_to_vec`, one row per index)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._vec_len = None
        self._idx_to_vec = None

    @property
    def vec_len(self) -> int:
        return self._vec_len

    @property
    def idx_to_vec(self):
        return self._idx_to_vec

    def _load_embedding(self, path: str, elem_delim: str, init_unknown_vec,
                        encoding: str = "utf8") -> None:
        path = os.path.expanduser(path)
        if not os.path.isfile(path):
            raise ValueError("`pretrained_file_path` must be a valid path to the pre-trained "
                             "token embedding file, got %r" % path)
        logging.info("Loading pre-trained token embedding vectors from %s", path)
        tokens, rows, unknown = _read_vectors(path, elem_delim, encoding, self.unknown_token)
        for token in tokens:
            self._token_to_idx[token] = len(self._idx_to_token)
            self._idx_to_token.append(token)
        self._vec_len = len(rows[0])
        table = np.zeros((len(rows) + 1, self._vec_len), np.float32)
        table[1:] = rows
        self._idx_to_vec = nd.array(table)
        self._idx_to_vec[_vocab.UNKNOWN_IDX] = nd.array(unknown) if unknown is not None \
            else init_unknown_vec(shape=self._vec_len)

    def _reindex(self, vocabulary, embeddings: list) -> None:
        """Become `vocabulary`'s index, each token with the vectors of `embeddings` side by
        side (the unknown token with their unknown vectors)."""
        width = sum(e.vec_len for e in embeddings)
        table = nd.zeros((len(vocabulary), width))
        col = 0
        for emb in embeddings:
            table[0, col:col + emb.vec_len] = emb.idx_to_vec[0]
            if len(vocabulary) > 1:
                table[1:, col:col + emb.vec_len] = emb.get_vecs_by_tokens(
                    vocabulary.idx_to_token[1:])
            col += emb.vec_len
        self._vec_len, self._idx_to_vec = width, table
        self._token_to_idx = dict(vocabulary.token_to_idx)
        self._idx_to_token = list(vocabulary.idx_to_token)
        self._unknown_token = vocabulary.unknown_token
        self._reserved_tokens = None if vocabulary.reserved_tokens is None \
            else list(vocabulary.reserved_tokens)

    def _for_vocabulary(self, vocabulary) -> None:
        if vocabulary is not None:
            if not isinstance(vocabulary, _vocab.Vocabulary):
                raise _vocab.TextTypeError("vocabulary must be a mx.contrib.text.vocab.Vocabulary")
            self._reindex(vocabulary, [self])

    def get_vecs_by_tokens(self, tokens, lower_case_backup: bool = False):
        """The vector of a token (1-D) or of a list of tokens (2-D); unknown tokens get the
        unknown vector; with lower_case_backup a token not found is looked up in lower
        case."""
        single = not isinstance(tokens, list)
        lookup = self._token_to_idx
        indices = []
        for token in [tokens] if single else tokens:
            idx = lookup.get(token)
            if idx is None and lower_case_backup:
                idx = lookup.get(token.lower())
            indices.append(_vocab.UNKNOWN_IDX if idx is None else idx)
        vecs = nd.take(self._idx_to_vec, nd.array(indices), axis=0)
        return vecs[0] if single else vecs

    def update_token_vectors(self, tokens, new_vectors) -> None:
        """Replace the vectors of known tokens (a token and a 1-D or 2-D array, or a list of
        tokens and a 2-D array of one row each)."""
        if not isinstance(tokens, list):
            tokens = [tokens]
        if len(new_vectors.shape) == 1:
            new_vectors = new_vectors.reshape((1, -1))
        if new_vectors.shape != (len(tokens), self._vec_len):
            raise _vocab.TextError("new_vectors has shape %s; %d tokens of %d numbers need (%d, %d)"
                             % (new_vectors.shape, len(tokens), self._vec_len, len(tokens),
                                self._vec_len))
        for token, row in zip(tokens, range(len(tokens))):
            if token not in self._token_to_idx:
                raise ValueError("Token %s is unknown. To update the embedding vector for an "
                                 "unknown token, please specify it explicitly as the "
                                 "`unknown_token` %s in `tokens`." % (token,
                                                                     self._idx_to_token[0]))
            self._idx_to_vec[self._token_to_idx[token]] = new_vectors[row]


class _PretrainedFile(_TokenEmbedding):
    """GloVe and FastText: a named file under embedding_root/<class name in lower case>/."""

    def __init__(self, pretrained_file_name: str, embedding_root: str = _DEFAULT_ROOT,
                 init_unknown_vec=nd.zeros, vocabulary=None, **kwargs):
        super().__init__(**kwargs)
        path = os.path.join(os.path.expanduser(embedding_root), type(self).__name__.lower(),
                            pretrained_file_name)
        if not os.path.isfile(path):
            raise MXNetError("%s file %r is not at %s; minimod does not download embeddings: "
                             "put the file there, or load any file with CustomEmbedding"
                             % (type(self).__name__, pretrained_file_name, path))
        self._load_embedding(path, " ", init_unknown_vec)
        self._for_vocabulary(vocabulary)


@register
class GloVe(_PretrainedFile):
    """GloVe vectors (Pennington et al., 2014) from embedding_root/glove/<file>."""

    def __init__(self, pretrained_file_name: str = "glove.840B.300d.txt", **kwargs):
        super().__init__(pretrained_file_name, **kwargs)


@register
class FastText(_PretrainedFile):
    """fastText vectors (Bojanowski et al., 2017) from embedding_root/fasttext/<file>."""

    def __init__(self, pretrained_file_name: str = "wiki.simple.vec", **kwargs):
        super().__init__(pretrained_file_name, **kwargs)


class CustomEmbedding(_TokenEmbedding):
    """Token vectors from any file (`elem_delim` between the token and its numbers)."""

    def __init__(self, pretrained_file_path: str, elem_delim: str = " ",
                 encoding: str = "utf8", init_unknown_vec=nd.zeros, vocabulary=None,
                 **kwargs):
        super().__init__(**kwargs)
        self._load_embedding(pretrained_file_path, elem_delim, init_unknown_vec, encoding)
        self._for_vocabulary(vocabulary)


class CompositeEmbedding(_TokenEmbedding):
    """The vectors of several embeddings side by side, for the tokens of `vocabulary`."""

    def __init__(self, vocabulary, token_embeddings):
        if not isinstance(vocabulary, _vocab.Vocabulary):
            raise _vocab.TextTypeError("vocabulary must be a mx.contrib.text.vocab.Vocabulary")
        embeddings = token_embeddings if isinstance(token_embeddings, list) \
            else [token_embeddings]
        for emb in embeddings:
            if not isinstance(emb, _TokenEmbedding):
                raise _vocab.TextTypeError("token_embeddings must be token embeddings, got %s"
                                % type(emb).__name__)
        super().__init__()
        self._reindex(vocabulary, embeddings)
