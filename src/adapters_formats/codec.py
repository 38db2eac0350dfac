"""The model codec port over both formats: read by content, write in the model's format."""

from __future__ import annotations

from adapters_formats.binary_reader import read_binary
from adapters_formats.binary_writer import write_binary
from adapters_formats.detect import ModelFormat, detect
from licore.builds.errors import ModelFormatError
from licore.builds.tree import Model


class RobloxModelCodec:
    def read(self, data: bytes) -> Model:
        if detect(data) is ModelFormat.BINARY:
            return read_binary(data)
        raise ModelFormatError("XML model files are not readable yet")

    def write(self, model: Model) -> bytes:
        if model.format == "binary":
            return write_binary(model)
        raise ModelFormatError("XML model files are not writable yet")
