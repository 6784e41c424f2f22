"""`mx.registry`: name tables for the classes users can extend and create by name.

MXNet builds `mx.init.register`, `mx.metric.create` and the like from four helpers, and user code
that keeps its own family of classes (losses, augmenters, schedulers) uses them the same way:

    register = mx.registry.get_register_func(MyBase, "thing")
    create = mx.registry.get_create_func(MyBase, "thing")

One table per base class, keyed by the lower-cased class name (or the name given). The
initializers and the metrics keep theirs here, so `get_registry(mx.init.Initializer)` lists
every initializer `mx.init.create` knows.
"""
from __future__ import annotations

import json
import warnings
from typing import Any, Callable, Optional

__all__ = ["get_registry", "get_register_func", "get_alias_func", "get_create_func"]

_TABLES: dict = {}


def table(base_class: type) -> dict:
    """The live name -> class table of `base_class` (created empty on first use)."""
    return _TABLES.setdefault(base_class, {})


def get_registry(base_class: type) -> dict:
    """A copy of the classes registered under `base_class`, by name."""
    return dict(table(base_class))


def get_register_func(base_class: type, nickname: str) -> Callable:
    """`register(klass, name=None)`: a class decorator filing `klass` (a subclass of
    `base_class`) under `name` or its class name, lower-cased. Re-using a name warns."""
    names = table(base_class)

    def register(klass: type, name: Optional[str] = None) -> type:
        if not (isinstance(klass, type) and issubclass(klass, base_class)):
            raise AssertionError("can only register a subclass of %s as a %s, got %r"
                                 % (base_class.__name__, nickname, klass))
        key = (klass.__name__ if name is None else name).lower()
        old = names.get(key)
        if old is not None:
            warnings.warn("%s %s.%s registered as %r is overriding the existing %s.%s"
                          % (nickname, klass.__module__, klass.__name__, key, old.__module__,
                             old.__name__), UserWarning, stacklevel=2)
        names[key] = klass
        return klass

    register.__doc__ = "Register a %s subclass under a name (see mx.registry)." % nickname
    return register


def get_alias_func(base_class: type, nickname: str) -> Callable:
    """`alias(*names)`: a class decorator registering the class under each of `names`."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases: str) -> Callable[[type], type]:
        def decorate(klass: type) -> type:
            for name in aliases:
                register(klass, name)
            return klass
        return decorate

    return alias


def get_create_func(base_class: type, nickname: str) -> Callable:
    """`create(spec, *args, **kwargs)`: an instance from a registered name and constructor
    arguments, a JSON text (`'["name", {kwargs}]'` or `'{"<nickname>": name, ...}'`), a dict
    of keyword arguments naming the class under `nickname`, or an instance (returned as is).
    The spec may also be passed as the keyword `nickname`."""
    names = table(base_class)

    def create(*args: Any, **kwargs: Any) -> Any:
        if args:
            spec, args = args[0], args[1:]
        elif nickname in kwargs:
            spec = kwargs.pop(nickname)
        else:
            raise TypeError("create() needs the %s: a name, a JSON text, a dict or an "
                            "instance" % nickname)
        if isinstance(spec, base_class):
            if args or kwargs:
                raise AssertionError("%r is already a %s; extra arguments %s %s are not "
                                     "allowed" % (spec, nickname, args, kwargs))
            return spec
        if isinstance(spec, dict):
            return create(**spec)
        if not isinstance(spec, str):
            raise AssertionError("the %s must be a name (str), got %r" % (nickname, spec))
        if spec.startswith("[") or spec.startswith("{"):
            if args or kwargs:
                raise AssertionError("the %s spec %r is complete; extra arguments are not "
                                     "allowed" % (nickname, spec))
            name, params = _parsed_spec(nickname, spec)
            return create(**params) if name is None else create(name, **params)
        klass = names.get(spec.lower())
        if klass is None:
            raise AssertionError("%s %r is not registered (known: %s); register it with "
                                 "%s.register first" % (nickname, spec.lower(),
                                                        ", ".join(sorted(names)), nickname))
        return klass(*args, **kwargs)

    create.__doc__ = "Create a %s from a name, a JSON text, a dict or an instance." % nickname
    return create


def _parsed_spec(nickname: str, spec: str) -> tuple:
    """(name, keyword arguments) of a JSON spec: '["name", {...}]', or '{...}' (whose
    keywords name the class under `nickname`; name None)."""
    try:
        parsed = json.loads(spec)
    except ValueError as err:
        raise ValueError("the %s spec %r is not valid JSON: %s" % (nickname, spec, err)) from None
    if isinstance(parsed, dict):
        return None, parsed
    if not (isinstance(parsed, list) and len(parsed) == 2 and isinstance(parsed[1], dict)):
        raise ValueError("the %s spec %r must be '[\"name\", {keyword arguments}]'"
                         % (nickname, spec))
    return parsed[0], parsed[1]
