"""The Nextcloud "GPodder Sync" API and Login Flow v2 (/index.php/...)."""
