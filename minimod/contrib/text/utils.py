"""Token counting for `mx.contrib.text`."""
from __future__ import annotations

import collections
import re
from typing import Optional

__all__ = ["count_tokens_from_str"]


def count_tokens_from_str(source_str: str, token_delim: str = " ", seq_delim: str = "\n",
                          to_lower: bool = False,
                          counter_to_update: Optional[collections.Counter] = None
                          ) -> collections.Counter:
    """The counts of the tokens of `source_str`, split at `token_delim` and `seq_delim`
    (regular expressions; empty tokens dropped), lower-cased with `to_lower`, added to
    `counter_to_update` when given (and returned), else to a new Counter."""
    tokens = [t for t in re.split(token_delim + "|" + seq_delim, source_str) if t]
    if to_lower:
        tokens = [t.lower() for t in tokens]
    if counter_to_update is None:
        return collections.Counter(tokens)
    counter_to_update.update(tokens)
    return counter_to_update
