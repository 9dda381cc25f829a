#!/usr/bin/env python3
"""Stands in for systemd-journald's native socket: receives the datagrams sd_journal_send writes
(KEY=VALUE lines; a value with a line break in the binary form, KEY\\n<le64 length><bytes>\\n) and
writes each entry to OUT as one JSON object per line, until it is killed.

    journal_sink.py SOCKET OUT
"""
import json
import os
import socket
import struct
import sys


def parse(datagram):
    entry, i = {}, 0
    while i < len(datagram):
        end = datagram.index(b"\n", i)
        line = datagram[i:end]
        if b"=" in line:
            key, value = line.split(b"=", 1)
            i = end + 1
        else:  # binary form
            key = line
            (length,) = struct.unpack("<Q", datagram[end + 1:end + 9])
            value = datagram[end + 9:end + 9 + length]
            i = end + 9 + length + 1
        entry[key.decode()] = value.decode(errors="replace")
    return entry


def main():
    path, out = sys.argv[1], sys.argv[2]
    sink = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sink.bind(path)
    os.chmod(path, 0o666)
    with open(out, "a", buffering=1) as entries:
        while True:
            datagram = sink.recv(1 << 20)
            entries.write(json.dumps(parse(datagram)) + "\n")


if __name__ == "__main__":
    main()
