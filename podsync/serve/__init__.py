"""The process side of `podsync serve`: the listening sockets, signals, a reload,
and the fork of several workers. Above web/, which it runs."""
