"""The episode core every protocol, the web player and the import share: the typed
episode action (`store.episodes.EpisodeAction`) and the app's JSON object for it
(`items`), the actions a service writes itself (`actions`), the one write path with
its bounds and admission (`writes`, `bounds`), the pieces a pull is read and
rendered in (`pieces`) and the pruning of superseded actions (`history`). What is
the gpodder API's alone (its cursor, its pull's paging) is in services/gpodder/."""
