"""Schema violations as Discord reports them: each broken rule of the OpenAPI spec translated to
Discord's error code and message, and the ``errors`` tree of a 400 50035 (used by
:mod:`.spec`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import jsonschema
import jsonschema.validators
from jsonschema import ValidationError


@dataclass(frozen=True)
class Violation:
    """One thing the spec refuses in a request (or a response).

    ``location`` is ``route``, ``path``, ``query``, ``body`` or ``response``;
    ``field`` the path to the offending value (names and list indices);
    ``rule`` the JSON Schema keyword that failed (``maxLength``, ``required``...);
    ``code`` and ``message`` what Discord says about it.
    """

    location: str
    field: tuple[str | int, ...]
    rule: str
    code: str
    message: str

    @property
    def dotted(self) -> str:
        """The field as ``embeds.0.title`` (``<root>`` for the whole body)."""
        return ".".join(str(part) for part in self.field) or "<root>"

    @property
    def pattern(self) -> str:
        """The field with list indices replaced by ``*``, for counting alike violations."""
        parts = [
            "*" if isinstance(part, int) or str(part).isdigit() else str(part)
            for part in self.field
        ]
        return ".".join(parts) or "<root>"

    def __str__(self) -> str:
        return f"{self.location} {self.dotted}: {self.rule} ({self.code}: {self.message})"


def errors_tree(violations: Iterable[Violation]) -> dict[str, Any]:
    """Discord's nested ``errors`` object for these violations."""
    tree: dict[str, Any] = {}
    for violation in violations:
        node = tree
        for part in violation.field:
            node = node.setdefault(str(part), {})
        node.setdefault("_errors", []).append(
            {"code": violation.code, "message": violation.message}
        )
    return tree


# --- the spec -------------------------------------------------------------------------


def _check(
    validator: Any, instance: Any, location: str, prefix: tuple[str | int, ...]
) -> list[Violation]:
    if validator.is_valid(instance):
        return []
    violations: list[Violation] = []
    for error in validator.iter_errors(instance):
        for leaf in _leaves(error):
            violations.append(_translate(leaf, location, prefix))
    unique: dict[tuple[Any, ...], Violation] = {}
    for violation in violations:
        unique.setdefault((violation.field, violation.rule, violation.message), violation)
    return list(unique.values())


