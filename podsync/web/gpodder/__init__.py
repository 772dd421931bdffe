"""The gpodder v2 API (`/api/2/*`) and the simple API (`/subscriptions/*`)."""
