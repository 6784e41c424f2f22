"""What the opfuzz families share."""


class Cases(list):
    """The cases a family's `gen` returns: `add(op, params, shapes, **how)` appends one
    (run.py's docstring lists the keys of `how`)."""

    def add(self, op: str, params: dict, shapes: dict, **how) -> None:
        self.append(dict(op=op, params=params, shapes=shapes, **how))
