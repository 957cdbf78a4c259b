"""The local API's OpenAPI 3.1 document, generated from the commands' routes and request models."""

from __future__ import annotations

from typing import Any

from node.commands.catalog import COMMANDS

RESPONSES = {
    "200": {"description": "JSON result"},
    "400": {"description": "bad input; the error names the field"},
    "401": {"description": "missing or wrong bearer token"},
    "404": {"description": "no such thing"},
    "502": {"description": "a service the node depends on (the chain) did not answer"},
    "503": {"description": "the part serving this is off on this node"},
}


def openapi_document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    schemas: dict[str, Any] = {}
    for command in COMMANDS.values():
        route = command.route
        if route is None:
            continue
        operation: dict[str, Any] = {
            "summary": command.summary,
            "operationId": command.name.replace(".", "_"),
            "tags": [route.tag],
            "responses": RESPONSES,
        }
        params: list[dict[str, Any]] = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}} for name in route.path_fields
        ]
        schema = command.request.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        properties = {k: v for k, v in schema.get("properties", {}).items() if k not in route.path_fields}
        required = [k for k in schema.get("required", []) if k in properties]
        if properties and route.method == "POST":
            body = {**schema, "properties": properties, "required": required}
            if not required:
                body.pop("required")
            name = command.request.__name__
            schemas[name] = body
            ref = {"$ref": f"#/components/schemas/{name}"}
            operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": ref}}}
        else:
            params += [
                {"name": name, "in": "query", "required": name in required, "schema": prop}
                for name, prop in properties.items()
            ]
        if params:
            operation["parameters"] = params
        paths.setdefault(route.path, {})[route.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "bitterbot-node local API", "version": "1"},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": schemas,
        },
        "security": [{"bearer": []}],
        "paths": paths,
    }
