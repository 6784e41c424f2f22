"""The bucketing job: an LSTM language model trained on a real novel with BucketingModule.

    python -m minimod.examples.train_lm [--epochs 6] [--num-layers 1] [--buckets 10,20,30,40,50]

Reads Jane Austen's *Persuasion*, which ships with minimod (minimod/datasets), splits it into
sentences, and trains a word-level LSTM to predict each next word. Sentences are grouped by
length into buckets; each bucket gets its own unrolled graph, and all of them share one set of
parameters. Prints the validation perplexity before training, the train and validation
perplexity of every epoch, the memory held by all buckets together and where the checkpoint
went. Nothing is downloaded.

The default bucket (the one bound first, owning the parameters) is deliberately not the
largest: MXNet then allocated each larger bucket's memory anew, while minimod's buckets draw
on one pool per device whatever the default is (`BucketingModule.memory_report()`).
"""
from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import time

import numpy as np

import minimod as mx
from minimod.datasets import UNKNOWN_TOKEN, load_lm_corpus

PAD = 0  # the label of padding positions; real words are numbered from 1


def lstm_sym_gen(vocab_size: int, num_embed: int, num_hidden: int, num_layers: int,
                 dropout: float = 0.0):
    """sym_gen for BucketingModule: bucket length -> (symbol, data_names, label_names)."""
    stack = mx.rnn.SequentialRNNCell()
    for i in range(num_layers):
        if i > 0 and dropout > 0:
            stack.add(mx.rnn.DropoutCell(dropout, prefix="drop_l%d_" % i))
        stack.add(mx.rnn.LSTMCell(num_hidden=num_hidden, prefix="lstm_l%d_" % i))

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(data=data, input_dim=vocab_size, output_dim=num_embed,
                                 name="embed")
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, num_hidden))
        if dropout > 0:
            pred = mx.sym.Dropout(pred, p=dropout, name="drop_out")
        pred = mx.sym.FullyConnected(data=pred, num_hidden=vocab_size, name="pred")
        label = mx.sym.Reshape(label, shape=(-1,))
        pred = mx.sym.SoftmaxOutput(data=pred, label=label, use_ignore=True,
                                    ignore_label=PAD, name="softmax")
        return pred, ("data",), ("softmax_label",)
    return sym_gen


class PerplexityHistory:
    """Callbacks for `fit` that keep each epoch's train and validation perplexity."""

    def __init__(self):
        self.train: list = []
        self.valid: list = []
        self._epoch_train = float("nan")

    def train_batch(self, param):  # batch_end_callback; the epoch-wide value so far
        self._epoch_train = param.eval_metric.get_global()[1]

    def epoch_end(self, epoch, symbol, arg_params, aux_params):  # epoch_end_callback
        self.train.append(self._epoch_train)

    def validation_end(self, param):  # eval_end_callback
        self.valid.append(param.eval_metric.get()[1])


