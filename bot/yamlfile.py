"""Reading a YAML file with one clear line for what is wrong with it.

PyYAML's safe loader keeps the last of two equal keys in a mapping and says
nothing, so a scenario with a city written twice, or a config with a key
written twice, would silently lose half of what it says. :class:`_StrictLoader`
is PyYAML's own safe loader with its mapping constructor extended (the
documented way to change how nodes are built) to refuse a duplicate key.

It is the ``CSafeLoader``: libyaml's parser, which the PyYAML wheel carries,
reads a 10,000-step scenario some nine times faster than PyYAML's pure-Python
one (``benchmarks/simulate_bench.py``); nodes are still built, and duplicates
still refused, by the same Python constructor. libyaml words its complaints
less precisely (``did not find expected ',' or '}'`` where PyYAML says
``expected ',' or '}', but got ':'``), so a file libyaml refuses is read once
more by the pure-Python loader, whose message is the one given.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from yaml.constructor import ConstructorError

_MERGE = "tag:yaml.org,2002:merge"


class YamlFileError(Exception):
    """The file cannot be read or is not valid YAML; the message names the line."""


class DuplicateKeyError(ConstructorError):
    """A mapping names the same key twice."""

    def __init__(self, key: object, first: yaml.Mark, again: yaml.Mark) -> None:
        super().__init__(None, None, f"duplicate key {key!r}", again)
        self.key = key
        self.first_line = first.line + 1
        self.line = again.line + 1


class _RefuseDuplicates(yaml.constructor.SafeConstructor):
    """The safe constructor, refusing a mapping that names a key twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[object, yaml.Mark] = {}
        for key_node, _ in node.value:
            # "<<" merges another mapping in; its keys may be overridden by design
            if key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:
                continue  # an unhashable key: the safe loader refuses it itself
            if first is not None:
                raise DuplicateKeyError(key, first, key_node.start_mark)
            seen[key] = key_node.start_mark
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


if TYPE_CHECKING:
    # the stubs declare CSafeLoader whether or not libyaml is there; both loaders read alike
    _FastSafeLoader = yaml.CSafeLoader
else:
    _FastSafeLoader = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader


class _StrictLoader(_RefuseDuplicates, _FastSafeLoader):
    """libyaml's safe loader (PyYAML's own where libyaml is missing), refusing duplicate keys."""


class _PureStrictLoader(_RefuseDuplicates, yaml.SafeLoader):
    """PyYAML's pure-Python safe loader, refusing duplicate keys: the one whose errors are shown."""


def _load(loader_class: Any, text: str) -> tuple[Any, yaml.Node | None]:
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None else None), node
    finally:
        loader.dispose()


def _parse(text: str) -> tuple[Any, yaml.Node | None]:
    # both loaders are safe loaders: no arbitrary Python objects are built
    try:
        return _load(_StrictLoader, text)
    except DuplicateKeyError:
        raise
    except yaml.YAMLError:
        return _load(_PureStrictLoader, text)  # its message says what it found instead


def parse_yaml_node(text: str) -> tuple[Any, yaml.Node | None]:
    """Parse YAML text with the safe loader, refusing duplicate keys: the document and its
    node tree (one parse; the nodes keep their line marks), None and None for an empty text.

    Raises:
        YamlFileError: ``duplicate key 'K' at line N (first at line M)`` or
            ``unparsable YAML at line N: problem``.
    """
    try:
        return _parse(text)
    except DuplicateKeyError as error:
        raise YamlFileError(
            f"duplicate key {error.key!r} at line {error.line} (first at line {error.first_line})"
        ) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise YamlFileError(f"unparsable YAML{where}: {problem}") from None


def parse_yaml(text: str) -> Any:
    """Parse YAML text with the safe loader, refusing duplicate keys.

    Raises:
        YamlFileError: ``duplicate key 'K' at line N (first at line M)`` or
            ``unparsable YAML at line N: problem``.
    """
    return parse_yaml_node(text)[0]


def read_yaml(path: Path) -> tuple[Any, yaml.Node | None]:
    """The parsed document and its node tree (see :func:`parse_yaml_node`).

    Raises:
        YamlFileError: ``cannot read ...``, ``duplicate key ...`` or
            ``unparsable YAML at line N: problem``.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise YamlFileError(f"cannot read {path}: there is no such file") from None
    except IsADirectoryError:
        raise YamlFileError(f"cannot read {path}: it is a folder, not a file") from None
    except PermissionError:
        raise YamlFileError(f"cannot read {path}: no permission to read it") from None
    except UnicodeDecodeError as error:
        raise YamlFileError(
            f"cannot read {path}: it is not UTF-8 text (byte {error.start})"
        ) from None
    except OSError as error:
        raise YamlFileError(f"cannot read {path}: {error.strerror or error}") from None
    return parse_yaml_node(text)
