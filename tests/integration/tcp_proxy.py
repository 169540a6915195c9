#!/usr/bin/env python3
"""A TCP forwarder that tests and benches kill to cut a link: tcp_proxy.py LISTEN_PORT TARGET_PORT.

Listens on 127.0.0.1:LISTEN_PORT (SO_REUSEADDR, so it can be started again on the same port at
once) and forwards every connection to 127.0.0.1:TARGET_PORT, bytes both ways. Prints
"listening PORT" once the port is bound (LISTEN_PORT 0: a free one). Killing it (SIGKILL) closes every forwarded connection and
the listener: the agent behind it is cut off from phalanxd until it is started again.
"""
import selectors
import socket
import sys


def main():
    listen_port, target_port = int(sys.argv[1]), int(sys.argv[2])
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", listen_port))
    srv.listen(16)
    srv.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(srv, selectors.EVENT_READ, None)
    print("listening", srv.getsockname()[1], flush=True)
    while True:
        for key, _ in sel.select():
            if key.data is None:
                client, _ = srv.accept()
                try:
                    upstream = socket.create_connection(("127.0.0.1", target_port), timeout=5)
                except OSError:
                    client.close()
                    continue
                upstream.setblocking(True)
                client.setblocking(True)
                sel.register(client, selectors.EVENT_READ, upstream)
                sel.register(upstream, selectors.EVENT_READ, client)
                continue
            src, dst = key.fileobj, key.data
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if data:
                try:
                    dst.sendall(data)
                    continue
                except OSError:
                    pass
            for s in (src, dst):
                try:
                    sel.unregister(s)
                except (KeyError, ValueError):
                    pass
                s.close()


if __name__ == "__main__":
    main()
