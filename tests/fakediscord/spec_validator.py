"""The fake's JSON Schema validator for Discord's OpenAPI spec: Draft 2020-12 with snowflakes
as integers, branch dispatch on a ``type`` discriminator, and the spec's own ``$ref``
pointers resolved once (used by :mod:`.spec`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from jsonschema import ValidationError

SPEC_URI = "urn:discord-openapi"
"""The URI the spec is registered under, so that ``#/components/...`` refs resolve into it."""


@dataclass
class _Dispatch:
    by_type: dict[Any, int]
    null_index: int | None
    only_other: int | None
    """For ``[null, X]``: the index of X, where every value that is not null must go."""
    by_const: dict[Any, int] | None
    """For a oneOf of ``const`` s (Discord's enums): value → branch."""


def _escape_pointer(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _resolve_pointer(document: Any, pointer: str) -> Any:
    node = document
    for raw in pointer.lstrip("/").split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def _snowflake_type(original_type: Any) -> Any:
    """The ``type`` keyword, letting an integer stand for a snowflake string (as Discord does)."""

    def snowflake_type(
        validator: Any, types: Any, instance: Any, schema: Any
    ) -> Iterator[ValidationError]:
        if (
            isinstance(instance, int)
            and not isinstance(instance, bool)
            and schema.get("format") == "snowflake"
            and 0 <= instance < 2**64
        ):
            return
        yield from original_type(validator, types, instance, schema)

    return snowflake_type


def _pick_branch(table: _Dispatch | None, instance: Any) -> int | None:
    """The one branch that can match ``instance`` by the table (None: try them all)."""
    if table is None:
        return None
    if instance is None:
        return table.null_index
    if table.only_other is not None:
        return table.only_other
    if table.by_const is not None:
        if isinstance(instance, (int, str)) and not isinstance(instance, bool):
            return table.by_const.get(instance)
        return None
    if isinstance(instance, dict):
        discriminator = instance.get("type")
        if isinstance(discriminator, (int, str)) and not isinstance(discriminator, bool):
            return table.by_type.get(discriminator)
    return None


def _fast_branches(original: Any, pick: Callable[[list[Any], Any], int | None]) -> Any:
    """A ``oneOf``/``anyOf`` keyword that descends into the branch ``pick`` names, if any."""

    def keyword(
        validator: Any, branches: Any, instance: Any, schema: Any
    ) -> Iterator[ValidationError]:
        index = pick(branches, instance) if isinstance(branches, list) else None
        if index is None:
            yield from original(validator, branches, instance, schema)
            return
        yield from validator.descend(instance, branches[index], schema_path=index)

    return keyword


def _local_ref(original_ref: Any, document: Any) -> Any:
    """A ``$ref`` keyword resolving the spec's own pointers once each."""
    targets: dict[str, Any] = {}

    def local_ref(
        validator: Any, ref: Any, instance: Any, schema: Any
    ) -> Iterator[ValidationError]:
        # Every $ref of the spec points into the spec itself: resolve it once by its pointer
        # (referencing would walk the pointer again on every use).
        target = targets.get(ref)
        if target is None:
            pointer = ref[len(SPEC_URI) :] if ref.startswith(SPEC_URI) else ref
            if not pointer.startswith("#/"):
                yield from original_ref(validator, ref, instance, schema)
                return
            target = targets[ref] = _resolve_pointer(document, pointer[1:])
        yield from validator.descend(instance, target)

    return local_ref
