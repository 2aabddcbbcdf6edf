"""Undo by what changed: a journal of a game's changes, kept while a change may yet be undone.

A game's containers are :class:`TrackedDict`, :class:`TrackedSet` and :class:`TrackedList`
(plain ``dict``, ``set`` and ``list`` underneath: read, compared and written to JSON as
those), and its objects are :class:`Recorded`: each change to them notes in their
:class:`Journal`, while a savepoint is open, what undoes it. Undoing replays those notes
backwards, so it costs what the change cost, never the size of the game. A new value put in
a tracked container or attribute is tracked itself (a copy is taken of a plain container),
so whatever the state holds stays tracked.

Order is kept exactly: an entry removed from a dict comes back where it was (when it was not
the newest, the dict's order is noted once, at C speed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

T = TypeVar("T")

Undo = tuple[Any, ...]
"""A note: a function and its arguments, called to undo one change."""

_ABSENT = object()


class Journal:
    """What undoes the changes since :meth:`begin` (``entries``: None while nothing is kept)."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[Undo] | None = None

    def begin(self) -> None:
        """Keep from now on what undoes each change (the changes kept before are kept)."""
        self.entries = []

    def end(self) -> None:
        """Keep the changes: stop noting them."""
        self.entries = None

    def rollback(self) -> None:
        """Undo every change since :meth:`begin`, newest first, and stop noting them."""
        entries, self.entries = self.entries, None
        for note in reversed(entries or ()):
            note[0](*note[1:])

    @property
    def open(self) -> bool:
        """Whether changes are being noted."""
        return self.entries is not None

    def track(self, value: T) -> T:
        """``value`` as this journal's: a plain container copied into a tracked one (its
        contents too), a :class:`Recorded` object bound to the journal; anything else as it
        is."""
        return cast(T, self._track(value))

    def _track(self, value: Any) -> Any:
        kind = type(value)
        if kind is dict or (kind is TrackedDict and value._journal is not self):
            tracked_dict = TrackedDict()
            tracked_dict._journal = self
            track = self._track
            dict.update(tracked_dict, {key: track(item) for key, item in value.items()})
            return tracked_dict
        if kind is set or (kind is TrackedSet and value._journal is not self):
            tracked_set = TrackedSet(value)
            tracked_set._journal = self
            return tracked_set
        if kind is list or (kind is TrackedList and value._journal is not self):
            tracked_list = TrackedList(self._track(item) for item in value)
            tracked_list._journal = self
            return tracked_list
        if isinstance(value, Recorded) and value._journal is not self:
            object.__setattr__(value, "_journal", self)
        return value


def _tracked(journal: Journal, value: Any) -> Any:
    if isinstance(value, _TRACKABLE):
        return journal.track(value)
    return value


def _put_back_dict(target: dict[Any, Any], copy: dict[Any, Any]) -> None:
    dict.clear(target)
    dict.update(target, copy)


def _put_back_set(target: set[Any], copy: set[Any]) -> None:
    set.clear(target)
    set.update(target, copy)


def _put_back_list(target: list[Any], copy: list[Any]) -> None:
    list.__setitem__(target, slice(None), copy)


def _put_back_attribute(target: object, name: str, old: Any) -> None:
    if old is _ABSENT:
        object.__delattr__(target, name)
    else:
        object.__setattr__(target, name, old)


class TrackedDict(dict[Any, Any]):
    """A dict whose changes its journal notes while a savepoint is open."""

    __slots__ = ("_journal",)
    _journal: Journal

    def _note_removal(self, entries: list[Undo], key: Any) -> None:
        if next(reversed(self)) == key:  # the newest entry: put back, it is newest again
            entries.append((dict.__setitem__, self, key, dict.__getitem__(self, key)))
        else:
            entries.append((_put_back_dict, self, dict.copy(self)))

    def __setitem__(self, key: Any, value: Any) -> None:
        entries = self._journal.entries
        if entries is not None:
            if key in self:
                entries.append((dict.__setitem__, self, key, dict.__getitem__(self, key)))
            else:
                entries.append((dict.__delitem__, self, key))
        if isinstance(value, _TRACKABLE):
            value = self._journal.track(value)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        entries = self._journal.entries
        if entries is not None and key in self:
            self._note_removal(entries, key)
        dict.__delitem__(self, key)

    def pop(self, key: Any, *default: Any) -> Any:
        entries = self._journal.entries
        if entries is not None and key in self:
            self._note_removal(entries, key)
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[Any, Any]:
        entries = self._journal.entries
        if entries is not None and self:
            self._note_removal(entries, next(reversed(self)))
        return dict.popitem(self)

    def clear(self) -> None:
        entries = self._journal.entries
        if entries is not None and self:
            entries.append((_put_back_dict, self, dict.copy(self)))
        dict.clear(self)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)

    def update(self, *others: Any, **more: Any) -> None:
        for key, value in dict(*others, **more).items():
            self[key] = value

    def __ior__(self, other: Any) -> TrackedDict:  # type: ignore[misc]
        self.update(other)
        return self


