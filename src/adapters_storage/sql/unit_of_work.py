"""One unit of work over one connection: every repository shares the connection's
transaction, which the storage adapter begins, commits or rolls back.

A repository is made when the use case first asks for it: most units of work reach one to
three of them, and making all of them for each was work every unit of work paid."""

from __future__ import annotations

from functools import cached_property

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
        self.dialect = dialect

    @cached_property
    def accounts(self) -> SqlAccounts:
        return SqlAccounts(self.db)

    @cached_property
    def studios(self) -> SqlStudios:
        return SqlStudios(self.db)

    @cached_property
    def clients(self) -> SqlClients:
        return SqlClients(self.db, self.dialect)

    @cached_property
    def devices(self) -> SqlDeviceAuthorizations:
        return SqlDeviceAuthorizations(self.db)

    @cached_property
    def api_keys(self) -> SqlApiKeys:
        return SqlApiKeys(self.db)

    @cached_property
    def products(self) -> SqlProducts:
        return SqlProducts(self.db, self.dialect)

    @cached_property
    def versions(self) -> SqlVersions:
        return SqlVersions(self.db)

    @cached_property
    def copies(self) -> SqlPreparedCopies:
        return SqlPreparedCopies(self.db)

    @cached_property
    def licenses(self) -> SqlLicenses:
        return SqlLicenses(self.db, self.dialect)

    @cached_property
    def outbox(self) -> SqlOutbox:
        return SqlOutbox(self.db, self.dialect)

    @cached_property
    def hooks(self) -> SqlHooks:
        return SqlHooks(self.db)

    @cached_property
    def images(self) -> SqlImages:
        return SqlImages(self.db, self.dialect)

    @cached_property
    def audit(self) -> SqlAuditLog:
        return SqlAuditLog(self.db)

    @cached_property
    def abuse(self) -> SqlAbuse:
        return SqlAbuse(self.db)

    @cached_property
    def records(self) -> SqlRequestRecords:
        return SqlRequestRecords(self.db, self.dialect)


class SqlAbuse:
    """The alerts and the blacklist of one unit of work, each made when first asked for."""

    def __init__(self, db: Executor) -> None:
        self.db = db

    @cached_property
    def alerts(self) -> SqlAlerts:
        return SqlAlerts(self.db)

    @cached_property
    def blacklist(self) -> SqlBlacklist:
        return SqlBlacklist(self.db)


class SqlRequestRecords:
    """What requests leave behind, in one unit of work, each made when first asked for."""

    def __init__(self, db: Executor, dialect: str) -> None:
        self.db = db
        self.dialect = dialect

    @cached_property
    def runtime(self) -> SqlRuntimeRecords:
        return SqlRuntimeRecords(self.db, row_source(self.dialect))

    @cached_property
    def counters(self) -> SqlRateCounters:
        # Shard 0 for every process: the limits counted in a unit of work (sign-in, partner
        # calls) stay exact; only the runtime hot path counts in shards of its own.
        return SqlRateCounters(self.db, row_source(self.dialect),
                               0 if self.dialect == "postgresql" else None)

    @cached_property
    def idempotency(self) -> SqlIdempotencyKeys:
        return SqlIdempotencyKeys(self.db)

    @cached_property
    def usage(self) -> SqlUsage:
        return SqlUsage(self.db, row_source(self.dialect))
