"""Issue 26, item 4: `/openapi.json` is generated from the route tables, so it documents
exactly the calls the app answers under `/v1`, `/auth` and `/runtime`, no more, no fewer."""

from __future__ import annotations

from starlette.routing import Mount, Route

from adapters_http.openapi import openapi_document
from adapters_http.runtime import RuntimeApp
from adapters_storage import MemoryStorage
from licore_cli.compose import app_of
from tests.support.fakes import make_deps


def served() -> set[tuple[str, str]]:
    """(method, path) of every call the app's Partner, device-flow and runtime mounts take."""
    app = app_of(make_deps(MemoryStorage()), only=("partner", "auth", "runtime"))
    calls: set[tuple[str, str]] = set()
    for mount in app.routes:
        if not isinstance(mount, Mount):
            continue
        if isinstance(mount.app, RuntimeApp):
            calls |= {("post", mount.path + path) for path in mount.app.endpoints}
            continue
        for route in mount.routes:
            assert isinstance(route, Route) and route.methods is not None
            calls |= {(m.lower(), mount.path + route.path) for m in route.methods
                      if m != "HEAD"}
    return calls


def test_the_document_describes_exactly_the_calls_the_app_answers() -> None:
    doc = openapi_document("http://127.0.0.1")
    documented = {(method, path) for path, ops in doc["paths"].items() for method in ops}
    assert documented == served()
    assert len(documented) == 54


def test_each_partner_call_names_the_scope_its_route_requires() -> None:
    from adapters_http.partner import ENDPOINTS, MOUNT

    doc = openapi_document("http://127.0.0.1")
    for e in ENDPOINTS:
        operation = doc["paths"][MOUNT + e.path][e.method.lower()]
        assert operation["security"] == [{"bearer": [e.scope]}]


def test_each_documented_json_body_names_the_fields_of_the_command_it_is_read_into() -> None:
    import attrs

    from adapters_http import device, partner, runtime

    docs = [e.doc for table in (partner.ENDPOINTS, device.ENDPOINTS, runtime.ENDPOINTS)
            for e in table]
    with_json_body = [doc for doc in docs if doc.body is not None
                      and "application/json" in doc.media]
    assert len(with_json_body) == 32
    for doc in with_json_body:
        assert doc.reads is not None and doc.body is not None, doc.operation_id
        fields = {f.name for f in attrs.fields(doc.reads)}
        assert set(doc.body["properties"]) == fields, doc.operation_id
        assert set(doc.body["required"]) <= fields, doc.operation_id
