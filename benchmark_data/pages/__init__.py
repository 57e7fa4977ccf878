"""The generated documentation pages of the settings, written from the frozen data.

`replay_settings` writes `docs/replay_settings.md`, `policy_settings`
writes `docs/policy_settings.md`; both figure through the audit engine and
share their command line (`doc_page`).
"""
