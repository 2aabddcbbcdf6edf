"""Discord's OpenAPI specification as the judge of every REST request the fake serves.

Discord publishes its HTTP API as an OpenAPI 3.1 document (JSON Schema
2020-12, ``$ref`` s into ``#/components/schemas``). The fake loads it once per
process (:func:`default_spec`) and checks each request before its handler
runs: the route and method must exist, path parameters (snowflakes, tokens),
query parameters (coerced from text by their schema type, then checked for
ranges and enums), the JSON body and a multipart body's ``payload_json`` must
satisfy the operation's schemas with every constraint. A refused request is
answered as Discord answers it: 400, code 50035 "Invalid Form Body" and the
``errors`` tree (:func:`errors_tree`). Responses are checked against the
operation's response schema for their status (:meth:`OpenApiSpec.check_response`).

Validation is ``jsonschema``'s (a well-kept implementation of 2020-12 with
``referencing`` for the ``$ref`` s); only the translation of its errors into
Discord's error codes and the choice of the failing branch of a ``oneOf`` are
written here, because no library knows Discord's error format. Validators are
compiled once per operation and cached.

Where the spec and Discord disagree, a narrow exception is made, each with
the reason (the documentation that contradicts the spec) in its constant:
permission sets may be strings of digits (:data:`PERMISSION_STRINGS`; the
spec's copy is patched in memory, never on disk) and a snowflake may be a
JSON number (:data:`SNOWFLAKE_INTEGERS`, in the ``type`` keyword).

The spec is found at ``$FAKEDISCORD_OPENAPI`` if set (an empty value or
``off`` switches the check off), else at ``<repo root>/../shared/discord-api/openapi.json``
(for a git worktree, also next to the main checkout). Without it the
hand-written rules of the fake still hold and :func:`spec_status` says why the
schema check was skipped.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema.validators
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from .spec_errors import Violation, _check, errors_tree
from .spec_files import SPEC_ENV, locate_spec, spec_candidates
from .spec_validator import (
    SPEC_URI,
    _Dispatch,
    _escape_pointer,
    _fast_branches,
    _local_ref,
    _pick_branch,
    _resolve_pointer,
    _snowflake_type,
)

__all__ = [
    "CheckResult",
    "ERROR_CODE_STRINGS",
    "OpenApiSpec",
    "Operation",
    "PERMISSION_FIELDS",
    "PERMISSION_STRINGS",
    "SNOWFLAKE_INTEGERS",
    "SPEC_ENV",
    "SPEC_URI",
    "Violation",
    "default_spec",
    "errors_tree",
    "locate_spec",
    "spec_candidates",
    "spec_status",
]


PERMISSION_FIELDS = frozenset({"allow", "deny", "permissions", "default_member_permissions"})
PERMISSION_STRINGS = (
    "The spec types permission sets (an overwrite's allow and deny, a role's permissions, a "
    "command's default_member_permissions) as integers; Discord documents them as 'a "
    "variable-length integer serialized into a string' (developers/topics/permissions.mdx) and "
    "takes them so: discord.py sends str(value) for role permissions, Edit Channel Permissions and "
    "edited overwrites. So such a field also takes a string of decimal digits (its bounds still "
    "hold for the integer form)."
)
"""Why a string of digits passes where the spec asks for a permission integer (the first quirk)."""

SNOWFLAKE_INTEGERS = (
    "The spec's SnowflakeType is a string of digits; Discord also takes a snowflake as a JSON "
    "number. Its docs say so for an attachment request's id ('snowflake or number', the n of "
    "files[n]: discord.py sends 0 for files[0]), and discord.py sends every id it puts in a body "
    "(parent_id, an overwrite's id, recipient_id, role and channel ids) as a number. So where a "
    "schema has format 'snowflake', a non-negative integer below 2**64 passes as well."
)
"""Why an integer passes where the spec asks for a snowflake string (the second quirk)."""

ERROR_CODE_STRINGS = (
    "The spec types the code of a field error (InnerErrors._errors[].code) as an integer; Discord "
    "answers string codes there ('BASE_TYPE_REQUIRED', 'BASE_TYPE_CHOICES': the examples of "
    "developers/reference.mdx, Error Messages). Only the fake's answers meet this schema, so the "
    "check of responses takes a string code too."
)
"""Why the fake's 50035 answers carry string codes although the spec says integer."""


