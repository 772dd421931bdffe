"""The Open Podcast API: `/auth/*`, `/api/v1/*` and the OpenAPI description."""
