"""Option and component types of interactions, and what Discord's client sends for an option
or a modal's input, refusing what it would never send (used by :mod:`.interactions`, which
re-exports the types)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .models import (
    Attachment,
    Channel,
    Member,
    Role,
    User,
)
from .world import Upload

OPTION_SUB_COMMAND = 1
OPTION_SUB_COMMAND_GROUP = 2
OPTION_STRING = 3
OPTION_INTEGER = 4
OPTION_BOOLEAN = 5
OPTION_USER = 6
OPTION_CHANNEL = 7
OPTION_ROLE = 8
OPTION_MENTIONABLE = 9
OPTION_NUMBER = 10
OPTION_ATTACHMENT = 11

COMPONENT_BUTTON = 2
COMPONENT_STRING_SELECT = 3
COMPONENT_TEXT_INPUT = 4
COMPONENT_USER_SELECT = 5
COMPONENT_ROLE_SELECT = 6
COMPONENT_MENTIONABLE_SELECT = 7
COMPONENT_CHANNEL_SELECT = 8
COMPONENT_LABEL = 18

BUTTON_STYLE_LINK = 5
BUTTON_STYLE_PREMIUM = 6


def infer_option_type(value: Any) -> int:
    """The option type for a Python value, when the command was not registered."""
    if isinstance(value, bool):
        return OPTION_BOOLEAN
    if isinstance(value, int):
        return OPTION_INTEGER
    if isinstance(value, float):
        return OPTION_NUMBER
    if isinstance(value, str):
        return OPTION_STRING
    if isinstance(value, User | Member):
        return OPTION_USER
    if isinstance(value, Channel):
        return OPTION_CHANNEL
    if isinstance(value, Role):
        return OPTION_ROLE
    if isinstance(value, Upload | Attachment):
        return OPTION_ATTACHMENT
    raise ValueError(
        f"cannot tell the option type of {value!r}; register the command or pass a model object"
    )


_SCALAR_OPTIONS = frozenset({OPTION_STRING, OPTION_INTEGER, OPTION_NUMBER, OPTION_BOOLEAN})


def _scalar_option(option_type: int, name: str, value: Any, spec: dict[str, Any]) -> Any:
    """The value a string, integer, number or boolean option sends; ValueError for a value
    Discord's client would not send."""
    if option_type == OPTION_STRING:
        converted = str(value)
        if "min_length" in spec and len(converted) < int(spec["min_length"]):
            raise ValueError(f"option {name!r} is shorter than {spec['min_length']}")
        if "max_length" in spec and len(converted) > int(spec["max_length"]):
            raise ValueError(f"option {name!r} is longer than {spec['max_length']}")
        return converted
    if option_type == OPTION_INTEGER:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"option {name!r} takes an integer, not {value!r}")
        return value
    if option_type == OPTION_NUMBER:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"option {name!r} takes a number, not {value!r}")
        return value
    if not isinstance(value, bool):
        raise ValueError(f"option {name!r} takes a boolean, not {value!r}")
    return value


def _check_choices_and_range(
    option_type: int, name: str, converted: Any, spec: dict[str, Any]
) -> None:
    """ValueError for a value outside the option's choices or its min and max."""
    choices = spec.get("choices")
    if choices and converted not in [choice.get("value") for choice in choices]:
        raise ValueError(
            f"option {name!r} must be one of {[c.get('value') for c in choices]}, not {converted!r}"
        )
    if option_type in (OPTION_INTEGER, OPTION_NUMBER):
        if "min_value" in spec and converted < spec["min_value"]:
            raise ValueError(f"option {name!r} is below {spec['min_value']}")
        if "max_value" in spec and converted > spec["max_value"]:
            raise ValueError(f"option {name!r} is above {spec['max_value']}")


def _modal_answer(
    component: dict[str, Any], values: Mapping[str, str | Sequence[str]], known: set[str]
) -> dict[str, Any] | None:
    """What a modal submission sends for one input (None for a component without a custom
    id); its custom id is added to ``known``."""
    custom_id = component.get("custom_id")
    component_type = int(component.get("type", 0))
    if custom_id is None:
        return None
    known.add(str(custom_id))
    if component_type == COMPONENT_TEXT_INPUT:
        return _text_input_answer(component, str(custom_id), values)
    chosen = values.get(str(custom_id), [])
    if isinstance(chosen, str):
        chosen = [chosen]
    return {
        "type": component_type,
        "id": component.get("id", 0),
        "custom_id": custom_id,
        "values": list(chosen),
    }


def _text_input_answer(
    component: dict[str, Any], custom_id: str, values: Mapping[str, str | Sequence[str]]
) -> dict[str, Any]:
    """What a modal submission sends for a text input; ValueError for a text its client
    would refuse."""
    text = values.get(custom_id, component.get("value") or "")
    if not isinstance(text, str):
        raise ValueError(f"text input {custom_id!r} takes a string")
    if component.get("required", True) and not text:
        raise ValueError(f"text input {custom_id!r} is required")
    if "max_length" in component and len(text) > int(component["max_length"]):
        raise ValueError(f"text input {custom_id!r} is longer than {component['max_length']}")
    if text and "min_length" in component and len(text) < int(component["min_length"]):
        raise ValueError(f"text input {custom_id!r} is shorter than {component['min_length']}")
    return {
        "type": int(component.get("type", 0)),
        "id": component.get("id", 0),
        "custom_id": component.get("custom_id"),
        "value": text,
    }
