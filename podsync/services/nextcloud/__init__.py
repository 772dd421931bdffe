"""The Nextcloud "GPodder Sync" API's services: its `since` window over the gpodder
layer's store, and Login Flow v2.

The flows' lifetimes are here, not in login_flows.py: the hourly pruning
(services/retention.py) reads them without loading the API's services."""

FLOW_LIFETIME_S = 20 * 60  # Nextcloud's own
# Flows one address may start within THROTTLE_WINDOW_S (a phone retrying a few times,
# a household behind one address; not a script filling the table).
THROTTLE_WINDOW_S = 20 * 60