class TrackedSet(set[Any]):
    """A set whose changes its journal notes while a savepoint is open."""

    __slots__ = ("_journal",)
    _journal: Journal

    def _note_all(self) -> None:
        entries = self._journal.entries
        if entries is not None:
            entries.append((_put_back_set, self, set.copy(self)))

    def add(self, item: Any) -> None:
        entries = self._journal.entries
        if entries is not None and item not in self:
            entries.append((set.discard, self, item))
        set.add(self, item)

    def discard(self, item: Any) -> None:
        entries = self._journal.entries
        if entries is not None and item in self:
            entries.append((set.add, self, item))
        set.discard(self, item)

    def remove(self, item: Any) -> None:
        entries = self._journal.entries
        if entries is not None and item in self:
            entries.append((set.add, self, item))
        set.remove(self, item)

    def pop(self) -> Any:
        item = set.pop(self)
        entries = self._journal.entries
        if entries is not None:
            entries.append((set.add, self, item))
        return item

    def clear(self) -> None:
        if self:
            self._note_all()
        set.clear(self)

    def update(self, *others: Iterable[Any]) -> None:
        self._note_all()
        set.update(self, *others)

    def difference_update(self, *others: Iterable[Any]) -> None:
        self._note_all()
        set.difference_update(self, *others)

    def intersection_update(self, *others: Iterable[Any]) -> None:
        self._note_all()
        set.intersection_update(self, *others)

    def symmetric_difference_update(self, other: Iterable[Any]) -> None:
        self._note_all()
        set.symmetric_difference_update(self, other)

    def __ior__(self, other: Any) -> TrackedSet:  # type: ignore[misc]
        self.update(other)
        return self

    def __iand__(self, other: Any) -> TrackedSet:  # type: ignore[misc]
        self.intersection_update(other)
        return self

    def __isub__(self, other: Any) -> TrackedSet:  # type: ignore[misc]
        self.difference_update(other)
        return self

    def __ixor__(self, other: Any) -> TrackedSet:  # type: ignore[misc]
        self.symmetric_difference_update(other)
        return self


def _whole(method: Callable[..., Any]) -> Callable[..., Any]:
    """A list's change noted as the list's whole contents before it (what an append is not)."""

    def changed(self: TrackedList, *args: Any, **kwargs: Any) -> Any:
        entries = self._journal.entries
        if entries is not None:
            entries.append((_put_back_list, self, list.copy(self)))
        if method is list.insert or (method is list.__setitem__ and type(args[0]) is int):
            args = (*args[:-1], _tracked(self._journal, args[-1]))
        elif method is list.__setitem__:
            args = (args[0], [_tracked(self._journal, item) for item in args[1]])
        return method(self, *args, **kwargs)

    changed.__name__ = method.__name__
    return changed


class TrackedList(list[Any]):
    """A list whose changes its journal notes while a savepoint is open: an append as
    itself, anything else as the list's contents before it."""

    __slots__ = ("_journal",)
    _journal: Journal

    def append(self, item: Any) -> None:
        entries = self._journal.entries
        if entries is not None:
            entries.append((list.pop, self))
        list.append(self, _tracked(self._journal, item))

    def extend(self, items: Iterable[Any]) -> None:
        for item in items:
            self.append(item)

    def __iadd__(self, items: Iterable[Any]) -> TrackedList:  # type: ignore[misc]
        self.extend(items)
        return self

    insert = _whole(list.insert)
    pop = _whole(list.pop)
    remove = _whole(list.remove)
    clear = _whole(list.clear)
    sort = _whole(list.sort)
    reverse = _whole(list.reverse)
    __setitem__ = _whole(list.__setitem__)
    __delitem__ = _whole(list.__delitem__)
    __imul__ = _whole(list.__imul__)


class Recorded:
    """An object whose attributes' changes its journal notes while a savepoint is open
    (attributes named with a leading underscore are its own business and not noted)."""

    _journal: Journal | None = None

    def __setattr__(self, name: str, value: Any) -> None:
        journal = self._journal
        if journal is not None and name[0] != "_":
            if isinstance(value, _TRACKABLE):
                value = journal.track(value)
            entries = journal.entries
            if entries is not None:
                entries.append((_put_back_attribute, self, name, self.__dict__.get(name, _ABSENT)))
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        journal = self._journal
        if journal is not None and journal.entries is not None and name in self.__dict__:
            journal.entries.append((_put_back_attribute, self, name, self.__dict__[name]))
        object.__delattr__(self, name)


_TRACKABLE = (dict, set, list, Recorded)
"""What :meth:`Journal.track` changes; anything else is kept as it is."""
