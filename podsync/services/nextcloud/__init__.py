"""The Nextcloud "GPodder Sync" API's services: its `since` window over the gpodder
layer's store, and Login Flow v2."""
