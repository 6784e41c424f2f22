"""`mx.contrib.text.vocab.Vocabulary`: tokens indexed by frequency."""
from __future__ import annotations

import collections
from typing import Optional

from ...base import MXNetError

__all__ = ["Vocabulary", "TextError", "TextTypeError"]


class TextError(MXNetError, ValueError, AssertionError):
    """Bad input to mx.contrib.text. MXNet checks these with `assert`, so code that catches
    AssertionError (as MXNet's own tests do) catches this too."""


class TextTypeError(MXNetError, TypeError, AssertionError):
    """An argument of the wrong type given to mx.contrib.text (an `assert` in MXNet too)."""

UNKNOWN_IDX = 0


class Vocabulary:
    """An index of tokens: the unknown token at 0, the reserved tokens after it, then the
    keys of `counter` by falling frequency (ties alphabetically), at most `most_freq_count`
    of them and only those counted `min_freq` times or more. Unknown tokens map to 0."""

    def __init__(self, counter: Optional[collections.Counter] = None,
                 most_freq_count: Optional[int] = None, min_freq: int = 1,
                 unknown_token: str = "<unk>", reserved_tokens: Optional[list] = None):
        if min_freq <= 0:
            raise TextError("Vocabulary: min_freq must be positive, got %r" % min_freq)
        if reserved_tokens is not None:
            if unknown_token in reserved_tokens:
                raise TextError("Vocabulary: reserved_tokens cannot contain the unknown token "
                                 "%r" % unknown_token)
            if len(set(reserved_tokens)) != len(reserved_tokens):
                raise TextError("Vocabulary: reserved_tokens %s repeat a token"
                                 % (reserved_tokens,))
        self._unknown_token = unknown_token
        self._reserved_tokens = None if reserved_tokens is None else list(reserved_tokens)
        self._idx_to_token = [unknown_token] + list(reserved_tokens or [])
        self._token_to_idx = {t: i for i, t in enumerate(self._idx_to_token)}
        if counter is not None:
            self._index_counter(counter, most_freq_count, min_freq)

    def _index_counter(self, counter, most_freq_count, min_freq) -> None:
        if not isinstance(counter, collections.Counter):
            raise TextTypeError("Vocabulary: counter must be a collections.Counter, got %s"
                            % type(counter).__name__)
        special = set(self._idx_to_token)
        cap = len(special) + (len(counter) if most_freq_count is None else most_freq_count)
        for token, freq in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])):
            if freq < min_freq or len(self._idx_to_token) == cap:
                break
            if token not in special:
                self._token_to_idx[token] = len(self._idx_to_token)
                self._idx_to_token.append(token)

    def __len__(self) -> int:
        return len(self._idx_to_token)

    @property
    def token_to_idx(self) -> dict:
        return self._token_to_idx

    @property
    def idx_to_token(self) -> list:
        return self._idx_to_token

    @property
    def unknown_token(self) -> str:
        return self._unknown_token

    @property
    def reserved_tokens(self) -> Optional[list]:
        return self._reserved_tokens

    def to_indices(self, tokens):
        """The index of a token, or the indices of a list of tokens (0 for unknown ones)."""
        if not isinstance(tokens, list):
            return self._token_to_idx.get(tokens, UNKNOWN_IDX)
        return [self._token_to_idx.get(t, UNKNOWN_IDX) for t in tokens]

    def to_tokens(self, indices):
        """The token of an index, or the tokens of a list of indices."""
        single = not isinstance(indices, list)
        tokens = []
        for idx in [indices] if single else indices:
            if not isinstance(idx, int) or not 0 <= idx < len(self._idx_to_token):
                raise ValueError("Token index %r in the provided `indices` is invalid." % (idx,))
            tokens.append(self._idx_to_token[idx])
        return tokens[0] if single else tokens
