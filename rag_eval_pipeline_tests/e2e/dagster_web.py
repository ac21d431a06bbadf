"""The Dagster webserver's GraphQL API as the tests that start one read it (``dagster dev``,
``dagster-webserver``): one query, and the name of the loaded code location."""

from __future__ import annotations

import json
import urllib.request

from rag_eval_pipeline_tests.e2e.polling import wait_until


def graphql(base: str, query: str, variables: dict | None = None) -> dict:
    """The ``data`` of ``query`` (with ``variables``) posted to ``{base}/graphql``; AssertionError with the
    errors when the answer carries any."""
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    req = urllib.request.Request(f"{base}/graphql", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        out = json.loads(resp.read())
    if out.get("errors"):
        raise AssertionError(f"GraphQL errors: {out['errors']}")
    return out["data"]


def location_name(base: str) -> str:
    """The name of the first code location of the webserver at ``base`` that has loaded (waits up to 180 s)."""
    def loaded():
        data = graphql(base, "{ workspaceOrError { __typename ... on Workspace { locationEntries { name loadStatus "
                             "locationOrLoadError { __typename } } } } }")
        entries = data["workspaceOrError"].get("locationEntries") or []
        ok = [e["name"] for e in entries
              if e["loadStatus"] == "LOADED" and e["locationOrLoadError"]["__typename"] == "RepositoryLocation"]
        return ok[0] if ok else None

    return wait_until("the code location to load", loaded, timeout=180, interval=1.0)
