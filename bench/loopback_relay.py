#!/usr/bin/env python3
"""Carries TCP connections to 127.0.0.1:PORT across network namespaces through a unix socket, whose
path both namespaces see: how an MPI rank moved into a node's namespace (bench/netns_rank.sh) still
reaches mpirun's PMIx server, which listens on the loopback of the namespace mpirun runs in.

  loopback_relay.py unix-to-tcp PATH PORT   accept on the unix socket PATH, connect to 127.0.0.1:PORT
  loopback_relay.py tcp-to-unix PORT PATH   accept on 127.0.0.1:PORT, connect to the unix socket PATH

Each mode writes PATH.ready (unix-to-tcp) or PATH.ready-tcp (tcp-to-unix) once it listens, and runs
until killed.
"""
import os
import socket
import sys
import threading


def pump(source, sink):
    try:
        while True:
            data = source.recv(1 << 16)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    for sock in (sink, source):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(listener, connect, ready_file):
    listener.listen(16)
    with open(ready_file, "w"):
        pass
    while True:
        client, _ = listener.accept()
        try:
            upstream = connect()
        except OSError:
            client.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


def main(argv):
    if len(argv) != 4 or argv[1] not in ("unix-to-tcp", "tcp-to-unix"):
        sys.stderr.write(__doc__)
        return 2
    if argv[1] == "unix-to-tcp":
        path, port = argv[2], int(argv[3])
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.exists(path):
            os.unlink(path)
        listener.bind(path)
        serve(listener, lambda: socket.create_connection(("127.0.0.1", port)), path + ".ready")
    else:
        port, path = int(argv[2]), argv[3]
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))

        def connect():
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(path)
            return upstream

        serve(listener, connect, path + ".ready-tcp")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
