"""Seals a checkpoint index as tessel-run writes it: the JSON object in FILE
loses its closing brace and gains `"index_crc32c": "XXXXXXXX"}` and a
newline, XXXXXXXX the CRC-32C (Castagnoli, computed here independently of
tessel-run) of every byte before its opening quote.

usage: seal_index.py FILE
"""
import sys


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


path = sys.argv[1]
with open(path, "rb") as f:
    text = f.read().rstrip()
assert text.endswith(b"}"), "not a JSON object"
body = text[:-1].rstrip()
body += b", " if not body.endswith(b"{") else b" "
body += b'"index_crc32c": '
with open(path, "wb") as f:
    f.write(body + b'"%08x"}\n' % crc32c(body))
