"""One schema for SQLite and PostgreSQL, written once with a few type macros.

Times are integer unix seconds, booleans are real booleans in PostgreSQL and 0/1 in SQLite,
ids are text that sort by creation time (byte order, hence `COLLATE "C"` in PostgreSQL).
Each migration is a list of statements applied in one transaction, at most once.

Rolling upgrades (docs/operators.md, "Upgrading and rolling back"): hosts of release N and of
N+1 serve one database while they are upgraded one by one, and N must keep serving it after
N+1 migrated it (and after a rollback). So a migration *expands* only: new tables, new
indexes, new columns that are nullable or have a default, rows inserted into a table it
creates, values set in a column it adds. What removes or changes what a release reads (a
DROP, a RENAME, a NOT NULL or type on an existing column, rows deleted or rewritten) is a
*contraction*: it lands at least one release after the last release that used what it
removes, and is listed in CONTRACTIONS with why that holds. Migrations from
EXPAND_ONLY_FROM on are held to this by tests/contract/test_migration_rule.py (the ones
before were released before the rule); `licore migrate --check` names each pending
migration's kind.
"""

from __future__ import annotations

MACROS = {
    "sqlite": {"id": "TEXT", "bool": "INTEGER", "blob": "BLOB", "bigint": "INTEGER"},
    "postgresql": {"id": 'TEXT COLLATE "C"', "bool": "BOOLEAN", "blob": "BYTEA",
                   "bigint": "BIGINT"},
}

MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE accounts (
            id {id} PRIMARY KEY,
            platform_id TEXT NOT NULL UNIQUE,
            username TEXT NOT NULL,
            username_key TEXT NOT NULL UNIQUE,
            password_digest TEXT,
            created_at {bigint} NOT NULL)""",
        """CREATE TABLE studios (
            id {id} PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            owner_account_id {id} NOT NULL REFERENCES accounts(id),
            place_limit INTEGER NOT NULL,
            created_at {bigint} NOT NULL)""",
        """CREATE TABLE memberships (
            studio_id {id} NOT NULL REFERENCES studios(id),
            account_id {id} NOT NULL REFERENCES accounts(id),
            manage_products {bool} NOT NULL,
            manage_licenses {bool} NOT NULL,
            PRIMARY KEY (studio_id, account_id))""",
        "CREATE INDEX memberships_account ON memberships(account_id)",
        """CREATE TABLE clients (
            id {id} PRIMARY KEY,
            name TEXT NOT NULL,
            description TEXT NOT NULL,
            scopes TEXT NOT NULL,
            disabled {bool} NOT NULL,
            created_at {bigint} NOT NULL)""",
        """CREATE TABLE device_authorizations (
            id {id} PRIMARY KEY,
            device_code_digest TEXT NOT NULL UNIQUE,
            user_code TEXT NOT NULL UNIQUE,
            client_id {id} NOT NULL REFERENCES clients(id),
            requested_scopes TEXT NOT NULL,
            state TEXT NOT NULL,
            created_at {bigint} NOT NULL,
            expires_at {bigint} NOT NULL,
            interval INTEGER NOT NULL,
            last_poll_at {bigint},
            granted_scopes TEXT NOT NULL,
            studio_id {id},
            account_id {id})""",
        """CREATE TABLE api_keys (
            id {id} PRIMARY KEY,
            digest TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            scopes TEXT NOT NULL,
            client_id {id} NOT NULL REFERENCES clients(id),
            account_id {id} NOT NULL REFERENCES accounts(id),
            studio_id {id} REFERENCES studios(id),
            created_at {bigint} NOT NULL,
            last_used_at {bigint} NOT NULL,
            revoked_at {bigint})""",
        "CREATE INDEX api_keys_studio ON api_keys(studio_id)",
        "CREATE INDEX api_keys_account ON api_keys(account_id)",
        """CREATE TABLE products (
            id {id} PRIMARY KEY,
            studio_id {id} NOT NULL REFERENCES studios(id),
            slug TEXT NOT NULL UNIQUE,
            title TEXT NOT NULL,
            tagline TEXT NOT NULL,
            description TEXT NOT NULL,
            price_credit INTEGER NOT NULL,
            discoverable {bool} NOT NULL,
            licensing_enabled {bool} NOT NULL,
            created_at {bigint} NOT NULL,
            updated_at {bigint} NOT NULL,
            current_version_id {id},
            current_version TEXT,
            placeholder TEXT NOT NULL,
            verify_scripts {bool} NOT NULL,
            unlock_data TEXT NOT NULL,
            protection TEXT NOT NULL)""",
        "CREATE INDEX products_studio ON products(studio_id, id)",
        """CREATE TABLE blobs (
            id {id} PRIMARY KEY,
            data {blob} NOT NULL)""",
        """CREATE TABLE versions (
            id {id} PRIMARY KEY,
            product_id {id} NOT NULL REFERENCES products(id),
            label TEXT NOT NULL,
            format TEXT NOT NULL,
            size_bytes {bigint} NOT NULL,
            sha256 TEXT NOT NULL,
            blob_id {id} NOT NULL REFERENCES blobs(id),
            published {bool} NOT NULL,
            created_at {bigint} NOT NULL,
            UNIQUE (product_id, label))""",
        """CREATE TABLE licenses (
            id {id} PRIMARY KEY,
            product_id {id} NOT NULL REFERENCES products(id),
            platform_id TEXT NOT NULL,
            source TEXT NOT NULL,
            state TEXT NOT NULL,
            verified_at {bigint} NOT NULL,
            created_at {bigint} NOT NULL,
            key_ciphertext {blob},
            key_digest TEXT UNIQUE,
            key_generation INTEGER NOT NULL,
            UNIQUE (product_id, platform_id))""",
        "CREATE INDEX licenses_owner ON licenses(platform_id, id)",
        """CREATE TABLE prepared_copies (
            version_id {id} NOT NULL REFERENCES versions(id),
            license_id {id} NOT NULL REFERENCES licenses(id),
            key_generation INTEGER NOT NULL,
            data {blob} NOT NULL,
            PRIMARY KEY (version_id, license_id))""",
        """CREATE TABLE alerts (
            id {id} PRIMARY KEY,
            studio_id {id} NOT NULL REFERENCES studios(id),
            kind TEXT NOT NULL,
            product_id {id} NOT NULL,
            license_id {id},
            platform_id TEXT,
            key_owner_platform_id TEXT,
            game_id TEXT,
            script_name TEXT,
            count INTEGER NOT NULL,
            first_seen_at {bigint} NOT NULL,
            last_seen_at {bigint} NOT NULL)""",
        "CREATE INDEX alerts_studio ON alerts(studio_id, id)",
        "CREATE INDEX alerts_dedupe ON alerts(kind, license_id, game_id, last_seen_at)",
        """CREATE TABLE blacklist (
            studio_id {id} NOT NULL REFERENCES studios(id),
            platform_id TEXT NOT NULL,
            created_at {bigint} NOT NULL,
            PRIMARY KEY (studio_id, platform_id))""",
        """CREATE TABLE nonces (
            license_id {id} NOT NULL,
            nonce TEXT NOT NULL,
            expires_at {bigint} NOT NULL,
            PRIMARY KEY (license_id, nonce))""",
        """CREATE TABLE license_places (
            license_id {id} NOT NULL,
            game_id TEXT NOT NULL,
            first_seen_at {bigint} NOT NULL,
            place_rank INTEGER NOT NULL,
            PRIMARY KEY (license_id, game_id))""",
        """CREATE TABLE rate_counters (
            bucket TEXT NOT NULL,
            window_start {bigint} NOT NULL,
            count INTEGER NOT NULL,
            PRIMARY KEY (bucket, window_start))""",
        """CREATE TABLE chat_role_outbox (
            id {id} PRIMARY KEY,
            license_id {id} NOT NULL,
            action TEXT NOT NULL,
            attempts INTEGER NOT NULL,
            next_attempt_at {bigint} NOT NULL,
            done_at {bigint})""",
    ],
    [
        """CREATE TABLE version_scripts (
            version_id {id} NOT NULL REFERENCES versions(id),
            position INTEGER NOT NULL,
            name TEXT NOT NULL,
            path TEXT NOT NULL,
            source {blob} NOT NULL,
            PRIMARY KEY (version_id, position))""",
        "CREATE INDEX version_scripts_name ON version_scripts(version_id, name)",
        "CREATE INDEX versions_product ON versions(product_id, id)",
        "CREATE INDEX prepared_copies_license ON prepared_copies(license_id)",
    ],
    [
        # A copy's /update nodes in each form, made once per copy (docs/instances.md).
        "ALTER TABLE prepared_copies ADD COLUMN nodes_compact {blob}",
        "ALTER TABLE prepared_copies ADD COLUMN nodes_tagged {blob}",
    ],
    [
        # Prepared copies are stored encrypted from now on (docs/operators.md); the cached
        # plaintext ones go (they are remade on the next download or /update).
        "DELETE FROM prepared_copies",
        # How many products each slug base has handed out, so a twin's slug is one insert.
        """CREATE TABLE slug_twins (
            base TEXT PRIMARY KEY,
            taken INTEGER NOT NULL)""",
        "INSERT INTO slug_twins (base, taken) SELECT slug, 1 FROM products",
    ],
    [
        # The platform game pass whose owners may claim the product (docs/platform.md).
        "ALTER TABLE products ADD COLUMN purchase_pass_id TEXT",
    ],
    [
        # One outbox for everything that leaves the service (docs/events.md); it replaces
        # the chat-role table that was never written.
        "DROP TABLE chat_role_outbox",
        """CREATE TABLE outbox (
            id {id} PRIMARY KEY,
            kind TEXT NOT NULL,
            topic TEXT NOT NULL,
            studio_id {id} NOT NULL,
            target TEXT NOT NULL,
            subject TEXT NOT NULL,
            payload TEXT NOT NULL,
            state TEXT NOT NULL,
            attempts INTEGER NOT NULL,
            next_attempt_at {bigint} NOT NULL,
            created_at {bigint} NOT NULL,
            last_error TEXT NOT NULL,
            last_status INTEGER,
            last_duration_ms INTEGER,
            delivered_at {bigint},
            claimed_by TEXT,
            claimed_until {bigint})""",
        "CREATE INDEX outbox_due ON outbox(state, next_attempt_at)",
        "CREATE INDEX outbox_studio ON outbox(studio_id, kind, id)",
        """CREATE TABLE webhook_endpoints (
            id {id} PRIMARY KEY,
            studio_id {id} NOT NULL REFERENCES studios(id),
            url TEXT NOT NULL,
            topics TEXT NOT NULL,
            secret_ciphertext {blob} NOT NULL,
            created_at {bigint} NOT NULL,
            previous_ciphertext {blob},
            previous_until {bigint},
            failing_since {bigint},
            disabled_at {bigint},
            disabled_reason TEXT NOT NULL)""",
        "CREATE INDEX webhook_endpoints_studio ON webhook_endpoints(studio_id, id)",
        """CREATE TABLE chat_roles (
            product_id {id} NOT NULL REFERENCES products(id),
            guild_id TEXT NOT NULL,
            role_id TEXT NOT NULL,
            PRIMARY KEY (product_id, guild_id, role_id))""",
        """CREATE TABLE chat_links (
            platform_id TEXT PRIMARY KEY,
            chat_user_id TEXT NOT NULL,
            linked_at {bigint} NOT NULL)""",
    ],
    [
        # Lanes (licore.lanes, docs/events.md): one message in flight per destination, in
        # order; a breaker per lane, stored only while it is not the default (closed, no
        # failures).
        "ALTER TABLE outbox ADD COLUMN lane TEXT NOT NULL DEFAULT ''",
        """UPDATE outbox SET lane = CASE kind WHEN 'fan_out' THEN 'fan:' || id
            WHEN 'chat_role' THEN 'chat:' || target ELSE 'hook:' || target END""",
        "CREATE INDEX outbox_lane ON outbox(lane, state, id)",
        """CREATE TABLE outbox_lanes (
            lane TEXT PRIMARY KEY,
            state TEXT NOT NULL,
            failures INTEGER NOT NULL,
            opened INTEGER NOT NULL,
            open_until {bigint} NOT NULL)""",
    ],
    [
        # Facts about the install itself; first among them the fingerprint of the
        # key-encryption key every sealed key was made with (licore_cli.kek).
        """CREATE TABLE server_facts (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL)""",
        # when the operator disabled the account (`licore account disable`), else NULL
        "ALTER TABLE accounts ADD COLUMN disabled_at {bigint}",
        # Products never given rules (`{}`, the old default) are protected like new ones
        # (licore.protection.DEFAULT_RULES_JSON as it was written then; braces doubled for
        # the macros), and their cached copies, made unprotected, go.
        "DELETE FROM prepared_copies WHERE version_id IN (SELECT v.id FROM versions v "
        "JOIN products p ON p.id = v.product_id WHERE p.protection = '{{}}')",
        "UPDATE products SET protection = "
        "'{{\"rules\":[{{\"paths\":[\"*\"],\"preset\":\"light\"}}]}}' "
        "WHERE protection = '{{}}'",
    ],
    [
        # Licenses a seller can shape (docs/licenses.md): expiry, tiers, transfers, trials,
        # per-product place limits. `expiry_told` and `reminder_told` hold the `expires_at`
        # an expiry (or reminder) event was written for, so the sweep writes each once and a
        # renewal re-arms it.
        "ALTER TABLE licenses ADD COLUMN expires_at {bigint}",
        "ALTER TABLE licenses ADD COLUMN tier TEXT",
        "ALTER TABLE licenses ADD COLUMN transferred_to TEXT",
        "ALTER TABLE licenses ADD COLUMN expiry_told {bigint}",
        "ALTER TABLE licenses ADD COLUMN reminder_told {bigint}",
        "CREATE INDEX licenses_expiry ON licenses(expires_at)",
        "ALTER TABLE products ADD COLUMN place_limit INTEGER",
        "ALTER TABLE products ADD COLUMN place_policy TEXT NOT NULL DEFAULT 'alert'",
        "ALTER TABLE products ADD COLUMN trial_days INTEGER",
        """CREATE TABLE product_tiers (
            product_id {id} NOT NULL REFERENCES products(id),
            name TEXT NOT NULL,
            unlock_data TEXT NOT NULL,
            PRIMARY KEY (product_id, name))""",
        """CREATE TABLE license_trials (
            product_id {id} NOT NULL REFERENCES products(id),
            platform_id TEXT NOT NULL,
            started_at {bigint} NOT NULL,
            PRIMARY KEY (product_id, platform_id))""",
    ],
    [
        # A product's reminder window: `license.expiring` this many days before a license's
        # end (NULL: no reminder). The sweep reads it beside the expiry index.
        "ALTER TABLE products ADD COLUMN reminder_days INTEGER",
    ],
    [
        # Idempotency keys (licore.services.idempotency, docs/api.md): a key per owner
        # (`studio:<id>`, `person:<id>`), claimed and answered in the transaction of the
        # call it guards; swept a day later.
        """CREATE TABLE idempotency_keys (
            owner TEXT NOT NULL,
            idem_key TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            created_at {bigint} NOT NULL,
            expires_at {bigint} NOT NULL,
            status INTEGER,
            media_type TEXT,
            body {blob},
            PRIMARY KEY (owner, idem_key))""",
        "CREATE INDEX idempotency_keys_expiry ON idempotency_keys(expires_at)",
        # Where a license came from (a hub's receipt, game pass or subscription).
        "ALTER TABLE licenses ADD COLUMN purchase_id TEXT",
    ],
    [
        # Rate counters in shards (docs/runtime.md, "Several processes"): each server
        # process on PostgreSQL counts in a row of its own and reads the sum, so processes
        # never wait on one another's row. Counts so far move to shard 0.
        """CREATE TABLE rate_counters_sharded (
            bucket TEXT NOT NULL,
            window_start {bigint} NOT NULL,
            shard INTEGER NOT NULL,
            count INTEGER NOT NULL,
            CONSTRAINT rate_counters_shard_key PRIMARY KEY (bucket, window_start, shard))""",
        "INSERT INTO rate_counters_sharded (bucket, window_start, shard, count) "
        "SELECT bucket, window_start, 0, count FROM rate_counters",
        "DROP TABLE rate_counters",
        "ALTER TABLE rate_counters_sharded RENAME TO rate_counters",
    ],
    [
        # The store's product page links to the seller's hub place (docs/selling.md).
        "ALTER TABLE products ADD COLUMN hub_place_id TEXT",
    ],
    [
        # Usage over time (docs/api.md, "Usage"): runtime calls per product and hour, in
        # shards as the rate counters (each server process on PostgreSQL adds to rows of
        # its own; reads sum them), and the users and places seen each hour.
        """CREATE TABLE usage_calls (
            product_id {id} NOT NULL,
            hour {bigint} NOT NULL,
            endpoint TEXT NOT NULL,
            outcome TEXT NOT NULL,
            shard INTEGER NOT NULL,
            count {bigint} NOT NULL,
            PRIMARY KEY (product_id, hour, endpoint, outcome, shard))""",
        "CREATE INDEX usage_calls_hour ON usage_calls(hour)",
        """CREATE TABLE usage_users (
            product_id {id} NOT NULL,
            hour {bigint} NOT NULL,
            user_id TEXT NOT NULL,
            PRIMARY KEY (product_id, hour, user_id))""",
        "CREATE INDEX usage_users_hour ON usage_users(hour)",
        """CREATE TABLE usage_places (
            product_id {id} NOT NULL,
            hour {bigint} NOT NULL,
            game_id TEXT NOT NULL,
            PRIMARY KEY (product_id, hour, game_id))""",
        "CREATE INDEX usage_places_hour ON usage_places(hour)",
        # What happened to a product's licenses and downloads each hour, counted at the
        # change in its unit of work (`subject`: a download's version label).
        """CREATE TABLE usage_events (
            product_id {id} NOT NULL,
            hour {bigint} NOT NULL,
            kind TEXT NOT NULL,
            subject TEXT NOT NULL,
            count {bigint} NOT NULL,
            PRIMARY KEY (product_id, hour, kind, subject))""",
        "CREATE INDEX usage_events_hour ON usage_events(hour)",
    ],
    [
        # A version's `/update` nodes with the scripts' sources cut out, one per form
        # ("compact", "tagged"), made once and spliced with each buyer's sources
        # (licore.builds.template, docs/performance.md). No buyer's key is in it.
        """CREATE TABLE node_templates (
            version_id {id} NOT NULL REFERENCES versions(id) ON DELETE CASCADE,
            form TEXT NOT NULL,
            data {blob} NOT NULL,
            PRIMARY KEY (version_id, form))""",
    ],
    [
        # Product images (docs/web.md, "Product images"): the re-encoded file beside its
        # facts; served by its digest, so one digest is one product's image once.
        """CREATE TABLE product_images (
            id {id} PRIMARY KEY,
            product_id {id} NOT NULL REFERENCES products(id),
            position INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            content_type TEXT NOT NULL,
            width INTEGER NOT NULL,
            height INTEGER NOT NULL,
            size_bytes INTEGER NOT NULL,
            alt TEXT NOT NULL,
            created_at {bigint} NOT NULL,
            data {blob} NOT NULL,
            UNIQUE (product_id, sha256))""",
        "CREATE INDEX product_images_sha256 ON product_images(sha256)",
        "CREATE INDEX product_images_order ON product_images(product_id, position)",
    ],
    [
        # Release channels and withdrawn builds (licore.releases, docs/api.md): the beta
        # channel's build beside the live one, the channel a version was published to and
        # when it was withdrawn, and the channel a holder follows. Every build published
        # so far was published to stable.
        "ALTER TABLE products ADD COLUMN beta_version_id {id}",
        "ALTER TABLE products ADD COLUMN beta_version TEXT",
        "ALTER TABLE versions ADD COLUMN channel TEXT NOT NULL DEFAULT 'stable'",
        "ALTER TABLE versions ADD COLUMN withdrawn_at {bigint}",
        "ALTER TABLE licenses ADD COLUMN channel TEXT NOT NULL DEFAULT 'stable'",
    ],
    [
        # The audit trail (docs/audit.md): one row a state change, read by studio newest
        # first (ids sort by time) and swept by age.
        """CREATE TABLE audit_entries (
            id {id} PRIMARY KEY,
            studio_id {id},
            at {bigint} NOT NULL,
            actor_kind TEXT NOT NULL,
            actor_id TEXT NOT NULL,
            key_id TEXT,
            request_id TEXT,
            action TEXT NOT NULL,
            subject_type TEXT NOT NULL,
            subject_id TEXT NOT NULL,
            changes TEXT NOT NULL)""",
        "CREATE INDEX audit_entries_studio ON audit_entries(studio_id, id)",
        "CREATE INDEX audit_entries_at ON audit_entries(at)",
    ],
    [
        # Every sale a grant was for (licore.licenses.purchase_key, docs/selling.md
        # "Refunds"), kept as long as the license: a receipt replayed after the seller
        # revoked its license never brings it back. Sales recorded so far are taken over.
        """CREATE TABLE license_purchases (
            product_id {id} NOT NULL,
            purchase_key TEXT NOT NULL,
            license_id {id} NOT NULL REFERENCES licenses(id) ON DELETE CASCADE,
            created_at {bigint} NOT NULL,
            PRIMARY KEY (product_id, purchase_key))""",
        "INSERT INTO license_purchases (product_id, purchase_key, license_id, created_at) "
        "SELECT product_id, 'id:' || purchase_id, id, created_at FROM licenses "
        "WHERE purchase_id IS NOT NULL",
        "INSERT INTO license_purchases (product_id, purchase_key, license_id, created_at) "
        "SELECT product_id, source || ':' || platform_id, id, created_at FROM licenses "
        "WHERE purchase_id IS NULL "
        "AND source IN ('developer_product', 'game_pass', 'subscription')",
    ],
    [
        # Updates as files (licore.update_files, docs/runtime.md): the file made of a kept
        # copy's nodes in one form, found by the copy (for /update) and by its name (to
        # remake it on a host that lacks it). Dropped with the copy.
        """CREATE TABLE update_files (
            version_id {id} NOT NULL,
            license_id {id} NOT NULL,
            form TEXT NOT NULL,
            key_generation INTEGER NOT NULL,
            name TEXT NOT NULL,
            text_sha256 TEXT NOT NULL,
            PRIMARY KEY (version_id, license_id, form))""",
        "CREATE INDEX update_files_name ON update_files(name)",
        "CREATE INDEX update_files_license ON update_files(license_id)",
    ],
    [
        # A product's grace (docs/licenses.md, "Grace"): days a license stays in force past
        # its end. NULL: none.
        "ALTER TABLE products ADD COLUMN grace_days INTEGER",
        # The `expires_at` whose start of grace was told (`license.expiring`, in grace).
        "ALTER TABLE licenses ADD COLUMN grace_told {bigint}",
    ],
    [
        # A product's plans (docs/licenses.md, "Plans"), in the seller's order.
        """CREATE TABLE product_plans (
            product_id {id} NOT NULL REFERENCES products(id),
            id TEXT NOT NULL,
            name TEXT NOT NULL,
            duration_days INTEGER,
            tier TEXT,
            position INTEGER NOT NULL,
            PRIMARY KEY (product_id, id))""",
    ],
    [
        # Licenses granted and looked up by a linked chat account (docs/licenses.md).
        "CREATE INDEX chat_links_chat_user ON chat_links(chat_user_id)",
    ],
]


def statements(dialect: str, migration: list[str]) -> list[str]:
    return [s.format(**MACROS[dialect]) for s in migration]


EXPAND_ONLY_FROM = 21  # the first migration held to the rule above
# migration number -> why no release still serving beside it reads what it removes
CONTRACTIONS: dict[int, str] = {}
