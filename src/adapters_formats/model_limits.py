"""The bounds on what one model file may decode to, the same in both formats
(docs/instances.md). Each keeps a reader's time and memory a small multiple of the file's
size whatever the file holds, and each is far above anything Roblox Studio writes."""

MIB = 1024 * 1024

# A class name, a property name, an XML attribute's value: Studio's are a few dozen bytes.
MAX_NAME_BYTES = 4096
# One property value (a script's source, a BinaryString such as terrain data); for XML, the
# text of one element, which for a BinaryString is its base64 form.
MAX_VALUE_BYTES = 32 * MIB
# Everything a file decodes to: a binary file's chunks inflated, an XML file's text and
# attribute values.
MAX_TOTAL_DECODED = 256 * MIB
