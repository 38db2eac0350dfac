"""The model codec port over both formats: read by content, write in the model's format."""

from __future__ import annotations

import attrs

from adapters_formats.binary_check import check_binary
from adapters_formats.binary_reader import read_binary
from adapters_formats.binary_sources import (
    Unusual,
    read_binary_sources,
    write_binary_sources,
)
from adapters_formats.binary_writer import write_binary
from adapters_formats.detect import ModelFormat, detect
from adapters_formats.xml_reader import read_xml
from adapters_formats.xml_sources import read_xml_sources, write_xml_sources
from adapters_formats.xml_writer import write_xml
from licore.builds.tree import (
    SCRIPT_CLASSES,
    CheckedModel,
    CheckedScript,
    Instance,
    Model,
    ScriptSource,
    Sources,
    set_source,
    source_of,
)


@attrs.define(eq=False)
class _WholeTree:
    """The fallback for a file the source-only readers do not handle: the full tree."""

    model: Model
    scripts: list[Instance]


def _checked(skeleton: Model) -> CheckedModel:
    instances = 0
    found = []
    for path, inst in skeleton.walk():
        instances += 1
        if inst.class_name in SCRIPT_CLASSES and "Source" in inst.properties:
            found.append(CheckedScript(path, inst.name, source_of(inst)))
    return CheckedModel(skeleton.format, instances, tuple(found))


class RobloxModelCodec:
    def read(self, data: bytes) -> Model:
        if detect(data) is ModelFormat.BINARY:
            return read_binary(data)
        return read_xml(data)

    def check(self, data: bytes) -> CheckedModel:
        if detect(data) is ModelFormat.BINARY:
            return check_binary(data)
        return _checked(read_xml(data, skeleton=True))

    def write(self, model: Model) -> bytes:
        return write_binary(model) if model.format == "binary" else write_xml(model)

    def read_sources(self, data: bytes) -> Sources:
        binary = detect(data) is ModelFormat.BINARY
        try:
            return read_binary_sources(data) if binary else read_xml_sources(data)
        except Unusual:
            model = self.read(data)
            found = list(model.scripts())
            return Sources(model.format, [ScriptSource(path, source_of(s)) for path, s in found],
                           _WholeTree(model, [s for _, s in found]))

    def write_sources(self, build: Sources) -> bytes:
        handle = build.handle
        if isinstance(handle, _WholeTree):
            for instance, script in zip(handle.scripts, build.scripts, strict=True):
                if script.source != source_of(instance):
                    set_source(instance, script.source)
            return self.write(handle.model)
        if build.format == "binary":
            return write_binary_sources(build)
        return write_xml_sources(build)
