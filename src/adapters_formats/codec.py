"""The model codec port over both formats: read by content, write in the model's format."""

from __future__ import annotations

from adapters_formats.binary_reader import read_binary
from adapters_formats.binary_writer import write_binary
from adapters_formats.detect import ModelFormat, detect
from adapters_formats.xml_reader import read_xml
from adapters_formats.xml_writer import write_xml
from licore.builds.tree import Model


class RobloxModelCodec:
    def read(self, data: bytes) -> Model:
        if detect(data) is ModelFormat.BINARY:
            return read_binary(data)
        return read_xml(data)

    def write(self, model: Model) -> bytes:
        return write_binary(model) if model.format == "binary" else write_xml(model)
