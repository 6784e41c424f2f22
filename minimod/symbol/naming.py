"""Automatic names and attribute scopes, with MXNet's rules.

- `NameManager`: an unnamed op gets `<hint><n>` where hint is the lower-cased operator name as
  called (`fullyconnected0`, `_plusscalar1`) and n counts per hint. The default manager lives as
  long as the thread, so counters keep growing; `with NameManager():` starts fresh counters
  (BucketingModule does this around every `sym_gen` call so each bucket gets the same names).
- `Prefix(prefix)`: a manager that prepends `prefix` to every name, explicit ones included.
- `AttrScope(**attrs)`: string attributes attached to every symbol created inside it.
"""
from __future__ import annotations

import threading
from collections import defaultdict
from typing import Optional

from ..graph.attrs import hidden_key

__all__ = ["NameManager", "Prefix", "AttrScope", "current_name_manager", "current_attr_scope"]


class _Scoped(type):
    """The metaclass of NameManager and AttrScope: MXNet's class property `current`, this
    thread's active one (read it, or set it to make another one active)."""

    @property
    def current(cls):
        return current_name_manager() if issubclass(cls, NameManager) else current_attr_scope()

    @current.setter
    def current(cls, value) -> None:
        base = NameManager if issubclass(cls, NameManager) else AttrScope
        if not isinstance(value, base):
            raise TypeError("%s.current must be a %s, got %r" % (cls.__name__, base.__name__,
                                                                value))
        base._current.value = value


class NameManager(metaclass=_Scoped):
    """Hands out names for symbols created without one."""

    _current = threading.local()

    def __init__(self):
        self._counter: dict = {}
        self._old_manager = None

    def get(self, name: Optional[str], hint: str) -> str:
        if name:
            return name
        count = self._counter.get(hint, 0)
        self._counter[hint] = count + 1
        return "%s%d" % (hint, count)

    def __enter__(self):
        self._old_manager = current_name_manager()
        NameManager._current.value = self
        return self

    def __exit__(self, *exc):
        NameManager._current.value = self._old_manager


class Prefix(NameManager):
    """A NameManager that prefixes every name: `with Prefix('net_'):` gives `net_fc1`."""

    def __init__(self, prefix: str):
        super().__init__()
        self._prefix = prefix

    def get(self, name: Optional[str], hint: str) -> str:
        return self._prefix + super().get(name, hint)


def current_name_manager() -> NameManager:
    manager = getattr(NameManager._current, "value", None)
    if manager is None:
        manager = NameManager()
        NameManager._current.value = manager
    return manager


class AttrScope(metaclass=_Scoped):
    """Attributes attached to every symbol created inside `with AttrScope(...)`."""

    _current = threading.local()
    #: per loop kind, how many loop bodies have been named (foreach0, foreach1 ...), as
    #: MXNet counts them (process-wide; `.clear()` starts again)
    _subgraph_names: defaultdict = defaultdict(int)

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError("AttrScope: attribute %s must be a string, got %r"
                                 % (key, value))
        self._attr = {hidden_key(k): v for k, v in kwargs.items()}
        self._old_scope = None

    def get(self, attr: Optional[dict]) -> dict:
        """The scope's attributes updated with `attr`."""
        merged = dict(self._attr)
        if attr:
            merged.update({hidden_key(k): v for k, v in attr.items()})
        return merged

    def __enter__(self):
        self._old_scope = current_attr_scope()
        merged = AttrScope()
        merged._attr = dict(self._old_scope._attr)
        merged._attr.update(self._attr)
        AttrScope._current.value = merged
        return self

    def __exit__(self, *exc):
        AttrScope._current.value = self._old_scope


def current_attr_scope() -> AttrScope:
    scope = getattr(AttrScope._current, "value", None)
    if scope is None:
        scope = AttrScope()
        AttrScope._current.value = scope
    return scope
