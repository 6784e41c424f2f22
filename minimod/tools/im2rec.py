"""im2rec: image folders to image lists (.lst) and RecordIO files (.rec + .idx), MXNet's way.

Two passes, as with MXNet's `tools/im2rec.py`, with the same arguments and the same files:

    python -m minimod.tools.im2rec data/train images/ --list --recursive   # data/train.lst
    python -m minimod.tools.im2rec data/train images/ --resize 256         # data/train.rec/.idx

1. `--list` walks `root` and writes `<prefix>.lst`: one line per image, "index<TAB>label<TAB>
   relative path", labels as floats ("%f"). With `--recursive` every folder holding images is
   one class, numbered in the walk's order (folders and files sorted; the mapping is printed);
   without it, only `root`'s own files are listed, all with label 0. The list is shuffled with
   Python's `random` seeded with 100, as MXNet's is, so the same folder gives the same list
   (`--no-shuffle` keeps the walk's order). `--chunks` splits it; `--train-ratio` and
   `--test-ratio` write `_train`, `_val` and `_test` lists instead of one.
2. Otherwise every `<prefix>*.lst` beside `prefix` becomes a `.rec` and an `.idx` of the same
   name. Each image is read with OpenCV (`--color` 1, 0 or -1: colour, grey or as stored),
   optionally cut to its centre square (`--center-crop`) and resized so its shorter edge is
   `--resize` pixels, then encoded (`--encoding` .jpg or .png, `--quality`) behind a record
   header (flag 0, the list's label, the list's index as id). `--pass-through` stores the
   file's bytes as they are; `--pack-label` keeps every label column of a multi-label list.
   `--num-thread` N encodes in N processes; records keep the list's order either way.

Where this bends MXNet's script: an image that cannot be read or encoded is reported and
skipped in every mode (MXNet's single-process path crashes on it), and the .rec and .idx are
written to temporary files and moved into place at the end, so an interrupted run leaves the
old files, not half-written ones.

`minimod.test_utils.get_im2rec_path()` gives this file's path, for code that runs
`python <path> ...` as it runs MXNet's script.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import sys
import time

import numpy as np

from minimod import recordio

__all__ = ["list_images", "write_lists", "read_list", "encode_item", "make_records", "main"]


# ---------------------------------------------------------------------------- the lists
def list_images(root: str, recursive: bool, exts) -> tuple:
    """([(index, path relative to root, label)], {folder relative to root: label}).

    Recursive: every folder with images is a class, numbered as the sorted walk meets it.
    Flat: `root`'s own files, label 0."""
    exts = {e.lower() for e in exts}
    items, classes = [], {}
    if recursive:
        for path, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(path, name)
                if os.path.splitext(name)[1].lower() in exts and os.path.isfile(full):
                    label = classes.setdefault(path, len(classes))
                    items.append((len(items), os.path.relpath(full, root), label))
    else:
        for name in sorted(os.listdir(root)):
            full = os.path.join(root, name)
            if os.path.splitext(name)[1].lower() in exts and os.path.isfile(full):
                items.append((len(items), os.path.relpath(full, root), 0))
    return items, {os.path.relpath(k, root): v for k, v in classes.items()}


def _write_list(path: str, items) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for index, rel, *labels in items:
            f.write("%d\t%s%s\n" % (index, "".join("%f\t" % x for x in labels), rel))
    os.replace(tmp, path)


def write_lists(prefix: str, items: list, chunks: int = 1, train_ratio: float = 1.0,
                test_ratio: float = 0.0, shuffle: bool = True) -> list:
    """Write the .lst file(s) of `items` (list_images' tuples); returns the paths written."""
    if chunks < 1:
        raise ValueError("im2rec: --chunks must be at least 1, got %d" % chunks)
    items = list(items)
    if shuffle:
        random.seed(100)
        random.shuffle(items)
    size = (len(items) + chunks - 1) // chunks
    written = []
    for c in range(chunks):
        part = items[c * size:(c + 1) * size]
        stem = prefix + ("_%d" % c if chunks > 1 else "")
        n_train, n_test = int(size * train_ratio), int(size * test_ratio)
        if train_ratio == 1.0:
            outputs = [(stem + ".lst", part)]
        else:
            outputs = []
            if test_ratio:
                outputs.append((stem + "_test.lst", part[:n_test]))
            if train_ratio + test_ratio < 1.0:
                outputs.append((stem + "_val.lst", part[n_test + n_train:]))
            outputs.append((stem + "_train.lst", part[n_test:n_test + n_train]))
        for path, rows in outputs:
            _write_list(path, rows)
            written.append(path)
    return written


def read_list(path: str) -> list:
    """[(index, relative path, label, ...)] of a .lst file; malformed lines are reported and
    skipped."""
    items = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            fields = [x.strip() for x in line.strip().split("\t")]
            if len(fields) < 3:
                print("im2rec: %s line %d has %d fields, needs at least 3 (index, label, path);"
                      " skipped" % (path, number, len(fields)))
                continue
            try:
                items.append((int(fields[0]), fields[-1]) + tuple(float(x) for x in fields[1:-1]))
            except ValueError as err:
                print("im2rec: %s line %d: %s; skipped" % (path, number, err))
    return items


