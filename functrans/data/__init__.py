"""Small data sets shipped with functrans, so examples run without downloads.

``load_digits`` reads the UCI handwritten digits (8x8 images, 1,797 of them) bundled as
``digits.csv.gz``; see the README next to it for the source and the license (CC BY 4.0).

    >>> images, labels = load_digits()
    >>> images.shape, labels.shape
    ((1797, 64), (1797,))
"""
from __future__ import annotations

import gzip
import pathlib

import numpy as np

__all__ = ["load_digits", "train_test_split"]

_DIGITS = pathlib.Path(__file__).with_name("digits.csv.gz")


def load_digits():
    """The UCI handwritten digits: ``(images, labels)``.

    ``images`` is ``uint8[1797, 64]`` (8x8 pixels, row by row, values 0..16) and ``labels``
    is ``int64[1797]`` (the digit 0..9). Read from the gzip-compressed CSV inside the package.

    >>> images, labels = load_digits()
    >>> int(images.max()), labels[:5].tolist()
    (16, [0, 1, 2, 3, 4])
    """
    with gzip.open(_DIGITS, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64)
    return table[:, :-1].astype(np.uint8), table[:, -1]


def train_test_split(*arrays, test_fraction=0.2, seed=0):
    """Shuffle the rows of ``arrays`` together (a seeded permutation, so the split is the same
    every run) and return ``train_0, test_0, train_1, test_1, ...``.

    >>> x_train, x_test = train_test_split(np.arange(10), test_fraction=0.3)
    >>> len(x_train), len(x_test), sorted(np.concatenate([x_train, x_test]).tolist()) == list(range(10))
    (7, 3, True)
    """
    n = len(arrays[0])
    order = np.random.default_rng(seed).permutation(n)
    n_test = int(round(n * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return [part for a in arrays for part in (np.asarray(a)[train], np.asarray(a)[test])]
