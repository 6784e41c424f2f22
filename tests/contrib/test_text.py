"""mx.contrib.text: MXNet 1.9.1's results for token counts, vocabularies and embeddings
(tests/data/text, written by gen_text_golden.py from text_cases.py), and the file lookups and
refusals."""
import json
import os
import sys
import warnings

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "text")
sys.path.insert(0, HERE)
from text_cases import CASES  # noqa: E402

VALUES = json.load(open(os.path.join(HERE, "text_golden.json")))
ARRAYS = np.load(os.path.join(HERE, "text_golden.npz"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the header and repeated-token warnings
        got = CASES[name](mx)
    if name in ARRAYS.files:
        np.testing.assert_allclose(got.asnumpy(), ARRAYS[name], rtol=1e-6)
    else:
        assert json.loads(json.dumps(got)) == VALUES[name]


def test_pretrained_files_are_read_from_embedding_root(tmp_path):
    folder = tmp_path / "glove"
    folder.mkdir()
    (folder / "glove.6B.50d.txt").write_text("a 1 2\nb 3 4\n")
    emb = mx.contrib.text.embedding.create("glove", pretrained_file_name="glove.6B.50d.txt",
                                           embedding_root=str(tmp_path))
    np.testing.assert_array_equal(emb.get_vecs_by_tokens("b").asnumpy(), [3, 4])
    assert "glove.6B.50d.txt" in mx.contrib.text.embedding.get_pretrained_file_names("glove")
    with pytest.raises(MXNetError, match="minimod does not download"):
        mx.contrib.text.embedding.FastText(embedding_root=str(tmp_path))


def test_refusals():
    vocab = mx.contrib.text.vocab
    with pytest.raises(ValueError, match="repeat a token"):
        vocab.Vocabulary(reserved_tokens=["<s>", "<s>"])
    with pytest.raises(ValueError, match="unknown token"):
        vocab.Vocabulary(reserved_tokens=["<unk>"])
    with pytest.raises(ValueError, match="index 9 in the provided"):
        vocab.Vocabulary().to_tokens(9)
    emb = mx.contrib.text.embedding.CustomEmbedding(os.path.join(HERE, "emb_b.txt"),
                                                    elem_delim="|")
    with pytest.raises(ValueError, match="Token zebra is unknown"):
        emb.update_token_vectors("zebra", mx.nd.array([1, 2]))
    with pytest.raises(ValueError, match=r"\(1, 2\)"):
        emb.update_token_vectors("cat", mx.nd.array([1, 2, 3]))


def test_bad_input_errors_are_also_assertion_errors_as_mxnets_asserts():
    """MXNet checks these with `assert`: code catching AssertionError still catches them."""
    from minimod.contrib.text.vocab import TextError, TextTypeError
    with pytest.raises(AssertionError, match="min_freq must be positive"):
        mx.contrib.text.vocab.Vocabulary(min_freq=0)
    with pytest.raises(TextError, match="repeat a token"):
        mx.contrib.text.vocab.Vocabulary(reserved_tokens=["<pad>", "<pad>"])
    with pytest.raises(TextTypeError):
        mx.contrib.text.vocab.Vocabulary(counter={"a": 1})
    assert issubclass(TextError, ValueError) and issubclass(TextTypeError, TypeError)
    assert issubclass(TextError, mx.MXNetError)
