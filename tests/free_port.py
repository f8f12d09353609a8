"""A TCP port free on 127.0.0.1 now, for a server the caller starts next.

Picked below the kernel's ephemeral range: the ports that other processes
get for binding port 0, or for their outgoing connections, come from that
range, so none of them can take this one before its server binds it
(tests running beside each other do that all the time). Run as a script,
it prints one."""

import pathlib
import random
import socket


def ephemeral_low():
    """The lowest port of the kernel's ephemeral range."""
    try:
        return int(pathlib.Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(taken=()):
    """A free port below the ephemeral range, none of `taken`."""
    high = max(ephemeral_low(), 12000)
    for _ in range(500):
        port = random.randrange(10000, high)
        if port in taken:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port below the ephemeral range")


if __name__ == "__main__":
    print(free_port())
