"""The use cases, each given what it uses and nothing more, built once from the parts the
composition root chose (`Deps`). The composition root (`licore_cli.compose`) builds them and
hands them, with the settings, to the HTTP adapter; an embedder calls `UseCases.of` itself."""

from __future__ import annotations

import attrs

from licore.services.announce import Announcer
from licore.services.audit import Audited, AuditTrail
from licore.services.builds import Copies
from licore.services.claims import Claims
from licore.services.dashboard import Dashboard
from licore.services.delivery import Delivery
from licore.services.deps import Deps
from licore.services.device import DeviceFlow, DeviceSettings
from licore.services.housekeeping import Housekeeping
from licore.services.idempotency import Idempotency, Joining
from licore.services.ids import Ids
from licore.services.images import NoImages, ProductImages
from licore.services.keys import Keys
from licore.services.library import Library
from licore.services.license_lifecycle import LicenseLifecycle
from licore.services.licensing import Licensing
from licore.services.operator import Operator
from licore.services.packages import Packages
from licore.services.partner import Partner
from licore.services.person import People
from licore.services.products import Products
from licore.services.runtime import Runtime, RuntimeLimits
from licore.services.signin import LocalAccounts, Sessions
from licore.services.usage import Usage
from licore.services.webhooks import Webhooks


@attrs.frozen
class UseCases:
    products: Products
    licensing: Licensing
    library: Library
    packages: Packages
    copies: Copies
    runtime: Runtime
    dashboard: Dashboard
    people: People
    operator: Operator
    device: DeviceFlow
    claims: Claims
    webhooks: Webhooks
    delivery: Delivery
    keys: Keys
    partner: Partner
    sessions: Sessions
    housekeeping: Housekeeping
    lifecycle: LicenseLifecycle  # licore's license shapes (docs/licenses.md)
    usage: Usage  # usage over time (docs/api.md, "Usage")
    images: ProductImages  # product images (docs/web.md)
    audit: AuditTrail  # the audit trail (docs/audit.md)

    @classmethod
    def of(cls, deps: Deps) -> UseCases:
        clock, settings = deps.clock, deps.settings
        # Every use case gets the joining storage: inside a call sent with an
        # Idempotency-Key its units of work are the call's one transaction. Over it, the
        # audited one: every change is told in its own unit of work (docs/audit.md).
        ids = Ids(clock, deps.random)
        storage = Audited(Joining(deps.storage), ids)
        trail = AuditTrail(storage)
        # The runtime and the buyers' copies get the storage itself: neither writes what the
        # trail tells (nonces, places, alerts, prepared copies), and no call that reaches
        # them carries an Idempotency-Key, so the two layers would only cost each call.
        copies = Copies(deps.storage, deps.vault, deps.models, deps.protector, deps.offload)
        announce = Announcer(clock, ids)
        keys = Keys(storage, clock, settings.partner_rate_limit)
        products = Products(storage, clock, ids, announce)
        licensing = Licensing(storage)
        library = Library(storage, deps.vault, copies, deps.models, deps.offload, clock)
        packages = Packages(storage, clock, ids, deps.models, deps.protector, deps.offload,
                            settings.max_upload_bytes, announce)
        runtime = Runtime(deps.storage, clock, ids, deps.vault, copies, deps.models,
                          deps.offload, announce,
                          RuntimeLimits(settings.runtime_key_rate_limit,
                                        settings.runtime_ip_rate_limit, settings.alert_window,
                                        settings.ipv6_prefix),
                          deps.once, deps.update_files, deps.compressor)
        webhooks = Webhooks(storage, clock, ids, deps.random, deps.vault, deps.webhooks,
                            announce)
        lifecycle = LicenseLifecycle(storage, clock, ids, announce, deps.random, deps.vault)
        claims = Claims(storage, clock, lifecycle, deps.platform, settings.claim_rate_limit)
        usage = Usage(storage)
        images = ProductImages(storage, clock, ids, deps.images or NoImages(), deps.offload)
        return cls(products, licensing, library, packages, copies, runtime,
                   Dashboard(storage, clock, products, licensing, packages, copies, webhooks,
                             keys, lifecycle, images),
                   People(storage, clock, library, announce, keys, deps.chat),
                   Operator(storage, clock, ids, deps.passwords),
                   DeviceFlow(storage, clock, deps.random, ids, DeviceSettings(
                       settings.public_url, settings.device_lifetime, settings.device_interval,
                       settings.device_code_rate_limit, settings.code_entry_rate_limit,
                       settings.ipv6_prefix)),
                   claims, webhooks,
                   Delivery(storage, clock, deps.random, deps.vault, deps.chat, deps.webhooks,
                            announce, settings.outbox),
                   keys,
                   Partner(keys, products, licensing, library, claims, packages, webhooks,
                           lifecycle, Idempotency(deps.storage, clock), usage, images,
                           trail),
                   Sessions(storage, clock, ids,
                            LocalAccounts(storage, deps.passwords, deps.offload),
                            settings.ipv6_prefix),
                   Housekeeping(storage, clock,
                                usage_retention_days=settings.usage_retention_days,
                                audit_retention_days=settings.audit_retention_days),
                   lifecycle, usage, images, trail)
