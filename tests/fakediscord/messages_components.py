"""Discord's rules for a message's components that no schema states (see :mod:`.messages`,
which applies them): action rows, buttons, selects and their options, component ids, and the
IS_COMPONENTS_V2 layout."""

from __future__ import annotations

from typing import Any

from .errors import field_error, nest
from .models import walk_components

MAX_ACTION_ROWS = 5
MAX_ROW_BUTTONS = 5
MAX_CUSTOM_ID = 100
MAX_BUTTON_LABEL = 80
MAX_SELECT_OPTIONS = 25
MAX_SELECT_VALUES = 25
MAX_OPTION_TEXT = 100
MAX_PLACEHOLDER = 150
MAX_V2_COMPONENTS = 40

COMPONENT_ACTION_ROW = 1
COMPONENT_BUTTON = 2
COMPONENT_STRING_SELECT = 3
SELECT_TYPES = frozenset({3, 5, 6, 7, 8})
BUTTON_STYLE_LINK = 5
BUTTON_STYLE_PREMIUM = 6


def _length_error(limit: int, low: int = 0) -> dict[str, Any]:
    if low:
        return field_error("BASE_TYPE_BAD_LENGTH", f"Must be between {low} and {limit} in length.")
    return field_error("BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")


def _legacy_component_errors(components: list[dict[str, Any]]) -> dict[str, Any]:
    if len(components) > MAX_ACTION_ROWS:
        return nest(["components"], _length_error(MAX_ACTION_ROWS))
    errors: dict[str, Any] = {}
    ids = _IdRegister()
    for row_index, row in enumerate(components):
        if not isinstance(row, dict) or row.get("type") != COMPONENT_ACTION_ROW:
            errors[str(row_index)] = field_error(
                "UNION_TYPE_CHOICES", 'Value of field "type" must be one of (1,).'
            )
            continue
        row_errors = ids.component_id(row)
        if row_errors:
            errors[str(row_index)] = row_errors
        children = row.get("components") or []
        selects = [c for c in children if isinstance(c, dict) and c.get("type") in SELECT_TYPES]
        if not children or len(children) > MAX_ROW_BUTTONS:
            errors.setdefault(str(row_index), {})["components"] = _length_error(MAX_ROW_BUTTONS, 1)
            continue
        if selects and len(children) > 1:
            errors.setdefault(str(row_index), {})["components"] = field_error(
                "COMPONENT_LAYOUT_WIDTH_EXCEEDED",
                "The specified component exceeds the maximum width",
            )
            continue
        for child_index, child in enumerate(children):
            child_errors = _interactive_errors(child, ids)
            if child_errors:
                errors.setdefault(str(row_index), {}).setdefault("components", {})[
                    str(child_index)
                ] = child_errors
    return {"components": errors} if errors else {}


def _v2_component_errors(components: list[dict[str, Any]]) -> dict[str, Any]:
    every = walk_components(components)
    if len(every) > MAX_V2_COMPONENTS:
        return nest(
            ["components"],
            field_error(
                "COMPONENT_MAX_TOTAL_COMPONENTS_EXCEEDED",
                f"The maximum number of components is {MAX_V2_COMPONENTS}.",
            ),
        )
    ids = _IdRegister()
    for component in every:
        if component.get("type") in SELECT_TYPES | {COMPONENT_BUTTON}:
            child_errors = _interactive_errors(component, ids)
        else:
            child_errors = ids.component_id(component)
        if child_errors:
            # Discord names the place in the tree; a flat search keeps only the first fault.
            return {"components": child_errors}
    return {}


class _IdRegister:
    """The custom ids and component ids seen so far in one message (each must be unique)."""

    def __init__(self) -> None:
        self.custom_ids: set[str] = set()
        self.component_ids: set[int] = set()

    def component_id(self, component: dict[str, Any]) -> dict[str, Any]:
        """``{"id": error}`` when the component repeats an id given before, else ``{}``."""
        value = component.get("id")
        if not isinstance(value, int) or isinstance(value, bool) or not value:
            return {}
        if value in self.component_ids:
            return {
                "id": field_error("COMPONENT_ID_DUPLICATED", "Component id cannot be duplicated")
            }
        self.component_ids.add(value)
        return {}


def _interactive_errors(component: Any, ids: _IdRegister) -> dict[str, Any]:
    """The errors of one button or select (as a dict for its place in the tree)."""
    if not isinstance(component, dict):
        return field_error("DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType")
    kind = component.get("type")
    if kind not in SELECT_TYPES and kind != COMPONENT_BUTTON:
        return {
            "type": field_error(
                "COMPONENT_TYPE_INVALID",
                "Only buttons and select menus may be placed in an action row",
            )
        }
    one: dict[str, Any] = ids.component_id(component)
    if kind == COMPONENT_BUTTON:
        if _button_errors(component, one):
            return one
    else:
        _select_errors(component, one)
    _custom_id_errors(component, one, ids)
    return one


