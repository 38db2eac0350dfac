"""A small world for tests: an owner with a studio, a buyer, a client, and keys for both."""

from __future__ import annotations

import attrs

from licore.model import Account, ApiKey, Client, Studio
from licore.services.deps import Deps
from licore.services.wiring import UseCases


@attrs.frozen
class World:
    owner: Account
    buyer: Account
    studio: Studio
    client: Client
    studio_key: str
    library_key: str


ALL_STUDIO = (
    "packages:read packages:write products:read products:write licenses:read licenses:write")
ALL_LIBRARY = "library:read library:download"


async def obtain_key(deps: Deps, client: Client, scope: str, approver: Account,
                     studio_id: str | None) -> str:
    flow = UseCases.of(deps).device
    start = await flow.start(client.id, scope, "127.0.0.1")
    await flow.decide(approver.id, start.user_code, True, studio_id)
    token = await flow.poll(start.device_code, client.id)
    return token.access_token


async def build_world(deps: Deps, tag: str = "") -> World:
    operator = UseCases.of(deps).operator
    owner = await operator.add_account(f"owner{tag}", f"100{len(tag)}1", None)
    buyer = await operator.add_account(f"buyer{tag}", f"200{len(tag)}2", None)
    studio = await operator.add_studio(f"Studio {tag}".strip(), owner.username)
    client = await operator.add_client(f"Installer {tag}".strip(), "Installs things",
                                       f"{ALL_STUDIO} {ALL_LIBRARY}")
    studio_key = await obtain_key(deps, client, ALL_STUDIO, owner, studio.id)
    library_key = await obtain_key(deps, client, ALL_LIBRARY, buyer, None)
    return World(owner, buyer, studio, client, studio_key, library_key)


async def key_record(deps: Deps, plain: str) -> ApiKey:
    return await UseCases.of(deps).keys.identify(plain)
