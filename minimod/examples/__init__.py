"""Runnable examples: `python -m minimod.examples.train_digits`, `... .train_lm`."""
