"""The one place podsync's services are built, from (config, engine): `core.py`
for what every API request path uses, `rare.py` for what only the web UI and
the CLI's commands use. The server and the CLI ask here; web/ and cli/ construct
no service themselves (tests/test_composition_root.py). Importing this package
loads neither module: an idle server never loads `rare.py`."""
