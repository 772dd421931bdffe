"""The HTTP side of podsync: app factory, middleware, handlers grouped by resource."""