def _leaves(error: ValidationError) -> list[ValidationError]:
    """The errors that say what is wrong, looking into the branch of a oneOf/anyOf that was meant."""
    if error.validator in ("oneOf", "anyOf") and error.context:
        branches: dict[Any, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        meant = [
            errors
            for errors in branches.values()
            if not any(_rules_out_branch(sub) for sub in errors)
        ]
        if not meant:
            return [error]
        # Of the branches left, the one meant is the one whose fields have the right types
        # (a choice with a string value is the string choice, whatever else is wrong with it).
        ranked = sorted(
            meant, key=lambda errors: (sum(_type_miss(sub) for sub in errors), len(errors))
        )
        if len(ranked) == 1 or (sum(map(_type_miss, ranked[0])), len(ranked[0])) < (
            sum(map(_type_miss, ranked[1])),
            len(ranked[1]),
        ):
            return [leaf for sub in ranked[0] for leaf in _leaves(sub)]
        best = jsonschema.exceptions.best_match([sub for errors in meant for sub in errors])
        return _leaves(best) if best is not None else [error]
    if error.validator == "allOf" and error.context:
        return [leaf for sub in error.context for leaf in _leaves(sub)]
    if error.validator == "$ref" and error.context:
        return [leaf for sub in error.context for leaf in _leaves(sub)]
    return [error]


def _type_miss(error: ValidationError) -> int:
    """1 when the error says a field (or the value) has the wrong type or value set."""
    return int(error.validator in ("type", "const", "enum") and len(error.relative_path) <= 1)


def _rules_out_branch(error: ValidationError) -> bool:
    """Whether an error inside a oneOf branch shows the value was never meant for that branch:
    the wrong JSON type (null vs object), or the wrong discriminator (``type``) value."""
    path = list(error.relative_path)
    if not path and error.validator in ("type", "const", "enum"):
        return True
    return path == ["type"] and error.validator in ("type", "const", "enum", "oneOf")


def _type_name(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)[:60] if not isinstance(value, str) else value[:60]


def _translate(error: ValidationError, location: str, prefix: tuple[str | int, ...]) -> Violation:
    field_path: tuple[str | int, ...] = prefix + tuple(error.absolute_path)
    rule = str(error.validator)
    value = error.validator_value
    instance = error.instance
    if rule == "required":
        names = value if isinstance(value, list) else []
        missing = [name for name in names if isinstance(instance, dict) and name not in instance]
        field_path = field_path + (missing[0] if missing else "",)
        code, message = "BASE_TYPE_REQUIRED", "This field is required"
    else:
        code, message = _rule_message(error, rule)
    return Violation(location, field_path, rule, code, message)


def _rule_message(error: ValidationError, rule: str) -> tuple[str, str]:
    """Discord's code and message for a broken schema rule (other than ``required``)."""
    value = error.validator_value
    schema = error.schema if isinstance(error.schema, dict) else {}
    instance = error.instance
    code, message = "BASE_TYPE_INVALID", error.message
    if rule in ("maxLength", "maxItems"):
        low = schema.get("minLength" if rule == "maxLength" else "minItems")
        code, message = _length_message(low, value)
    elif rule in ("minLength", "minItems"):
        high = schema.get("maxLength" if rule == "minLength" else "maxItems")
        if high is not None:
            code, message = _length_message(value, high)
        else:
            code, message = "BASE_TYPE_MIN_LENGTH", f"Must be {value} or more in length."
    elif rule == "maximum":
        code, message = "NUMBER_TYPE_MAX", f"int value should be less than or equal to {value}."
    elif rule == "minimum":
        code, message = "NUMBER_TYPE_MIN", f"int value should be greater than or equal to {value}."
    elif rule in ("enum", "const"):
        choices = value if rule == "enum" and isinstance(value, list) else [value]
        code, message = (
            "BASE_TYPE_CHOICES",
            f"Value must be one of ({', '.join(repr(c) for c in choices)}).",
        )
    elif rule == "pattern":
        if schema.get("format") == "snowflake":
            code, message = (
                "NUMBER_TYPE_COERCE",
                f'Value "{_type_name(instance)}" is not snowflake.',
            )
        else:
            code, message = "STRING_TYPE_REGEX", "String value did not match validation regex."
    elif rule == "type":
        code, message = _type_message(value, instance, schema)
    elif rule == "uniqueItems":
        code, message = "LIST_ITEM_VALUE_DUPLICATE", "Duplicate value in list."
    elif rule in ("oneOf", "anyOf"):
        code, message = _union_message(value, error)
    elif rule == "additionalProperties":
        code, message = "UNKNOWN_FIELD", error.message
    return code, message


def _union_message(value: Any, error: ValidationError) -> tuple[str, str]:
    """Code and message of a value matching none of a oneOf's or anyOf's branches."""
    consts = [
        branch.get("const") for branch in value if isinstance(branch, dict) and "const" in branch
    ]
    if consts and len(consts) == len(value):
        return (
            "BASE_TYPE_CHOICES",
            f"Value must be one of ({', '.join(repr(c) for c in consts)}).",
        )
    kinds = _discriminators(value, error)
    if kinds:
        return (
            "UNION_TYPE_CHOICES",
            f'Value of field "type" must be one of ({", ".join(kinds)}).',
        )
    return "UNION_TYPE_CHOICES", "Value did not match any of the allowed forms."


def _discriminators(branches: Any, error: ValidationError) -> list[str]:
    """The ``type`` values a oneOf of object schemas accepts, read from its branches' errors."""
    kinds: list[str] = []
    for sub in error.context or []:
        if list(sub.relative_path) == ["type"] and sub.validator in ("enum", "const"):
            value = sub.validator_value
            values = value if sub.validator == "enum" and isinstance(value, list) else [value]
            kinds.extend(str(v) for v in values if str(v) not in kinds)
    return kinds


def _length_message(low: Any, high: Any) -> tuple[str, str]:
    if low is not None and int(low) > 0:
        return "BASE_TYPE_BAD_LENGTH", f"Must be between {low} and {high} in length."
    return "BASE_TYPE_MAX_LENGTH", f"Must be {high} or fewer in length."


def _type_message(types: Any, instance: Any, schema: dict[str, Any]) -> tuple[str, str]:
    wanted = [types] if isinstance(types, str) else list(types)
    if schema.get("format") == "snowflake" or "snowflake" in str(schema.get("$ref", "")):
        return "NUMBER_TYPE_COERCE", f'Value "{_type_name(instance)}" is not snowflake.'
    if "integer" in wanted:
        return "NUMBER_TYPE_COERCE", f'Value "{_type_name(instance)}" is not int.'
    if "number" in wanted:
        return "NUMBER_TYPE_COERCE", f'Value "{_type_name(instance)}" is not a valid number.'
    if "boolean" in wanted:
        return "BASE_TYPE_BOOLEAN", "Must be either true or false."
    if "string" in wanted:
        return "BASE_TYPE_STRING", f'Could not interpret "{_type_name(instance)}" as string.'
    if "array" in wanted:
        return "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType"
    if "object" in wanted:
        return "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType"
    return "BASE_TYPE_INVALID", f"Must be of type {' or '.join(wanted)}."
