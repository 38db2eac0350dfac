"""Roblox model files as an instance tree (pure core)."""
