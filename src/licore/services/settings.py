"""The operator's settings the use cases and the HTTP adapter read (limits, lifetimes, the
public URL)."""

from __future__ import annotations

import attrs

from licore.events import Schedule


@attrs.frozen
class Settings:
    public_url: str = "http://127.0.0.1:8000"
    device_lifetime: int = 600
    device_interval: int = 5
    partner_rate_limit: int = 120  # a key, a minute
    device_code_rate_limit: int = 20  # an IP, a minute
    code_entry_rate_limit: int = 20  # wrong user-code entries, an IP, a minute
    runtime_key_rate_limit: int = 600
    runtime_ip_rate_limit: int = 1200
    # an IPv6 client is counted by its network of this many bits (licore.sources)
    ipv6_prefix: int = 64
    alert_window: int = 3600
    max_upload_bytes: int = 50 * 1024 * 1024
    claim_rate_limit: int = 10  # "I bought this" presses, a person, a minute
    usage_retention_days: int = 400  # the usage rollup's hours older than this are swept
    audit_retention_days: int = 365  # the audit trail's entries are kept this long; 0: always
    # retries of outgoing messages (docs/events.md)
    outbox: Schedule = attrs.field(factory=Schedule)
    # Updates as files (docs/runtime.md): where /update says a file is (a CDN's or another
    # origin's base URL, the name appended), else this server's own path for it; and the
    # proxy's internal location that serves the files' folder (X-Accel-Redirect), if any.
    update_files_url: str | None = None
    update_files_accel: str | None = None
