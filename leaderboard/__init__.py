"""The audit engine (AUDIT_SPEC): metrics, reference rules, reports, HTML, publishing."""