def _mib(nbytes: int) -> str:
    return "%.1f MiB" % (nbytes / 2.0 ** 20)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-embed", type=int, default=64)
    parser.add_argument("--num-hidden", type=int, default=128)
    parser.add_argument("--num-layers", type=int, default=1)
    parser.add_argument("--dropout", type=float, default=0.3)
    parser.add_argument("--buckets", default="10,20,30,40,50",
                        help="comma-separated sentence lengths; longer sentences are dropped")
    parser.add_argument("--default-bucket", type=int, default=None,
                        help="bucket bound first (default: the second smallest, on purpose "
                             "not the largest)")
    parser.add_argument("--vocab-size", type=int, default=3000,
                        help="most frequent words kept; the rest become %s" % UNKNOWN_TOKEN)
    parser.add_argument("--sentences", type=int, default=0,
                        help="use only the first N training sentences, in book order (0: all)")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam learning rate")
    parser.add_argument("--lr-decay", type=float, default=0.7,
                        help="factor applied to the learning rate after each epoch")
    parser.add_argument("--devices", type=int, default=1,
                        help="number of CPU contexts to split each batch over")
    parser.add_argument("--gpus", type=str, default="",
                        help="comma-separated GPU ids (needs the gpu extra)")
    parser.add_argument("--prefix", default=os.path.join("checkpoints", "lm"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    mx.random.seed(42)
    np.random.seed(42)
    random.seed(42)  # BucketSentenceIter shuffles its batch order with `random`

    buckets = sorted(int(b) for b in args.buckets.split(","))
    train_words, valid_words = load_lm_corpus(vocab_size=args.vocab_size)
    if args.sentences:
        train_words = train_words[:args.sentences]
    # padding is label 0 (PAD), so words are numbered from 1, as in MXNet's lstm_bucketing.py
    train_sents, vocab = mx.rnn.encode_sentences(train_words, invalid_label=PAD,
                                                 start_label=PAD + 1)
    valid_sents, vocab = mx.rnn.encode_sentences(valid_words, vocab=vocab, invalid_label=PAD,
                                                 unknown_token=UNKNOWN_TOKEN)
    vocab_size = max(vocab.values()) + 1  # the padding index included
    train = mx.rnn.BucketSentenceIter(train_sents, args.batch_size, buckets=buckets,
                                      invalid_label=PAD)
    # as in MXNet, each bucket's last partial batch is left out (a different one each epoch)
    valid = mx.rnn.BucketSentenceIter(valid_sents, args.batch_size, buckets=buckets,
                                      invalid_label=PAD)
    default_key = args.default_bucket or train.buckets[min(1, len(train.buckets) - 1)]
    contexts = ([mx.gpu(int(i)) for i in args.gpus.split(",")] if args.gpus
                else [mx.cpu(i) for i in range(args.devices)])
    print("minimod %s: %d training and %d validation sentences of Jane Austen's Persuasion and "
          "Pride and Prejudice, %d words in the vocabulary, buckets %s (default %d), on %s"
          % (mx.__minimod_version__, len(train_sents), len(valid_sents), vocab_size,
             train.buckets, default_key, contexts))

    mod = mx.mod.BucketingModule(
        lstm_sym_gen(vocab_size, args.num_embed, args.num_hidden, args.num_layers,
                     args.dropout),
        default_bucket_key=default_key, context=contexts)
    # bind the default bucket with its own shapes (the other buckets are bound on first use)
    # to score the untrained model; fit's own bind() then logs "Already bound" and keeps it
    shape = (args.batch_size, default_key)
    mod.bind(data_shapes=[mx.io.DataDesc("data", shape, layout="NT")],
             label_shapes=[mx.io.DataDesc("softmax_label", shape, layout="NT")])
    mod.init_params(initializer=mx.init.Xavier(factor_type="in", magnitude=2.34))
    before = mod.score(valid, mx.metric.Perplexity(PAD))[0][1]
    print("validation perplexity before training: %.1f (a uniform guess scores %d)"
          % (before, vocab_size))

    history = PerplexityHistory()
    # after each epoch (len(train.idx) batches) the learning rate shrinks by --lr-decay
    schedule = mx.lr_scheduler.FactorScheduler(step=len(train.idx), factor=args.lr_decay,
                                               base_lr=args.lr)
    os.makedirs(os.path.dirname(os.path.abspath(args.prefix)), exist_ok=True)
    start = time.time()
    mod.fit(train, eval_data=valid, eval_metric=mx.metric.Perplexity(PAD),
            num_epoch=args.epochs, optimizer="adam",
            optimizer_params={"learning_rate": args.lr, "clip_gradient": 5.0,
                              "lr_scheduler": schedule},
            batch_end_callback=[mx.callback.Speedometer(args.batch_size, frequent=50),
                                history.train_batch],
            epoch_end_callback=history.epoch_end, eval_end_callback=history.validation_end)
    elapsed = time.time() - start
    mod.save_checkpoint(args.prefix, args.epochs)

    print("perplexity by epoch (train / validation):")
    for epoch, (tr, va) in enumerate(zip(history.train, history.valid)):
        print("  epoch %d: %8.1f / %8.1f" % (epoch + 1, tr, va))
    print("validation perplexity: %.1f before training, %.1f after %d epochs (%.1f s)"
          % (before, history.valid[-1], args.epochs, elapsed))
    report = mod.memory_report()
    print("memory held by all %d buckets: %s (pool %s, inputs %s, params+grads %s)"
          % (report["buckets"], _mib(report["total"]), _mib(report["pool"]),
             _mib(report["inputs"]), _mib(report["params"])))
    prefix = os.path.abspath(args.prefix)
    print("checkpoint: %s-%04d.params, %s-<bucket>-symbol.json (one per bucket), %s.buckets"
          % (prefix, args.epochs, prefix, prefix))
    return {"before": before, "train": history.train, "valid": history.valid,
            "vocab_size": vocab_size, "memory": report, "seconds": elapsed, "module": mod}


if __name__ == "__main__":
    main()
