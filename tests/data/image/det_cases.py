"""mx.image.ImageDetIter configurations without random draws, written once for both
libraries: each builder takes the `mx` module (MXNet 1.9.1 in gen_det_iter_golden.py, minimod
in tests/image/test_detection.py) and returns (iterator, epochs to read). The records are
tests/data/io/files/detection.rec (five images, one to three boxes each, labels
[2, 5, (class, xmin, ymin, xmax, ymax) ...]); `imglist` reads pictures/*.png."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
REC = os.path.join(HERE, "..", "io", "files", "detection.rec")
IDX = os.path.join(HERE, "..", "io", "files", "detection.idx")
PICTURES = os.path.join(HERE, "pictures")

#: [label, image] entries for `imglist`: header width 2, object width 6 (a difficulty flag)
IMGLIST = [
    [[2, 6, 1, 0.1, 0.2, 0.6, 0.7, 0, 0, 0.5, 0.5, 0.9, 0.95, 1], "pic0.png"],
    [[2, 6, 2, 0.05, 0.1, 0.5, 0.4, 0], "pic1.png"],
    [[2, 6, 0, 0.3, 0.3, 0.2, 0.8, 0, 3, 0.0, 0.0, 1.0, 1.0, 0], "pic2.png"],  # one box empty
    [[2, 6, 4, 0.25, 0.25, 0.75, 0.75, 1, 5, 0.1, 0.6, 0.4, 0.9, 0, 6, 0.6, 0.1, 0.9, 0.3,
      0], "pic3.png"],
]


def plain(mx):
    return mx.image.ImageDetIter(2, (3, 16, 16), path_imgrec=REC, path_imgidx=IDX), 2


def sequential(mx):
    return mx.image.ImageDetIter(2, (3, 16, 16), path_imgrec=REC), 2


def resize_norm(mx):
    return mx.image.ImageDetIter(2, (3, 18, 14), path_imgrec=REC, path_imgidx=IDX, resize=20,
                                 mean=True, std=True, inter_method=1), 1


def discard(mx):
    return mx.image.ImageDetIter(2, (3, 12, 12), path_imgrec=REC, path_imgidx=IDX,
                                 last_batch_handle="discard"), 2


def roll_over(mx):
    return mx.image.ImageDetIter(3, (3, 12, 12), path_imgrec=REC, path_imgidx=IDX,
                                 last_batch_handle="roll_over"), 3


def mirror(mx):
    det = mx.image
    augs = [det.DetHorizontalFlipAug(1.0), det.DetBorrowAug(det.ForceResizeAug((16, 12))),
            det.DetBorrowAug(det.CastAug())]
    return mx.image.ImageDetIter(2, (3, 12, 16), path_imgrec=REC, path_imgidx=IDX,
                                 aug_list=augs), 1


def imglist(mx):
    return mx.image.ImageDetIter(3, (3, 10, 10), imglist=IMGLIST, path_root=PICTURES), 1


def reshaped(mx):
    it = mx.image.ImageDetIter(2, (3, 16, 16), path_imgrec=REC, path_imgidx=IDX)
    it.reshape(label_shape=(5, 5))
    return it, 1


def synced(mx):
    train = mx.image.ImageDetIter(3, (3, 10, 10), imglist=IMGLIST, path_root=PICTURES)
    val = mx.image.ImageDetIter(3, (3, 10, 10), imglist=IMGLIST[1:2], path_root=PICTURES)
    train.sync_label_shape(val)
    return val, 1


CASES = {"plain": plain, "sequential": sequential, "resize_norm": resize_norm,
         "discard": discard, "roll_over": roll_over, "mirror": mirror, "imglist": imglist,
         "reshaped": reshaped, "synced": synced}


def read(it, epochs):
    """{key: array} of `epochs` epochs of `it`: e<e>b<k>_data, _label, _pad, and provide."""
    out = {"provide_data": list(it.provide_data[0][1]),
           "provide_label": list(it.provide_label[0][1])}
    for e in range(epochs):
        it.reset()
        for k, batch in enumerate(it):
            out["e%db%d_data" % (e, k)] = batch.data[0].asnumpy()
            out["e%db%d_label" % (e, k)] = batch.label[0].asnumpy()
            out["e%db%d_pad" % (e, k)] = batch.pad
    return out


def drawn(mx):
    """draw_next's first image with a fixed colour, thickness 1."""
    it = mx.image.ImageDetIter(1, (3, 24, 24), path_imgrec=REC, path_imgidx=IDX)
    return next(it.draw_next(color=(255, 0, 0), thickness=1))
