"""The bucketing example job (`python -m minimod.examples.train_lm`) at a tiny size, and the
language-modelling corpus that ships with minimod."""
import os

import numpy as np

import minimod as mx
from minimod.datasets import BOOKS, UNKNOWN_TOKEN, load_lm_corpus, load_text_corpus
from minimod.examples import train_lm

TINY = ["--sentences", "1500", "--epochs", "2", "--batch-size", "16", "--num-embed", "16",
        "--num-hidden", "32", "--vocab-size", "300", "--buckets", "10,20,30", "--lr", "0.02"]


def test_lm_corpus_is_deterministic_and_capped():
    train, valid = load_lm_corpus(vocab_size=500)
    again_train, again_valid = load_lm_corpus(vocab_size=500)
    assert train == again_train and valid == again_valid
    assert len(train) > 8000 and len(valid) > 900
    vocab = {token for sentence in train + valid for token in sentence}
    assert len(vocab) == 500 and UNKNOWN_TOKEN in vocab
    assert all(sentence and sentence[-1] in ".!?" for sentence in train[:-1][:200])
    assert all(token == token.lower() for sentence in train[:200] for token in sentence)
    for book in BOOKS:
        text = load_text_corpus(book)
        assert "Chapter" not in text[:200] and len(text.split()) > 80000


def test_train_lm_perplexity_falls(tmp_path, capsys):
    prefix = str(tmp_path / "lm")
    result = train_lm.main(TINY + ["--prefix", prefix])
    vocab_size = result["vocab_size"]
    assert 250 < vocab_size <= 301  # at most 300 words, and the padding label
    assert result["before"] > 0.8 * vocab_size  # an untrained model guesses about uniformly
    assert len(result["valid"]) == 2 and len(result["train"]) == 2
    assert result["valid"][-1] < result["before"] / 2
    assert result["valid"][-1] < result["valid"][0]
    assert result["train"][-1] < result["train"][0]
    assert result["memory"]["buckets"] == 3 and result["memory"]["total"] > 0
    out = capsys.readouterr().out
    assert "validation perplexity before training" in out and "memory held by" in out

    # the checkpoint: one symbol per bucket, the bucket keys, and parameters that score the
    # same validation perplexity after loading
    assert os.path.exists("%s-0002.params" % prefix)
    assert os.path.exists("%s.buckets" % prefix)
    for key in (10, 20, 30):
        assert os.path.exists("%s-%d-symbol.json" % (prefix, key))
    sym_gen = train_lm.lstm_sym_gen(vocab_size, 16, 32, 1, 0.3)
    loaded = mx.mod.BucketingModule.load(prefix, 2, sym_gen=sym_gen, default_bucket_key=20)
    train_words, valid_words = load_lm_corpus(vocab_size=300)
    _, vocab = mx.rnn.encode_sentences(train_words[:1500], invalid_label=0, start_label=1)
    valid_sents, _ = mx.rnn.encode_sentences(valid_words, vocab=vocab, invalid_label=0,
                                             unknown_token=UNKNOWN_TOKEN)
    loaded.bind(data_shapes=[mx.io.DataDesc("data", (16, 20), layout="NT")],
                label_shapes=[mx.io.DataDesc("softmax_label", (16, 20), layout="NT")],
                for_training=False)
    scores = []
    for mod in (result["module"], loaded):
        # the iterator shuffles in place and drops each bucket's last partial batch: a fresh
        # one from the same seed scores the same sentences
        np.random.seed(7)
        valid = mx.rnn.BucketSentenceIter(valid_sents, 16, buckets=[10, 20, 30],
                                          invalid_label=0)
        scores.append(mod.score(valid, mx.metric.Perplexity(0))[0][1])
    assert abs(scores[0] - scores[1]) < 1e-6 * scores[0], scores
