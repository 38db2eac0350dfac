"""Adapters for what leaves the service: the community-chat client (roles and account
linking) and the signed webhook sender (docs/events.md)."""

from adapters_events.chat import ChatClient, ChatConfig
from adapters_events.webhooks import SignedSender

__all__ = ["ChatClient", "ChatConfig", "SignedSender"]
