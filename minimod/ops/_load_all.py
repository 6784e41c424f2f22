"""Imports every operator family once so that the registry is complete."""
from . import custom, elemwise, loss, nn, random, reduce, rnn, shape  # noqa: F401
