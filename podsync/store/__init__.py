"""All SQL of podsync lives in this package.

Functions take an open connection (from `Database.read()` or `Database.write()`),
so the caller decides the transaction; they return dataclasses or plain values
and raise domain errors from `podsync.errors`. Nothing here knows HTTP or Click.
"""
