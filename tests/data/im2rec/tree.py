"""The image folder the im2rec goldens were made from, rebuilt the same way by the tests, and
the command lines run on it (RUNS):
two classes in subfolders (one nested), a stray image at the root, a non-image file, images of
several sizes and orientations. PNG, so the decoded pixels are exact everywhere."""
import os

import numpy as np

LAYOUT = {
    "cats/a.png": (9, 13), "cats/b.PNG": (12, 7), "cats/c.jpg.txt": None,
    "dogs/x.png": (10, 10), "dogs/y.png": (7, 15), "dogs/deep/z.png": (16, 9),
    "root.png": (8, 11),
}


# name: [argument lists]; "P" is the prefix, "R" the image root
RUNS = {
    "recursive": [["P", "R", "--list", "--recursive"]],
    "flat": [["P", "R", "--list", "--no-shuffle"]],
    "split": [["P", "R", "--list", "--recursive", "--chunks", "2", "--train-ratio", "0.5",
               "--test-ratio", "0.25"]],
    "png": [["P", "R", "--list", "--recursive"],
            ["P", "R", "--resize", "6", "--center-crop", "--encoding", ".png",
             "--quality", "3"]],
    "grey": [["P", "R", "--list", "--recursive", "--no-shuffle"],
             ["P", "R", "--color", "0", "--resize", "5", "--encoding", ".png"]],
    "through": [["P", "R", "--list", "--recursive"], ["P", "R", "--pass-through"]],
}


def build(root):
    import cv2
    rs = np.random.RandomState(7)
    for rel, shape in sorted(LAYOUT.items()):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if shape is None:
            with open(path, "w") as f:
                f.write("not an image")
            continue
        img = rs.randint(0, 256, size=shape + (3,)).astype(np.uint8)
        assert cv2.imwrite(path, img)
    return root