# --- locating and loading -----------------------------------------------------------


@functools.cache
def default_spec() -> OpenApiSpec | None:
    """The process-wide spec (loaded on first use), or None when it is absent."""
    path, _ = locate_spec()
    return OpenApiSpec.load(path) if path is not None else None


def spec_status() -> str:
    """One line: which spec checks the fake's traffic, or why the schema check is skipped."""
    path, why = locate_spec()
    if path is None:
        return f"fakediscord: the OpenAPI schema check was skipped ({why}); the hand-written rules still hold"
    return f"fakediscord: REST traffic checked against {path}"


# --- violations and Discord's error tree ----------------------------------------------


_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_BOOLEAN_TEXT = {"true": True, "false": False, "1": True, "0": False}


@dataclass
class _Route:
    method: str
    template: str
    pattern: re.Pattern[str]
    literal_segments: int
    pointer: str


@dataclass
class Operation:
    """One method of one path of the spec, with its compiled validators."""

    method: str
    template: str
    operation_id: str
    path_params: dict[str, Any]
    query_params: dict[str, tuple[dict[str, Any], Any]]
    bodies: dict[str, Any]
    """``json`` / ``multipart`` → validator of the request body."""
    responses: dict[str, Any | None]
    """Status (``200``, ``4XX``) → validator of the body, or None when the answer has no body."""


@dataclass
class CheckResult:
    """What :meth:`OpenApiSpec.check_request` found."""

    operation: Operation | None
    violations: list[Violation] = field(default_factory=list)
    route_known: bool = True
    """False when no path of the spec matches (whatever the method)."""
    seconds: float = 0.0