# ---------------------------------------------------------------------------- the records
def _resized(cv2, img: np.ndarray, center_crop: bool, resize: int) -> np.ndarray:
    h, w = img.shape[:2]
    if center_crop:
        side = min(h, w)
        top, left = (h - side) // 2, (w - side) // 2
        img = img[top:top + side, left:left + side]
        h = w = side
    if resize:
        size = (resize, h * resize // w) if h > w else (w * resize // h, resize)  # (w, h)
        img = cv2.resize(img, size)
    return img


def encode_item(options: dict, item: tuple):
    """The record of list item `item` (index, path, label ...), or None (reported) when the
    image cannot be read or encoded. `options`: root, color, center_crop, resize, quality,
    encoding, pass_through, pack_label."""
    index, rel, *labels = item
    label = labels if len(labels) > 1 and options["pack_label"] else labels[0]
    header = recordio.IRHeader(0, label, index, 0)
    path = os.path.join(options["root"], rel)
    try:
        if options["pass_through"]:
            with open(path, "rb") as f:
                return recordio.pack(header, f.read())
        cv2 = recordio.opencv()
        img = cv2.imread(path, options["color"])
        if img is None:
            print("im2rec: OpenCV cannot read %s; skipped" % path)
            return None
        img = _resized(cv2, img, options["center_crop"], options["resize"])
        return recordio.pack_img(header, img, quality=options["quality"],
                                 img_fmt=options["encoding"])
    except (OSError, ValueError) as err:
        print("im2rec: %s: %s; skipped" % (path, err))
        return None


def _encode_pair(args: tuple):
    options, item = args
    return item, encode_item(options, item)


def make_records(list_path: str, options: dict, num_thread: int = 1) -> int:
    """Write the .rec and .idx beside `list_path` from its images; returns how many records
    were written. Both files appear only when complete."""
    stem = os.path.splitext(list_path)[0]
    rec, idx = stem + ".rec", stem + ".idx"
    writer = recordio.MXIndexedRecordIO(idx + ".tmp", rec + ".tmp", "w")
    items = read_list(list_path)
    jobs = ((options, item) for item in items)
    pool = multiprocessing.Pool(num_thread) if num_thread > 1 else None
    written, start = 0, time.time()
    try:
        results = pool.imap(_encode_pair, jobs, chunksize=16) if pool else map(_encode_pair,
                                                                               jobs)
        for count, (item, record) in enumerate(results):
            if record is not None:
                writer.write_idx(item[0], record)
                written += 1
            if count % 1000 == 0:
                print("im2rec: %d of %d images, %.1f s" % (count, len(items),
                                                           time.time() - start))
    finally:
        if pool is not None:
            pool.close()
            pool.join()
        writer.close()
    os.replace(rec + ".tmp", rec)
    os.replace(idx + ".tmp", idx)
    return written


# ---------------------------------------------------------------------------- the command
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="Make an image list (--list) or the RecordIO "
                                            "files of image lists, as MXNet's im2rec.py")
    p.add_argument("prefix", help="prefix of the .lst files to write or read (and of the "
                                  ".rec/.idx files)")
    p.add_argument("root", help="folder holding the images")
    lists = p.add_argument_group("making lists")
    lists.add_argument("--list", action="store_true", help="write <prefix>.lst from root")
    lists.add_argument("--exts", nargs="+", default=[".jpeg", ".jpg", ".png"],
                       help="file extensions that count as images")
    lists.add_argument("--chunks", type=int, default=1, help="number of chunks")
    lists.add_argument("--train-ratio", type=float, default=1.0,
                       help="share of each chunk in the _train list")
    lists.add_argument("--test-ratio", type=float, default=0,
                       help="share of each chunk in the _test list")
    lists.add_argument("--recursive", action="store_true",
                       help="one class per folder, walking root's subfolders")
    lists.add_argument("--no-shuffle", dest="shuffle", action="store_false",
                       help="keep the walk's order")
    recs = p.add_argument_group("making records")
    recs.add_argument("--pass-through", action="store_true",
                      help="store the files' bytes without decoding them")
    recs.add_argument("--resize", type=int, default=0,
                      help="resize the shorter edge to this many pixels (0: keep)")
    recs.add_argument("--center-crop", action="store_true", help="cut the centre square")
    recs.add_argument("--quality", type=int, default=95,
                      help="JPEG quality (0-100) or PNG compression (0-9)")
    recs.add_argument("--num-thread", type=int, default=1, help="encoding processes")
    recs.add_argument("--color", type=int, default=1, choices=[-1, 0, 1],
                      help="1: colour, 0: grey, -1: as stored (alpha kept)")
    recs.add_argument("--encoding", default=".jpg", choices=[".jpg", ".png"],
                      help="image encoding inside the records")
    recs.add_argument("--pack-label", action="store_true",
                      help="keep every label column of the list in the header")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    prefix, root = os.path.abspath(args.prefix), os.path.abspath(args.root)
    if args.list:
        items, classes = list_images(root, args.recursive, args.exts)
        for folder, label in sorted(classes.items(), key=lambda kv: kv[1]):
            print(folder, label)
        write_lists(prefix, items, args.chunks, args.train_ratio, args.test_ratio,
                    args.shuffle)
        return 0
    folder = prefix if os.path.isdir(prefix) else os.path.dirname(prefix)
    lists = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                   if os.path.join(folder, f).startswith(prefix) and f.endswith(".lst")
                   and os.path.isfile(os.path.join(folder, f)))
    if not lists:
        print("im2rec: no .lst file with prefix %s" % prefix)
        return 1
    options = dict(root=root, color=args.color, center_crop=args.center_crop,
                   resize=args.resize, quality=args.quality, encoding=args.encoding,
                   pass_through=args.pass_through, pack_label=args.pack_label)
    for path in lists:
        print("im2rec: making %s.rec from %s" % (os.path.splitext(path)[0], path))
        make_records(path, options, args.num_thread)
    return 0


if __name__ == "__main__":
    sys.exit(main())
