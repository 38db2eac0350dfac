"""One unit of work over one connection: every repository shares the connection's
transaction, which the storage adapter begins, commits or rolls back."""

from __future__ import annotations

from adapters_storage.sql.abuse import SqlAlerts, SqlBlacklist
from adapters_storage.sql.audit import SqlAuditLog
from adapters_storage.sql.catalog import (
    SqlLicenses,
    SqlPreparedCopies,
    SqlProducts,
    SqlVersions,
)
from adapters_storage.sql.common import Executor, row_source
from adapters_storage.sql.events import SqlHooks, SqlOutbox
from adapters_storage.sql.idempotency import SqlIdempotencyKeys
from adapters_storage.sql.images import SqlImages
from adapters_storage.sql.people import (
    SqlAccounts,
    SqlApiKeys,
    SqlClients,
    SqlDeviceAuthorizations,
    SqlStudios,
)
from adapters_storage.sql.runtime import SqlRateCounters, SqlRuntimeRecords
from adapters_storage.sql.usage import SqlUsage


class SqlUnitOfWork:
    def __init__(self, db: Executor, dialect: str = "sqlite") -> None:
        self.db = db
        self.accounts = SqlAccounts(db)
        self.studios = SqlStudios(db)
        self.clients = SqlClients(db, dialect)
        self.devices = SqlDeviceAuthorizations(db)
        self.api_keys = SqlApiKeys(db)
        self.products = SqlProducts(db, dialect)
        self.versions = SqlVersions(db)
        self.copies = SqlPreparedCopies(db)
        self.licenses = SqlLicenses(db, dialect)
        self.alerts = SqlAlerts(db)
        self.blacklist = SqlBlacklist(db)
        source = row_source(dialect)
        self.runtime = SqlRuntimeRecords(db, source)
        # Shard 0 for every process: the limits counted in a unit of work (sign-in, partner
        # calls) stay exact; only the runtime hot path counts in shards of its own.
        self.counters = SqlRateCounters(db, source, 0 if dialect == "postgresql" else None)
        self.outbox = SqlOutbox(db, dialect)
        self.hooks = SqlHooks(db)
        self.idempotency = SqlIdempotencyKeys(db)
        self.usage = SqlUsage(db, source)
        self.images = SqlImages(db, dialect)
        self.audit = SqlAuditLog(db)
