"""The single exception hostile or malformed model bytes raise."""


class ModelFormatError(Exception):
    """Model bytes were refused; `reason` says why in plain words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
