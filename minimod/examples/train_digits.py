"""The main job: train a small convolutional network on real handwritten digits.

    python -m minimod.examples.train_digits [--epochs 15] [--batch-size 32] [--gpus 0]

Trains with `Module.fit` (progress per batch group and per epoch), then prints the test accuracy
and where the checkpoint went. The data ships with minimod (minimod/datasets), so nothing is
downloaded.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time

import numpy as np

import minimod as mx
from minimod.datasets import load_digits


def convnet(num_classes: int = 10):
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=32, name="conv1")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.Convolution(net, kernel=(3, 3), pad=(1, 1), num_filter=64, name="conv2")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn2")
    net = mx.sym.Activation(net, act_type="relu", name="relu2")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    net = mx.sym.Flatten(net, name="flatten")
    net = mx.sym.FullyConnected(net, num_hidden=128, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu3")
    net = mx.sym.Dropout(net, p=0.3, name="drop")
    net = mx.sym.FullyConnected(net, num_hidden=num_classes, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--devices", type=int, default=1,
                        help="number of CPU contexts to split each batch over")
    parser.add_argument("--gpus", type=str, default="",
                        help="comma-separated GPU ids (needs the gpu extra)")
    parser.add_argument("--prefix", default=os.path.join("checkpoints", "digits"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    mx.random.seed(42)
    np.random.seed(42)

    (train_x, train_y), (test_x, test_y) = load_digits()
    train = mx.io.NDArrayIter(train_x, train_y, batch_size=args.batch_size, shuffle=True)
    test = mx.io.NDArrayIter(test_x, test_y, batch_size=args.batch_size)
    contexts = ([mx.gpu(int(i)) for i in args.gpus.split(",")] if args.gpus
                else [mx.cpu(i) for i in range(args.devices)])
    print("minimod %s: %d training and %d test digits (8x8), on %s"
          % (mx.__minimod_version__, len(train_y), len(test_y), contexts))
    mod = mx.mod.Module(convnet(), context=contexts)
    os.makedirs(os.path.dirname(os.path.abspath(args.prefix)), exist_ok=True)
    start = time.time()
    mod.fit(train, eval_data=test, eval_metric="acc", num_epoch=args.epochs,
            optimizer="sgd",
            optimizer_params={"learning_rate": args.lr, "momentum": 0.9, "wd": 1e-4},
            initializer=mx.init.Xavier(magnitude=2.0),
            batch_end_callback=mx.callback.Speedometer(args.batch_size, frequent=15),
            epoch_end_callback=mx.callback.module_checkpoint(mod, args.prefix,
                                                              period=args.epochs))
    accuracy = dict(mod.score(test, "acc"))["accuracy"]
    print("test accuracy: %.2f%% on %d held-out digits (trained in %.1f s)"
          % (100 * accuracy, len(test_y), time.time() - start))
    print("checkpoint: %s-symbol.json and %s-%04d.params"
          % (os.path.abspath(args.prefix), os.path.abspath(args.prefix), args.epochs))
    return accuracy


if __name__ == "__main__":
    main()
