"""minimod.tools.im2rec makes the lists and records MXNet 1.9.1's tools/im2rec.py makes from
the same folder (goldens in tests/data/im2rec), and ImageRecordIter reads them."""
import glob
import os
import subprocess
import sys

import numpy as np
import pytest

import minimod as mx
from minimod.tools import im2rec

cv2 = pytest.importorskip("cv2")
HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "im2rec")
sys.path.insert(0, HERE)
from tree import RUNS, build  # noqa: E402

GOLDEN = np.load(os.path.join(HERE, "im2rec_golden.npz"))


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return build(str(tmp_path_factory.mktemp("im2rec") / "images"))


def _run(name, root, out):
    prefix = os.path.join(out, name, "data")
    os.makedirs(os.path.dirname(prefix))
    for argv in RUNS[name]:
        assert im2rec.main([prefix if a == "P" else root if a == "R" else a
                            for a in argv]) == 0
    return prefix


def _records(path):
    reader = mx.recordio.MXRecordIO(path, "r")
    out = []
    while True:
        s = reader.read()
        if s is None:
            return out
        out.append(mx.recordio.unpack(s))


@pytest.mark.parametrize("name", sorted(RUNS))
def test_same_files_as_mxnet(name, images, tmp_path):
    prefix = _run(name, images, str(tmp_path))
    want = {k.split("/", 1)[1]: GOLDEN[k] for k in GOLDEN.files if k.startswith(name + "/")}
    lists = sorted(os.path.basename(p) for p in glob.glob(prefix + "*.lst"))
    assert lists == sorted(k for k in want if k.endswith(".lst"))
    for lst in lists:
        assert open(os.path.join(os.path.dirname(prefix), lst)).read() == str(want[lst]), lst
    for rec in sorted(glob.glob(prefix + "*.rec")):
        base = os.path.basename(rec)
        records = _records(rec)
        heads = [[h.flag, float(np.ravel(h.label)[0]), h.id, h.id2] for h, _ in records]
        np.testing.assert_array_equal(heads, want[base + "/headers"])
        idx = open(rec[:-4] + ".idx").read().splitlines()
        want_idx = str(want[base + "/idx"]).splitlines()
        assert [line.split("\t")[0] for line in idx] == [w.split("\t")[0] for w in want_idx]
        offsets = np.cumsum([0] + [8 + 24 + len(p) + (-(24 + len(p)) % 4)
                                   for _, p in records[:-1]])
        assert [int(line.split("\t")[1]) for line in idx] == offsets.tolist()
        if name == "through":  # the files' own bytes, whatever PNG encoder wrote them
            for (h, payload), line in zip(records, str(want["data.lst"]).splitlines()):
                assert payload == open(os.path.join(images, line.split("\t")[-1]), "rb").read()
        else:
            pixels = np.concatenate([cv2.imdecode(np.frombuffer(p, np.uint8),
                                                  cv2.IMREAD_UNCHANGED).ravel()
                                     for _, p in records])
            np.testing.assert_array_equal(pixels, want[base + "/pixels"])


def test_processes_give_the_same_records_and_the_iterator_reads_them(images, tmp_path):
    one, two = str(tmp_path / "one" / "d"), str(tmp_path / "two" / "d")
    for prefix, extra in ((one, []), (two, ["--num-thread", "2"])):
        os.makedirs(os.path.dirname(prefix))
        im2rec.main([prefix, images, "--list", "--recursive"])
        im2rec.main([prefix, images, "--resize", "8", "--center-crop", "--quality", "90"] + extra)
    assert open(one + ".rec", "rb").read() == open(two + ".rec", "rb").read()
    assert open(one + ".idx").read() == open(two + ".idx").read()
    assert not glob.glob(str(tmp_path / "*" / "*.tmp"))
    it = mx.io.ImageRecordIter(path_imgrec=one + ".rec", path_imgidx=one + ".idx",
                               data_shape=(3, 8, 8), batch_size=3)
    labels = np.concatenate([b.label[0].asnumpy() for b in it])
    assert sorted(labels.tolist()) == [0.0, 1.0, 1.0, 2.0, 2.0, 3.0]


def test_unreadable_images_are_skipped_and_bad_lines_reported(images, tmp_path, capsys):
    prefix = str(tmp_path / "d")
    with open(prefix + ".lst", "w") as f:
        f.write("0\t1.000000\tcats/a.png\n7\t2.000000\tcats/c.jpg.txt\nbroken line\n"
                "9\t0.000000\tmissing.png\n")
    assert im2rec.main([prefix, images]) == 0
    out = capsys.readouterr().out
    assert "cannot read" in out and "needs at least 3" in out
    assert [h.id for h, _ in _records(prefix + ".rec")] == [0]


def test_multi_label_lists_pack_every_label(images, tmp_path):
    prefix = str(tmp_path / "d")
    with open(prefix + ".lst", "w") as f:
        f.write("3\t1.000000\t0.500000\t2.000000\tdogs/x.png\n")
    im2rec.main([prefix, images, "--pack-label", "--encoding", ".png"])
    (header, _), = _records(prefix + ".rec")
    assert header.flag == 3 and header.label.tolist() == [1.0, 0.5, 2.0] and header.id == 3


def test_runs_as_a_script_from_get_im2rec_path(images, tmp_path):
    path = mx.test_utils.get_im2rec_path()
    assert os.path.samefile(path, im2rec.__file__)
    prefix = str(tmp_path / "d")
    proc = subprocess.run([sys.executable, path, prefix, images, "--list", "--recursive"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [". 0", "cats 1", "dogs 2", "dogs/deep 3"]
    assert open(prefix + ".lst").read() == str(GOLDEN["recursive/data.lst"])
    proc = subprocess.run([sys.executable, "-m", "minimod.tools.im2rec", prefix, images,
                           "--encoding", ".png"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(h.id for h, _ in _records(prefix + ".rec")) == [0, 1, 2, 3, 4, 5]
