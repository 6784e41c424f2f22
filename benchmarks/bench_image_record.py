"""ImageRecordIter throughput: minimod against MXNet 1.9.1 on the same JPEG RecordIO file.

    python benchmarks/bench_image_record.py [--mxnet-python /tmp/mxenv/bin/python]
                                            [--images 256] [--rounds 5] [--threads 2]

Writes a synthetic .rec of `--images` JPEG images (240-360 pixels a side, quality 90, smooth
content so the files are photo-sized) into a temporary folder, then times an ImageNet-style
training pipeline in each library: resize the short side to 256, random 224 x 224 crop,
random mirror, mean/std normalisation, shuffle, batch 32, `--threads` decoding threads. Each
round is one pass over the file, in a fresh process per library, the libraries taking turns
round after round (the same seconds of the machine); one warm-up pass per process first.
Prints images/s per round, the medians and the ratio minimod / MXNet. By hand, never in CI.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

PASS = r"""
import json, sys, time
if sys.argv[1] == "mxnet":
    import mxnet as mx
else:
    sys.path.insert(0, sys.argv[4])
    import minimod as mx
it = mx.io.ImageRecordIter(path_imgrec=sys.argv[2], data_shape=(3, 224, 224), batch_size=32,
                           resize=256, rand_crop=True, rand_mirror=True, mean_r=123.68,
                           mean_g=116.28, mean_b=103.53, std_r=58.4, std_g=57.1, std_b=57.4,
                           preprocess_threads=int(sys.argv[3]), shuffle=True)
for batch in it:  # warm-up pass
    pass
it.reset()
start, n = time.perf_counter(), 0
for batch in it:
    batch.data[0].wait_to_read()
    n += batch.data[0].shape[0] - batch.pad
print(json.dumps({"images_per_s": n / (time.perf_counter() - start)}))
"""


def write_rec(path: str, count: int) -> None:
    import cv2
    import numpy as np

    sys.path.insert(0, ROOT)
    import minimod as mx
    rng = np.random.RandomState(0)
    writer = mx.recordio.MXRecordIO(path, "w")
    for i in range(count):
        h, w = rng.randint(240, 360, 2)
        small = rng.randint(0, 256, (h // 8, w // 8, 3)).astype(np.uint8)
        ok, buf = cv2.imencode(".jpg", cv2.resize(small, (int(w), int(h))),
                               [cv2.IMWRITE_JPEG_QUALITY, 90])
        writer.write(mx.recordio.pack(mx.recordio.IRHeader(0, float(i % 10), i, 0),
                                      buf.tobytes()))
    writer.close()


def one_pass(python: str, engine: str, rec: str, threads: int) -> float:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([python, "-c", PASS, engine, rec, str(threads), ROOT], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["images_per_s"]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mxnet-python", default="/tmp/mxenv/bin/python")
    p.add_argument("--images", type=int, default=256)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        rec = os.path.join(folder, "bench.rec")
        write_rec(rec, args.images)
        rounds = {"minimod": [], "mxnet": []}
        for r in range(args.rounds):
            for engine, python in (("minimod", sys.executable),
                                   ("mxnet", args.mxnet_python)):
                rounds[engine].append(one_pass(python, engine, rec, args.threads))
            print("round %d: minimod %.0f, MXNet %.0f images/s"
                  % (r + 1, rounds["minimod"][-1], rounds["mxnet"][-1]), flush=True)
    ratios = [a / b for a, b in zip(rounds["minimod"], rounds["mxnet"])]
    print("| library | images/s median [min-max] |\n|---|---|")
    for engine in ("minimod", "mxnet"):
        values = rounds[engine]
        print("| %s | %.0f [%.0f-%.0f] |" % (engine, statistics.median(values), min(values),
                                             max(values)))
    print("minimod / MXNet, per round: median %.2f [%.2f-%.2f]"
          % (statistics.median(ratios), min(ratios), max(ratios)))


if __name__ == "__main__":
    main()