def _accept_permission_strings(document: Any) -> list[str]:
    """Lets every permission-set property typed as an integer take a string of digits too."""
    patched: list[str] = []

    def visit(node: Any, pointer: str) -> None:
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict):
                for name, schema in properties.items():
                    if name not in PERMISSION_FIELDS or not isinstance(schema, dict):
                        continue
                    kinds = schema.get("type")
                    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
                    if "integer" in kinds and "string" not in kinds:
                        schema["type"] = [*kinds, "string"]
                        schema["pattern"] = "^[0-9]+$"
                        patched.append(f"{pointer}/properties/{_escape_pointer(name)}")
            for key, value in node.items():
                visit(value, f"{pointer}/{_escape_pointer(str(key))}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                visit(value, f"{pointer}/{index}")

    visit(document, "")
    return patched


_extend: Callable[..., Any] = jsonschema.validators.extend
"""``jsonschema.validators.extend``, which types-jsonschema leaves unannotated: it takes a
validator class and a mapping of keywords to their functions, and returns a validator class."""


class OpenApiSpec:
    """Discord's OpenAPI document, ready to check requests and responses."""

    def __init__(self, document: dict[str, Any], *, source: str = "<memory>") -> None:
        self.source = source
        self.document = copy.deepcopy(document)
        self.patched = _accept_permission_strings(self.document)
        inner = self.document.get("components", {}).get("schemas", {}).get("InnerErrors")
        if isinstance(inner, dict) and "_errors" in inner.get("properties", {}):
            inner["properties"]["_errors"]["items"] = {
                "type": "object",
                "properties": {
                    "code": {"type": ["integer", "string"]},
                    "message": {"type": "string"},
                },
                "required": ["code", "message"],
            }
            self.patched.append("/components/schemas/InnerErrors/properties/_errors/items")
        """JSON pointers of the permission fields that take strings too (:data:`PERMISSION_STRINGS`)."""
        resource = Resource.from_contents(self.document, default_specification=DRAFT202012)
        self._registry: Registry[Any] = Registry().with_resource(SPEC_URI, resource)
        self._validator_class = self._make_validator_class()
        self._routes: list[_Route] = []
        for template, item in self.document.get("paths", {}).items():
            regex = (
                "^"
                + _PLACEHOLDER.sub(
                    lambda m: f"(?P<{m.group(1)}>[^/]+)",
                    re.escape(template).replace(r"\{", "{").replace(r"\}", "}"),
                )
                + "$"
            )
            literal = sum(1 for segment in template.split("/") if segment and "{" not in segment)
            for method in item:
                if method == "parameters":
                    continue
                self._routes.append(
                    _Route(
                        method=method.upper(),
                        template=template,
                        pattern=re.compile(regex),
                        literal_segments=literal,
                        pointer=f"/paths/{_escape_pointer(template)}/{method}",
                    )
                )
        # A literal segment beats a placeholder (``/messages/pins`` before ``/messages/{message_id}``).
        self._routes.sort(key=lambda route: (-route.literal_segments, route.template.count("{")))
        self._by_head: dict[str, list[_Route]] = {}
        for route in self._routes:
            self._by_head.setdefault(route.template.split("/")[1], []).append(route)
        self._operations: dict[str, Operation] = {}
        self.checked = 0
        """Requests checked so far (by this process)."""
        self.seconds = 0.0
        """Time spent checking them."""
        self.responses_checked = 0
        """Answers checked so far."""
        self.response_seconds = 0.0
        """Time spent checking answers."""

    def _make_validator_class(self) -> Any:
        """Draft 2020-12 with two changes: the snowflake-integer quirk in ``type``, and a
        ``oneOf``/``anyOf`` whose branches are told apart by their ``type`` discriminator (or by
        null) goes straight to the one branch that can match: the same verdict, found without
        trying every branch (components are a oneOf of seven schemas, nested)."""
        base = jsonschema.Draft202012Validator
        dispatch_tables: dict[int, _Dispatch | None] = {}

        def pick(branches: list[Any], instance: Any) -> int | None:
            key = id(branches)
            if key not in dispatch_tables:
                dispatch_tables[key] = self._dispatch_table(branches)
            return _pick_branch(dispatch_tables[key], instance)

        return _extend(
            base,
            {
                "type": _snowflake_type(base.VALIDATORS["type"]),
                "oneOf": _fast_branches(base.VALIDATORS["oneOf"], pick),
                "anyOf": _fast_branches(base.VALIDATORS["anyOf"], pick),
                "$ref": _local_ref(base.VALIDATORS["$ref"], self.document),
            },
        )

    def _dispatch_table(self, branches: list[Any]) -> _Dispatch | None:
        """How to tell the branches apart: a nullable pair, or distinct ``type`` discriminators."""
        null_index: int | None = None
        others: list[tuple[int, list[Any] | None]] = []
        consts = [self._deref(raw) for raw in branches]
        if all(
            isinstance(branch, dict)
            and "const" in branch
            and set(branch) <= {"const", "title", "description"}
            for branch in consts
        ):
            constants = [branch["const"] for branch in consts]
            if all(
                isinstance(v, (int, str)) and not isinstance(v, bool) for v in constants
            ) and len(set(constants)) == len(constants):
                return _Dispatch(
                    {}, None, None, {value: index for index, value in enumerate(constants)}
                )
        for index, raw in enumerate(branches):
            branch = self._deref(raw)
            if not isinstance(branch, dict):
                return None
            if branch == {"type": "null"}:
                null_index = index
                continue
            discriminator = self._deref((branch.get("properties") or {}).get("type"))
            values: list[Any] | None = None
            if isinstance(discriminator, dict) and "type" in (branch.get("required") or []):
                if "const" in discriminator:
                    values = [discriminator["const"]]
                elif isinstance(discriminator.get("enum"), list):
                    values = list(discriminator["enum"])
            others.append((index, values))
        if null_index is not None and len(others) == 1:
            return _Dispatch({}, null_index, others[0][0], None)
        by_type: dict[Any, int] = {}
        for index, values in others:
            if values is None:
                return None
            for value in values:
                if value in by_type:
                    return None
                by_type[value] = index
        return _Dispatch(by_type, null_index, None, None)

    @classmethod
    def load(cls, path: Path) -> OpenApiSpec:
        """Reads the spec file."""
        with path.open(encoding="utf-8") as handle:
            return cls(json.load(handle), source=str(path))

    # routes ------------------------------------------------------------------------

    def find(self, method: str, path: str) -> tuple[Operation | None, dict[str, str], bool]:
        """The operation for a concrete path, its path parameters, and whether the path exists at all."""
        path_known = False
        for route in self._by_head.get(path.split("/", 2)[1] if path.count("/") else "", ()):
            match = route.pattern.match(path)
            if match is None:
                continue
            path_known = True
            if route.method == method.upper():
                return self._operation(route), match.groupdict(), True
        return None, {}, path_known

    def operations(self) -> Iterator[tuple[str, str]]:
        """Every (method, path template) of the spec."""
        for route in self._routes:
            yield route.method, route.template

    def _validator(self, pointer: str) -> Any:
        schema = {"$ref": f"{SPEC_URI}#{pointer}"}
        return self._validator_class(schema, registry=self._registry)

    def _operation(self, route: _Route) -> Operation:
        cached = self._operations.get(route.pointer)
        if cached is not None:
            return cached
        item_pointer = route.pointer.rsplit("/", 1)[0]
        item = _resolve_pointer(self.document, item_pointer)
        spec_op = item[route.method.lower()]
        path_params: dict[str, Any] = {}
        query_params: dict[str, tuple[dict[str, Any], Any]] = {}
        for owner_pointer, parameters in (
            (item_pointer, item.get("parameters") or []),
            (route.pointer, spec_op.get("parameters") or []),
        ):
            for index, parameter in enumerate(parameters):
                parameter = self._deref(parameter)
                schema_pointer = f"{owner_pointer}/parameters/{index}/schema"
                if parameter.get("in") == "path":
                    path_params[parameter["name"]] = self._validator(schema_pointer)
                elif parameter.get("in") == "query":
                    query_params[parameter["name"]] = (
                        self._deref(parameter.get("schema") or {}),
                        self._validator(schema_pointer),
                    )
        bodies: dict[str, Any] = {}
        request_body = spec_op.get("requestBody")
        if request_body is not None:
            for content_type, kind in (
                ("application/json", "json"),
                ("multipart/form-data", "multipart"),
            ):
                if content_type in (request_body.get("content") or {}):
                    bodies[kind] = self._validator(
                        f"{route.pointer}/requestBody/content/{_escape_pointer(content_type)}/schema"
                    )
        responses: dict[str, Any | None] = {}
        for status, answer in (spec_op.get("responses") or {}).items():
            resolved = self._deref(answer)
            content = resolved.get("content") or {}
            if "application/json" not in content:
                responses[status] = None
                continue
            if "$ref" in answer:
                schema_pointer = answer["$ref"].lstrip("#") + "/content/application~1json/schema"
            else:
                schema_pointer = (
                    f"{route.pointer}/responses/{status}/content/application~1json/schema"
                )
            responses[status] = self._validator(schema_pointer)
        operation = Operation(
            method=route.method,
            template=route.template,
            operation_id=str(spec_op.get("operationId") or ""),
            path_params=path_params,
            query_params=query_params,
            bodies=bodies,
            responses=responses,
        )
        self._operations[route.pointer] = operation
        return operation

    def _deref(self, node: Any) -> Any:
        while (
            isinstance(node, dict) and set(node) == {"$ref"} and str(node["$ref"]).startswith("#/")
        ):
            node = _resolve_pointer(self.document, node["$ref"][1:])
        return node

    # requests ----------------------------------------------------------------------

    def check_request(
        self,
        method: str,
        path: str,
        query: Mapping[str, str],
        body: Any,
        *,
        multipart: bool = False,
        part_names: Sequence[str] = (),
        found: tuple[Operation | None, dict[str, str], bool] | None = None,
    ) -> CheckResult:
        """Checks one request; ``body`` is the JSON body or a multipart body's ``payload_json``
        (``found`` is what :meth:`find` already said about the path)."""
        started = time.perf_counter()
        operation, params, path_known = found if found is not None else self.find(method, path)
        result = CheckResult(operation=operation, route_known=path_known)
        if operation is None:
            result.violations.append(
                Violation(
                    "route",
                    (),
                    "route",
                    "UNKNOWN_ROUTE",
                    f"{method.upper()} {path} is not in the spec",
                )
            )
        else:
            for name, validator in operation.path_params.items():
                if name in params:
                    result.violations.extend(_check(validator, params[name], "path", (name,)))
            for name, (schema, validator) in operation.query_params.items():
                if name not in query:
                    continue
                value, problem = _coerce_query(schema, query[name])
                if problem is not None:
                    result.violations.append(Violation("query", (name,), "type", *problem))
                    continue
                result.violations.extend(_check(validator, value, "query", (name,)))
            if body is not None or multipart:
                kind = "multipart" if multipart else "json"
                # An operation without a request body ignores one (Discord reads no body there).
                validator = operation.bodies.get(kind) or operation.bodies.get("json")
                if validator is not None:
                    instance = body
                    if multipart:
                        instance = (
                            dict(body) if isinstance(body, dict) else ({} if body is None else body)
                        )
                        if isinstance(instance, dict):
                            for name in part_names:
                                if name != "payload_json":
                                    instance.setdefault(name, "")
                    result.violations.extend(_check(validator, instance, "body", ()))
        result.seconds = time.perf_counter() - started
        self.checked += 1
        self.seconds += result.seconds
        return result

    # responses ---------------------------------------------------------------------

    def check_response(self, operation: Operation, status: int, body: Any) -> list[Violation]:
        """Checks an answer against the operation's documented response for its status."""
        started = time.perf_counter()
        try:
            return self._check_response(operation, status, body)
        finally:
            self.responses_checked += 1
            self.response_seconds += time.perf_counter() - started

    def _check_response(self, operation: Operation, status: int, body: Any) -> list[Violation]:
        key = str(status)
        if key not in operation.responses:
            key = f"{status // 100}XX"
        if key not in operation.responses:
            return [
                Violation(
                    "response",
                    (),
                    "status",
                    "UNDOCUMENTED_STATUS",
                    f"{operation.operation_id} documents {sorted(operation.responses)}, not {status}",
                )
            ]
        validator = operation.responses[key]
        if validator is None:
            if body is not None:
                return [
                    Violation(
                        "response",
                        (),
                        "content",
                        "UNEXPECTED_BODY",
                        f"{status} has no body in the spec",
                    )
                ]
            return []
        if body is None:
            return [
                Violation(
                    "response",
                    (),
                    "content",
                    "MISSING_BODY",
                    f"{status} has a JSON body in the spec",
                )
            ]
        return _check(validator, body, "response", ())


# --- jsonschema errors → Discord's ------------------------------------------------------


def _coerce_query(schema: dict[str, Any], raw: str) -> tuple[Any, tuple[str, str] | None]:
    """A query parameter's text as the type its schema asks for (Discord parses query strings so)."""
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else list(kind or [])
    if "integer" in kinds:
        if re.fullmatch(r"-?[0-9]+", raw):
            return int(raw), None
        return None, ("NUMBER_TYPE_COERCE", f'Value "{raw}" is not int.')
    if "number" in kinds:
        try:
            return float(raw), None
        except ValueError:
            return None, ("NUMBER_TYPE_COERCE", f'Value "{raw}" is not a valid number.')
    if "boolean" in kinds:
        parsed = _BOOLEAN_TEXT.get(raw.lower())
        if parsed is None:
            return None, ("BASE_TYPE_BOOLEAN", "Must be either true or false.")
        return parsed, None
    return raw, None
