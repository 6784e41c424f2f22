"""mx.contrib.text calls written once for both libraries: each case takes the `mx` module
(MXNet 1.9.1 in gen_text_golden.py, minimod in tests/contrib/test_text.py) and returns a
JSON-able value or an NDArray. The embedding files are emb_a.txt (space-separated, a header
line, a duplicate token and an <unk> line) and emb_b.txt ('|'-separated)."""
import collections
import os

HERE = os.path.dirname(os.path.abspath(__file__))
TEXT = " Life is great ! \n life is good . \n The cat saw the dog . the end \n"


def _counter(mx):
    return mx.contrib.text.utils.count_tokens_from_str(TEXT, " ", "\n", True)


def _vocab(mx, **kwargs):
    return mx.contrib.text.vocab.Vocabulary(_counter(mx), **kwargs)


def _emb_a(mx, **kwargs):
    return mx.contrib.text.embedding.CustomEmbedding(os.path.join(HERE, "emb_a.txt"), **kwargs)


def _emb_b(mx, **kwargs):
    return mx.contrib.text.embedding.CustomEmbedding(os.path.join(HERE, "emb_b.txt"),
                                                     elem_delim="|", **kwargs)


def _composite(mx):
    vocab = _vocab(mx, most_freq_count=6, reserved_tokens=["<pad>"])
    return mx.contrib.text.embedding.CompositeEmbedding(vocab, [_emb_a(mx), _emb_b(mx)])


def _updated(mx):
    emb = _emb_b(mx)
    emb.update_token_vectors(["cat", "fish"], mx.nd.array([[1, 2], [3, 4]]))
    emb.update_token_vectors("the", mx.nd.array([7, 8]))
    return emb.idx_to_vec


CASES = {
    "counter": lambda mx: sorted(_counter(mx).items()),
    "counter_update": lambda mx: sorted(mx.contrib.text.utils.count_tokens_from_str(
        "a*b*a*\nB", r"\*", "\n", False, collections.Counter({"a": 2})).items()),
    "vocab": lambda mx: _vocab(mx).idx_to_token,
    "vocab_limits": lambda mx: _vocab(mx, most_freq_count=4, min_freq=1,
                                      reserved_tokens=["<pad>", "<s>"]).idx_to_token,
    "vocab_min_freq": lambda mx: _vocab(mx, min_freq=2, unknown_token="UNK").idx_to_token,
    "vocab_none": lambda mx: mx.contrib.text.vocab.Vocabulary().idx_to_token,
    "to_indices": lambda mx: _vocab(mx).to_indices(["the", "zebra", "is"]),
    "to_index": lambda mx: _vocab(mx).to_indices("life"),
    "to_tokens": lambda mx: _vocab(mx).to_tokens([0, 3, 1]),
    "emb_a_tokens": lambda mx: _emb_a(mx).idx_to_token,
    "emb_a_vecs": lambda mx: _emb_a(mx).idx_to_vec,
    "emb_a_lookup": lambda mx: _emb_a(mx).get_vecs_by_tokens(["cat", "dog", "zebra"]),
    "emb_a_lookup_lower": lambda mx: _emb_a(mx).get_vecs_by_tokens(["CAT", "Cat", "DOG"],
                                                                   lower_case_backup=True),
    "emb_a_one": lambda mx: _emb_a(mx).get_vecs_by_tokens("dog"),
    "emb_b_vocab": lambda mx: _emb_b(mx, vocabulary=_vocab(mx, most_freq_count=5)).idx_to_vec,
    "emb_b_vocab_tokens": lambda mx: _emb_b(mx, vocabulary=_vocab(mx, most_freq_count=5))
    .idx_to_token,
    "composite_vecs": lambda mx: _composite(mx).idx_to_vec,
    "composite_tokens": lambda mx: _composite(mx).idx_to_token,
    "updated": _updated,
    "names": lambda mx: sorted(mx.contrib.text.embedding.get_pretrained_file_names().keys()),
}