def _button_errors(component: dict[str, Any], one: dict[str, Any]) -> bool:
    """Add a button's own errors to ``one``; True for a link or premium button (no custom_id
    to check)."""
    custom_id = component.get("custom_id")
    style = component.get("style")
    label = component.get("label")
    if label is not None and len(str(label)) > MAX_BUTTON_LABEL:
        one["label"] = _length_error(MAX_BUTTON_LABEL)
    if style == BUTTON_STYLE_LINK:
        if not component.get("url"):
            one["url"] = field_error(
                "BUTTON_COMPONENT_URL_REQUIRED", "A link button requires a url"
            )
        if custom_id is not None:
            one["custom_id"] = field_error(
                "BUTTON_COMPONENT_CUSTOM_ID_FORBIDDEN", "A link button cannot have a custom_id"
            )
        return True
    if style == BUTTON_STYLE_PREMIUM:
        if not component.get("sku_id"):
            one["sku_id"] = field_error("BASE_TYPE_REQUIRED", "This field is required")
        for key in ("custom_id", "label", "url", "emoji"):
            if component.get(key) is not None:
                one[key] = field_error(
                    "BUTTON_COMPONENT_PREMIUM_FIELD_FORBIDDEN",
                    f"A premium button cannot have {key}",
                )
        return True
    if component.get("url") is not None:
        one["url"] = field_error(
            "BUTTON_COMPONENT_URL_FORBIDDEN", "Only link buttons can have a url"
        )
    return False


def _select_errors(component: dict[str, Any], one: dict[str, Any]) -> None:
    """Add a select's own errors to ``one``."""
    kind = component.get("type")
    placeholder = component.get("placeholder")
    if placeholder is not None and len(str(placeholder)) > MAX_PLACEHOLDER:
        one["placeholder"] = _length_error(MAX_PLACEHOLDER)
    low = component.get("min_values", 1)
    high = component.get("max_values", 1)
    if isinstance(low, int) and not 0 <= low <= MAX_SELECT_VALUES:
        one["min_values"] = field_error(
            "NUMBER_TYPE_MAX" if low > 0 else "NUMBER_TYPE_MIN",
            f"int value should be between 0 and {MAX_SELECT_VALUES}.",
        )
    if isinstance(high, int) and not 1 <= high <= MAX_SELECT_VALUES:
        one["max_values"] = field_error(
            "NUMBER_TYPE_MAX" if high > 1 else "NUMBER_TYPE_MIN",
            f"int value should be between 1 and {MAX_SELECT_VALUES}.",
        )
    elif isinstance(low, int) and isinstance(high, int) and low > high:
        one["min_values"] = field_error(
            "SELECT_COMPONENT_MIN_VALUES_TOO_LARGE",
            "min_values cannot be greater than max_values",
        )
    if kind == COMPONENT_STRING_SELECT:
        one.update(_option_errors(component.get("options"), high if isinstance(high, int) else 1))


def _custom_id_errors(component: dict[str, Any], one: dict[str, Any], ids: _IdRegister) -> None:
    """Add the errors of a button's or select's custom_id to ``one``, and register it."""
    custom_id = component.get("custom_id")
    if custom_id is None or custom_id == "":
        one["custom_id"] = field_error("BASE_TYPE_REQUIRED", "This field is required")
    elif len(str(custom_id)) > MAX_CUSTOM_ID:
        one["custom_id"] = _length_error(MAX_CUSTOM_ID, 1)
    elif str(custom_id) in ids.custom_ids:
        one["custom_id"] = field_error(
            "COMPONENT_CUSTOM_ID_DUPLICATED", "Component custom id cannot be duplicated"
        )
    if custom_id:
        ids.custom_ids.add(str(custom_id))


def _option_errors(options: Any, max_values: int) -> dict[str, Any]:
    if not isinstance(options, list) or not 1 <= len(options) <= MAX_SELECT_OPTIONS:
        return {"options": _length_error(MAX_SELECT_OPTIONS, 1)}
    errors: dict[str, Any] = {}
    values: set[str] = set()
    defaults = 0
    for index, option in enumerate(options):
        one: dict[str, Any] = {}
        if not isinstance(option, dict):
            errors[str(index)] = field_error(
                "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType"
            )
            continue
        for key in ("label", "value"):
            text = option.get(key)
            if text is None or not 1 <= len(str(text)) <= MAX_OPTION_TEXT:
                one[key] = _length_error(MAX_OPTION_TEXT, 1)
        description = option.get("description")
        if description is not None and len(str(description)) > MAX_OPTION_TEXT:
            one["description"] = _length_error(MAX_OPTION_TEXT)
        value = str(option.get("value"))
        if "value" not in one and value in values:
            one["value"] = field_error(
                "SELECT_COMPONENT_OPTION_VALUE_DUPLICATED", "Select option values must be unique"
            )
        values.add(value)
        defaults += bool(option.get("default"))
        if one:
            errors[str(index)] = one
    if errors:
        return {"options": errors}
    if defaults > max_values:
        return {
            "options": field_error(
                "SELECT_COMPONENT_TOO_MANY_DEFAULT_VALUES",
                "The number of default options exceeds max_values",
            )
        }
    return {}
